"""Every built-in adapter probed: what each library's evaluator does with ties.

An adapter whose library is missing is skipped with how to install it, except the light ones
(the ``probe`` extra) under CI, where ``make test`` installs them: there a missing one fails. The
torch adapters (marker ``torch``) and those that compile for a minute in every process (marker
``jit``) run by ``make test-adapters`` only (the demo leaves the latter out of its evaluator
table, ``paper.evaluators`` of ``config/demo.yaml``). The libraries no extra installs run in ``make census``, each in its own
environment (:mod:`tieaudit.probe.census`).
"""

from __future__ import annotations

import os

import pytest

from tieaudit.probe import AdapterError, get_adapter, probe

# adapter -> (metric, the rule the probe finds); see docs/guide/probe.md
EXPECTED = {
    "numpy-stable": ("nDCG@10", "input_order"),
    "numpy-reversed-stable": ("nDCG@10", "reversed_input"),
    "numpy-reversed": ("nDCG@10", "unstable"),
    "numpy-quicksort": ("nDCG@10", "unstable"),
    "pandas-rank-first": ("HR@10", "input_order"),
    "pandas-rank-min": ("nDCG@10", "shared_first"),
    "pandas-rank-max": ("HR@10", "shared_last"),
    # every member of a tie group at the group's mean rank: mean_rank with one relevant item a
    # row, not with two in one group
    "pandas-rank-average": ("nDCG@10", "shared_mean"),
    "pandas-rank-dense": ("HR@10", "unknown"),
    "sklearn": ("nDCG@10", "expected"),
    "sklearn-ignore-ties": ("nDCG@10", "unstable"),
    "ranx": ("nDCG@10", "unstable"),
    "trec_eval": ("nDCG@10", "docno_desc"),
    "ir_measures": ("HR@10", "docno_desc"),
    "torchmetrics": ("nDCG@10", "expected"),
    "recbole": ("HR@10", "unstable"),
    "ir_measures-pytrec_eval": ("nDCG@10", "docno_desc"),
    "ir_measures-msmarco": ("MRR@10", "item_id"),
    "ir_measures-gdeval": ("nDCG@10", "docno_desc"),  # rounded to 5 decimals: compared to 5e-6
    "ir_measures-cwl_eval": ("P@10", "input_order"),
    "ir_measures-pyndeval": ("P@10", "item_id"),
    "ir_measures-trectools": ("P@10", "input_order"),
    # trectools 0.0.50: get_ndcg ranks the lines as loaded (load_run_from_dataframe keeps the
    # stored order; the other measures re-sort by score, then docid descending: docno_desc);
    # TrecRun(file) sorts by score, then docid ascending when it reads the run: item_id on the
    # crafted ids, not on the standard table's numeric-looking ones (see below)
    "trectools": ("nDCG@10", "scores_ignored"),
    "trectools-read_run": ("nDCG@10", "unknown"),
    "rankereval": ("nDCG@10", "input_order"),  # numpy 1.26 (it uses np.NaN)
    "implicit": ("nDCG@10", "heap_first_k"),  # a bounded heap of K, first K stored kept
    # probed in its census environment (RecTools 0.19.0): implicit's heap, K = 10, on nDCG, MRR,
    # P and Recall alike; its float32 factors cast the scores (the probe says so)
    "rectools": ("nDCG@10", "heap_first_k"),
    "replay": ("nDCG@10", "docno_desc"),
    "replay-polars": ("nDCG@10", "docno_desc"),
    "ogb": ("HR@10", "mean_rank"),
    # torch.topk (unstable), its values computed in float32: named at the single-precision tolerance
    "recsys_metrics": ("nDCG@10", "unstable"),
    "torcheval": ("HR@10", "optimistic"),  # counts the candidates scoring strictly higher
    "beir": ("HR@10", "input_order"),
    "sentence-transformers": ("nDCG@10", "item_id"),  # hits sorted by (-score, corpus_id)
    "keras-in_top_k": ("HR@10", "optimistic"),  # every tied item counts as inside the top k
    "lightfm": ("P@10", "shared_last"),  # every tied relevant item at the group's last place
    # a fresh uniform shuffle on every call (sort_by_scores: argsort of random uniforms, then a
    # stable top_k): its mean converges to expected
    "keras-rs": ("nDCG@10", "shuffled_per_call"),
    "tensorflow-ranking": ("nDCG@10", "shuffled_per_call"),
    # FactorizedTopK compares scores with tf.math.in_top_k (strictly higher ones counted);
    # with true_candidate_ids it matches the ids of tf.math.top_k, lower index first
    "tensorflow-recommenders": ("HR@10", "optimistic"),
    "tensorflow-recommenders-ids": ("HR@10", "input_order"),
    # LightGBM's CalDCGAtK and XGBoost's SortedIdx: stable sorts by score, descending
    "lightgbm": ("nDCG@10", "input_order"),
    "xgboost": ("nDCG@10", "input_order"),
    # CatBoost's CompareDocs: equal predictions ordered by target ascending, relevant last
    "catboost": ("nDCG@10", "pessimistic"),
}
# more measures of some adapters, where a library decides ties otherwise for them
MORE = [
    # BEIR 2.2.0's custom_metrics.mrr: the same stable sorted(..., reverse=True) as
    # top_k_accuracy; its mean rounded to 5 decimals, compared to within 5e-6
    ("beir", "MRR@10", "input_order"),
    ("trectools", "MRR@10", "docno_desc"),
    ("trectools-read_run", "MRR@10", "unknown"),
    ("catboost", "MRR@10", "pessimistic"),
    ("tensorflow-ranking", "HR@10", "shuffled_per_call"),
    # PrecisionAt divides by min(k, the row's length): values no order gives on rows shorter
    # than k (XGBoost's pre@k too)
    ("catboost", "P@10", "unknown"),
]
# the adapters whose library draws random numbers on every call
RANDOM = {"keras-rs", "tensorflow-ranking"}
TORCH = {"torchmetrics", "recbole"}
# numba compiles ranx's typed dictionaries in every process, cache or not (about a minute of CPU):
# make test-adapters probes them
JIT = {"ranx"}


