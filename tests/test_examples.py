"""The worked examples do what they say: the command-line examples of README.md and
docs/guide/command-line.md run on examples/candidates.csv and print what they show; examples/my_scorer.py breaks the ties its
docstring says it breaks, measured on the demo's generated data."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from tieaudit import evaluate
from tieaudit.analyses.audit import diagnostics
from tieaudit.cli import main
from tieaudit.sources.ingest import ingest
from tieaudit.sources.synthetic import generate
from tieaudit.pipeline.sampling import build_candidates, sample_rows
from tieaudit.scorers import get_scorer, score_candidates
from tieaudit.pipeline.split import leave_last_out

ROOT = Path(__file__).resolve().parents[1]


COMMAND_LINE = ROOT / "docs" / "guide" / "command-line.md"


def _readme_block(command: str, page: Path = COMMAND_LINE) -> list[str]:
    """The lines ``page`` shows under ``$ <command>`` (trailing spaces dropped)."""
    text = page.read_text(encoding="utf-8")
    m = re.search(re.escape(f"$ {command}") + r"\n(.*?)\n```", text, re.S)
    assert m, f"{page.name} has no example for {command!r}"
    return [line.rstrip() for line in m.group(1).splitlines()]


def test_readme_evaluate_example_is_current(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("evaluate examples/candidates.csv --metrics nDCG@10 HR@5 "
            "--rules input_order pessimistic expected hash:0 hash_mean")  # fmt: skip
    argv = args.split()
    argv[1] = str(ROOT / argv[1])
    assert main(argv) == 0
    shown = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    for page in (ROOT / "README.md", COMMAND_LINE):  # the README's one example, and the guide's
        assert shown == _readme_block(f"tieaudit {args}", page), page.name


def test_readme_audit_example_is_current(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["audit", str(ROOT / "examples/candidates.csv"), "--metrics", "nDCG@10", "HR@5",
            "--headline", "nDCG@10", "HR@5", "--out-dir", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0
    shown = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    block = _readme_block(
        "tieaudit audit examples/candidates.csv --metrics nDCG@10 HR@5 --headline nDCG@10 HR@5 "
        "--out-dir audit/"
    )
    assert shown == [line for line in block if not line.startswith("wrote ")]
    assert "`input_order` NOT invariant" in (tmp_path / "checklist.md").read_text()


def _demo_candidates(tmp_path: Path, name: str, spec: dict, n_rows: int) -> tuple:
    """History, item attributes and sampled candidates of one demo dataset, made as the
    pipeline makes them (generate, ingest, split, sample), at the demo's own settings."""
    syn = spec["synthetic"]
    paths = generate(syn["generator"], tmp_path / name, scale=syn["scale"], seed=syn["seed"],
                     **dict(syn.get("options") or {}))  # fmt: skip
    inter, attrs = tmp_path / f"{name}.interactions.parquet", tmp_path / f"{name}.attrs.parquet"
    ingest(spec["source"], paths, inter, attrs, **dict(spec.get("options") or {}))
    interactions, attributes = pd.read_parquet(inter), pd.read_parquet(attrs)
    if spec.get("attributed_items_only"):
        interactions = interactions[interactions["item_id"].isin(attributes["item_id"])]
    split = leave_last_out(interactions)
    catalog = np.union1d(split.history["item_id"].astype(str), split.heldout["item_id"].astype(str))
    rows = sample_rows(split.heldout, n_rows, seed=0)
    return split.history, attributes, build_candidates(rows, split.history, catalog, 99, seed=0)


def _share_tied(candidates: pd.DataFrame, scorer) -> float:
    """Share of rows whose relevant item ties with another candidate (the audit's diagnostic)."""
    diag = diagnostics(evaluate(score_candidates(candidates, scorer), ["HR@10"], ["expected"]))
    return float(diag.set_index("diagnostic").loc["share_positive_tied", "value"])


@pytest.mark.parametrize("dataset", ["demo_amazon_beauty", "demo_movielens_genome"])
def test_example_scorer_breaks_the_ties_it_says_it_breaks(tmp_path: Path, dataset: str) -> None:
    # the docstring's claim: on the demo data, exact ties at the relevant item are at least ten
    # times rarer than under attribute_overlap (which ties in most rows there)
    demo = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text(encoding="utf-8"))
    history, attributes, cands = _demo_candidates(tmp_path, dataset, demo["datasets"][dataset], 500)
    overlap = get_scorer("attribute_overlap", weight="rating").fit(history, attributes)
    example = get_scorer(f"{ROOT / 'examples/my_scorer.py'}:RecencyAttributeScorer")
    example.fit(history, attributes)
    base, ours = _share_tied(cands, overlap), _share_tied(cands, example)
    assert base > 0.3, base  # the demo data are tie-heavy for attribute overlap
    assert ours <= base / 10, (ours, base)


def test_the_guide_s_trec_example_is_current(capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """docs/guide/command-line.md's TREC run example: its note (standard error) and its table."""
    args = ("evaluate --run tests/fixtures/trec/sample.run --qrels tests/fixtures/trec/sample.qrels "
            "-m P@5 nDCG@5 -r docno_desc expected")  # fmt: skip
    monkeypatch.chdir(ROOT)  # the note names the run file as given
    assert main(args.split()) == 0
    out = capsys.readouterr()
    shown = [line.rstrip() for line in (out.err + out.out).splitlines()]
    assert shown == _readme_block(f"tieaudit {args}")


def test_the_guide_s_bad_input_example_is_current(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """docs/guide/command-line.md's error example: a line without a score, named, exit 2."""
    (tmp_path / "bad.csv").write_text("row,user_id,item_id,label,score\n1,u,a,1,0.5\n1,u,b,0,\n")
    monkeypatch.chdir(tmp_path)
    assert main(["evaluate", "bad.csv"]) == 2
    assert capsys.readouterr().err.splitlines() == _readme_block("tieaudit evaluate bad.csv")


def test_the_guide_s_column_names_example_is_current(capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """docs/guide/command-line.md's table with its own column names: the error naming the
    columns found and the options, then the table read with them."""
    (tmp_path / "scores.tsv").write_text("user\titem\tscore\tlabel\nu1\ti1\t0.5\tTrue\n"
                                         "u1\ti2\t0.5\tFalse\n")  # fmt: skip
    monkeypatch.chdir(tmp_path)
    assert main(["evaluate", "scores.tsv"]) == 2
    assert capsys.readouterr().err.splitlines() == _readme_block("tieaudit evaluate scores.tsv")
    args = "evaluate scores.tsv --user-col user --item-col item -m nDCG@10 -r expected"
    assert main(args.split()) == 0
    out = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    assert out == _readme_block(f"tieaudit {args}")
