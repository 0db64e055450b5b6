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

import numpy as np

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
    # probed in the census's torchmetrics environment: pytorch-ignite 0.5.5's rec_sys NDCG ranks
    # by torch.argsort(..., stable=True) (_get_ranked_items), its sums in float32
    "ignite": ("nDCG@10", "input_order"),
    "ignite-topk": ("HR@10", "unstable"),  # TopKCategoricalAccuracy: torch.topk
    # PyKEEN 1.11.1's Ranks.from_scores: realistic (the default) = the mean of the optimistic
    # (1 + strictly higher) and pessimistic (at least as high) ranks
    "pykeen": ("HR@10", "mean_rank"),
    "pykeen-optimistic": ("HR@10", "optimistic"),
    "pykeen-pessimistic": ("HR@10", "pessimistic"),
    # MTEB 2.26.24: nDCG, P, Recall and HR by pytrec_eval (float32, then docno descending)
    "mteb": ("nDCG@10", "docno_desc"),
    # scipy 1.17.1's _rankdata: a stable argsort of -s, then one rank per tie group (its mean,
    # first or last place; dense counts distinct higher scores); ordinal is the sort's own place
    "scipy-rankdata-average": ("nDCG@10", "shared_mean"),
    "scipy-rankdata-min": ("nDCG@10", "shared_first"),
    "scipy-rankdata-max": ("MRR@10", "shared_last"),
    "scipy-rankdata-dense": ("HR@10", "unknown"),
    "scipy-rankdata-ordinal": ("MRR@10", "input_order"),
    # Cornac 3.0.1's Recommender.rank: np.argpartition(s, -k), then np.argsort (quicksort) of
    # the k kept, reversed
    "cornac": ("nDCG@10", "unstable"),
    # RecPack 0.3.6's get_top_K_ranks: np.argpartition over a sparse row's stored entries only,
    # so a score of exactly 0 is never ranked
    "recpack": ("nDCG@10", "zero_unranked"),
    # LensKit 2025.8.1's ItemList.top_n(n): argtopn, np.argpartition(-s, n), then np.argsort
    "lenskit": ("nDCG@10", "unstable"),
    # recometrics 0.1.6.post13: U(-1e-12, 1e-12) noise from std::mt19937(seed + user) added to
    # each score, then std::partial_sort: ties follow the row's place and the column
    "recometrics": ("nDCG@10", "position_keyed"),
    # Microsoft Recommenders 1.2.1's get_top_k_items: a two-column sort_values (stable), head(k)
    "recommenders": ("nDCG@10", "input_order"),
    # LibRecommender 1.5.2's rank_recommendations: np.argpartition(s, -k), then np.argsort of
    # the k kept, reversed
    "libreco": ("P@10", "unstable"),
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
    ("ignite", "HR@10", "unstable"),  # rec_sys.HitRate: torch.topk
    # MTEB's own mrr: sorted by (score, doc id), reverse=True, on the float64 scores
    ("mteb", "MRR@10", "docno_desc"),
    # the first place of the relevant item's tie group: optimistic where only the best rank
    # counts, shared_first (told from it by two relevant items in one group) for nDCG
    ("scipy-rankdata-min", "HR@10", "optimistic"),
    ("recometrics", "HR@10", "position_keyed"),
    ("recpack", "MRR@10", "zero_unranked"),
    # trectools' nDCG through ir_measures: NaN where no relevant document is in the top k,
    # counted 0; its ranking is the stored order, as its P's
    ("ir_measures-trectools", "nDCG@10", "input_order"),
    ("catboost", "MRR@10", "pessimistic"),
    ("tensorflow-ranking", "HR@10", "shuffled_per_call"),
    # PrecisionAt divides by min(k, the row's length): values no order gives on rows shorter
    # than k (XGBoost's pre@k too)
    ("catboost", "P@10", "unknown"),
]
# the adapters whose library draws random numbers on every call
RANDOM = {"keras-rs", "tensorflow-ranking"}
TORCH = {"torchmetrics", "recbole", "ignite", "ignite-topk", "pykeen", "pykeen-optimistic",
         "pykeen-pessimistic", "mteb"}  # fmt: skip
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


@pytest.mark.parametrize(("name", "metric", "computes"), [
    # PyKEEN's MRR has no cutoff and TopKCategoricalAccuracy is a hit rate: neither is offered
    ("pykeen", "nDCG@10", "HR"), ("pykeen-pessimistic", "MRR@10", "HR"),
    ("ignite-topk", "nDCG@10", "HR"), ("ignite", "P@10", "nDCG, HR"),
    ("cornac", "MRR@10", "nDCG, HR, P, Recall"),  # Cornac's MRR has no cutoff
    ("recpack", "HR@10", "nDCG, MRR, P, Recall"),  # HitK counts the hits, several a row
    ("recommenders", "HR@10", "nDCG"),  # no hit rate in python_evaluation
    ("libreco", "MRR@10", "nDCG, P, Recall"),
    ("scipy-rankdata-dense", "P@10", "nDCG, HR, MRR"),
])  # fmt: skip
def test_adapters_refuse_the_measures_their_library_defines_otherwise(
    name: str, metric: str, computes: str
) -> None:
    with pytest.raises(AdapterError, match=f"computes {computes}, not {metric.split('@')[0]}"):
        get_adapter(name).evaluator(metric)


def _decides_params():
    from tieaudit.probe import adapters

    for a in adapters():
        if a.decides:
            yield pytest.param(a.name, marks=[pytest.mark.torch] if a.name in TORCH else [])


@pytest.mark.parametrize("name", list(_decides_params()))
def test_decides_resolves_to_a_function_of_the_installed_library(name: str) -> None:
    """Where the library is installed, every ``decides`` entry imports and names something
    callable (the census resolves them to file and line in each library's environment)."""
    import importlib

    adapter = _need(name)
    for entry in adapter.decides:
        module, _, qualname = entry.partition(":")
        obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        assert callable(obj), entry


def test_a_measure_from_relevant_ranks_covers_every_measure() -> None:
    """``at_ranks`` (the idiom adapters' measure from the ranks an idiom gives): MRR and the
    sum measures too, fractional ranks as given."""
    from tieaudit.probe.adapters._common import at_ranks
    from tieaudit.ties.measures import Measure

    assert at_ranks(Measure("MRR", 10), [4.0, 2.5], 2) == pytest.approx(1 / 2.5)
    assert at_ranks(Measure("MRR", 2), [3.0], 1) == 0.0
    assert at_ranks(Measure("HR", 3), [3.0, 7.0], 2) == 1.0
    assert at_ranks(Measure("P", 4), [1.0, 5.0], 2) == pytest.approx(0.25)
    assert at_ranks(Measure("Recall", 4), [1.0, 5.0], 2) == pytest.approx(0.5)
    assert at_ranks(Measure("nDCG", 10), [1.0], 2) == pytest.approx(1 / (1 + 1 / np.log2(3)))