def _need(name: str):
    adapter = get_adapter(name)
    if not adapter.available():
        if os.environ.get("CI") and adapter.extra == "probe":
            pytest.fail(f"{adapter.library} is missing under CI: make test installs it")
        pytest.skip(f"{adapter.library} is not installed: {adapter.install}")
    return adapter


def _params():
    for name, metric, rule in [(n, *v) for n, v in EXPECTED.items()] + MORE:
        marks = [pytest.mark.torch] if name in TORCH else []
        marks += [pytest.mark.jit] if name in JIT else []
        yield pytest.param(name, metric, rule, marks=marks,
                           id=name if EXPECTED[name][0] == metric else f"{name}-{metric}")  # fmt: skip


@pytest.mark.parametrize(("name", "metric", "rule"), list(_params()))
def test_adapter_rule(name: str, metric: str, rule: str) -> None:
    adapter = _need(name)
    res = probe(adapter.evaluator(metric), metric, name=name)
    assert res.rule == rule, res.evidence
    assert res.deterministic == (name not in RANDOM)
    assert res.invariant == (rule in ("optimistic", "pessimistic", "expected", "docno_desc",
                                      "item_id", "mean_rank", "shared_first", "shared_last",
                                      "unknown", "shared_mean"))  # fmt: skip


def test_the_demo_probes_every_light_adapter_but_the_jit_ones() -> None:
    """``paper.evaluators`` of config/demo.yaml: the numpy and pandas idioms and every adapter
    of the ``probe`` extra (which make installs), in registration order, but those that compile
    for a minute (``make demo`` stays short; ``make test-adapters`` probes them)."""
    from tests.conftest import demo_evaluators
    from tieaudit.probe import adapters

    light = [a.name for a in adapters() if a.extra == "probe" or a.module in ("numpy", "pandas")]
    assert demo_evaluators() == [n for n in light if n not in JIT]
    assert JIT and not JIT & set(demo_evaluators())


def test_every_adapter_has_an_expectation() -> None:
    from tieaudit.probe import adapters

    assert sorted(a.name for a in adapters()) == sorted(EXPECTED)


def test_adapters_import_their_library_only_when_asked() -> None:
    import subprocess
    import sys

    code = ("import sys, tieaudit.probe; "
            "libs = {a.module for a in tieaudit.probe.adapters()} - {'numpy', 'pandas'}; "
            "print(sorted(m for m in libs | {'torch', 'tensorflow'} if m in sys.modules))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_an_adapter_refuses_a_measure_it_does_not_compute() -> None:
    with pytest.raises(AdapterError, match="computes nDCG, not HR"):
        get_adapter("sklearn").evaluator("HR@10")


def test_the_gradient_boosting_and_tensorflow_adapters_refuse_what_they_do_not_compute(
) -> None:
    # checked before the library is looked for: runs where none of them is installed
    for name, metric, computed in [("lightgbm", "HR@10", "nDCG"), ("xgboost", "MRR@10", "nDCG, P"),
                                   ("tensorflow-recommenders", "nDCG@10", "HR"),
                                   ("keras-rs", "HR@10", "nDCG, MRR, P, Recall")]:  # fmt: skip
        with pytest.raises(AdapterError, match=f"computes {computed}, not "):
            get_adapter(name).evaluator(metric)


def test_every_adapters_decides_entries_name_a_module_and_a_function() -> None:
    import re

    from tieaudit.probe import adapters

    form = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
    for a in adapters():
        assert isinstance(a.decides, tuple), a.name
        for entry in a.decides:
            assert form.fullmatch(entry), (a.name, entry)
    named = {a.name for a in adapters() if a.decides}
    assert {"lightgbm", "xgboost", "catboost", "keras-rs", "tensorflow-ranking",
            "tensorflow-recommenders", "tensorflow-recommenders-ids"} <= named  # fmt: skip


def test_lists_pads_every_row_with_label_minus_one_and_its_smallest_score() -> None:
    import numpy as np
    import pandas as pd

    from tieaudit.probe.adapters._common import lists

    frame = pd.DataFrame({"row": ["b", "b", "a", "b"], "user_id": "u", "item_id": list("wxyz"),
                          "label": [0, 1, 1, 0], "score": [2.0, 1.0, 5.0, 3.0]})  # fmt: skip
    labels, scores = lists(frame)
    assert labels.dtype == np.float32
    assert labels.tolist() == [[0, 1, 0], [1, -1, -1]]  # rows in order of first appearance
    assert scores.tolist() == [[2.0, 1.0, 3.0], [5.0, 5.0, 5.0]]


def test_trectools_reading_a_run_file_orders_ties_by_the_ids_read_as_numbers() -> None:
    # pandas reads docids that look like numbers ("00069") as integers, back to text "69":
    # ties then follow the text of those numbers, not the ids written
    _need("trectools-read_run")
    res = probe(get_adapter("trectools-read_run").evaluator("nDCG@10"), "nDCG@10")
    assert res.evidence[0].startswith("every value of every run matches item_id"), res.evidence
    assert "on the standard tie-heavy table it differs from item_id" in res.evidence[1]


@pytest.mark.torch
def test_recbole_ndcg_says_why_it_cannot_run() -> None:
    import numpy as np

    _need("recbole")
    if hasattr(np, "float"):  # pragma: no cover - numpy before 1.24
        pytest.skip("numpy still has np.float")
    with pytest.raises(AdapterError, match="np.float"):
        get_adapter("recbole").evaluator("nDCG@10")


@pytest.mark.torch
def test_torchmetrics_hit_rate_is_unstable() -> None:
    _need("torchmetrics")
    res = probe(get_adapter("torchmetrics").evaluator("HR@10"), "HR@10")
    assert res.rule == "unstable" and res.deterministic
