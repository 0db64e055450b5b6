"""Paper tables (tieaudit.outputs.report): the full-catalog block of columns beside the sampled one;
compare.md judges each pattern on the datasets it is about and says when the data are stand-ins."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tieaudit.outputs.report import (
    collect,
    combined_checklist,
    compare_markdown,
    dataset_table,
    load_reference,
    prune_folder,
    ties_invariance_table,
)

RULES = ["input_order", "expected"]
SCORERS = ["s1"]


def write_results(root, dataset: str, full: bool, scorer: str = "s1") -> list[tuple]:
    """Result files of ``scorer`` on ``dataset`` under ``root/results/{dataset}/{setting}/``;
    returns their (dataset, setting, scorer) keys."""
    keys = []
    for setting, base in [("sampled", 0.5)] + ([("full", 0.1)] if full else []):
        d = root / "results" / dataset / setting / scorer
        (d / "audit").mkdir(parents=True)
        pd.DataFrame({
            "rule": RULES, "metric": "nDCG@10", "value": [2 * base, base], "sd": [None, 0.01],
            "min": [None, base / 2], "max": [None, 2 * base], "se": 0.0, "n_rows": 10,
            "n_seeds": None, "z": None,
        }).to_csv(d / "metrics.csv", index=False)  # fmt: skip
        pd.DataFrame({
            "diagnostic": ["share_positive_tied", "mean_tie_size_at_positive",
                           "share_tie_group_straddles_k"],
            "key": ["", "", "k=10"], "value": [base, 10 * base, base / 4],
        }).to_csv(d / "audit" / "diagnostics.csv", index=False)  # fmt: skip
        pd.DataFrame({"rule": RULES, "metric": "nDCG@10", "max_abs_change": 0.0,
                      "share_rows_moved": 0.0, "invariant": ["no", "yes"],
                      "n_permutations": 7}).to_csv(d / "audit" / "invariance.csv", index=False)
        (d / "audit" / "checklist.md").write_text(f"# Tie-handling report: {dataset} / {scorer}\n")
        keys.append((dataset, setting, scorer))
    return keys


def files(root, keys: list[tuple], name: str) -> list[Path]:
    return [root / "results" / d / s / c / name for d, s, c in keys]


def test_full_catalog_columns_beside_the_sampled_ones(tmp_path) -> None:
    keys = write_results(tmp_path, "A", full=True) + write_results(tmp_path, "B", full=False)
    metrics = collect(files(tmp_path, keys, "metrics.csv"), keys)
    a = dataset_table(metrics, "A", SCORERS, RULES, ["nDCG@10"])
    block = ["nDCG@10", "nDCG@10_sd", "nDCG@10_min", "nDCG@10_max", "nDCG@10_z"]
    assert list(a.columns) == ["scorer", "rule"] + block + ["full:" + c for c in block]
    assert a["nDCG@10"].tolist() == [1.0, 0.5] and a["full:nDCG@10"].tolist() == [0.2, 0.1]
    assert a["full:nDCG@10_min"].tolist()[1] == pytest.approx(0.05)
    b = dataset_table(metrics, "B", SCORERS, RULES, ["nDCG@10"])
    assert list(b.columns) == ["scorer", "rule"] + block  # no full results: the sampled table

    diag = collect(files(tmp_path, keys, "audit/diagnostics.csv"), keys)
    inv = collect(files(tmp_path, keys, "audit/invariance.csv"), keys)
    t = ties_invariance_table(diag, inv, ["A", "B"], SCORERS, RULES, ["nDCG@10"])
    own = ["share_tied", "mean_t", "straddle@10", "invariant:input_order", "invariant:expected"]
    assert list(t.columns) == ["dataset", "scorer"] + own + ["full:" + c for c in own]
    a_row, b_row = t.iloc[0], t.iloc[1]
    assert (a_row["share_tied"], a_row["full:share_tied"]) == (0.5, 0.1)
    assert a_row["full:invariant:input_order"] == "no"
    assert math.isnan(b_row["full:share_tied"]) and b_row["full:invariant:expected"] == ""
    only_b = ties_invariance_table(diag[diag["dataset"] == "B"], inv[inv["dataset"] == "B"],
                                   ["B"], SCORERS, RULES, ["nDCG@10"])  # fmt: skip
    assert list(only_b.columns) == ["dataset", "scorer"] + own


def test_keys_come_from_the_caller_not_from_folder_names(tmp_path) -> None:
    # a scorer named "full" (once a reserved folder name) and files anywhere: the keys decide
    keys = write_results(tmp_path, "A", full=True, scorer="full")
    moved = []
    for i, path in enumerate(files(tmp_path, keys, "metrics.csv")):
        moved.append(path.rename(tmp_path / f"m{i}.csv"))
    metrics = collect(moved, keys)
    assert metrics[["dataset", "scorer", "candidates"]].drop_duplicates().values.tolist() == [
        ["A", "full", "sampled"], ["A", "full", "full"]]  # fmt: skip
    table = dataset_table(metrics, "A", ["full"], RULES, ["nDCG@10"])
    assert table["nDCG@10"].tolist() == [1.0, 0.5] and table["full:nDCG@10"].tolist() == [0.2, 0.1]
    text = combined_checklist(files(tmp_path, keys, "audit/checklist.md"), keys)
    assert text.count("## Tie-handling report: A / full") == 2
    assert text.count("(full catalogue)") == 1
    with pytest.raises(ValueError, match="2 file.s. but 1"):
        collect(moved, keys[:1])
    with pytest.raises(ValueError, match="m0.csv: key .* setting one of sampled, full"):
        collect(moved, [("A", "everything", "full"), keys[1]])


ROOT = Path(__file__).resolve().parents[1]
HEADLINE = ["nDCG@10", "HR@10"]


def popularity_metrics(gaps: dict[str, float]) -> pd.DataFrame:
    """Sampled metrics of a popularity scorer whose optimistic - pessimistic gap per dataset is
    ``gaps[dataset]`` (the quantity the popularity_stable pattern judges)."""
    rows = [{"dataset": d, "scorer": "popularity", "candidates": "sampled", "rule": r,
             "metric": h, "value": v, "z": math.nan}
            for d, gap in gaps.items() for h in HEADLINE
            for r, v in (("optimistic", 0.3 + gap), ("pessimistic", 0.3), ("input_order", 0.3))]
    return pd.DataFrame(rows)  # fmt: skip


def paper_reference() -> dict:
    return load_reference(ROOT / "config" / "paper_reference.yaml")


def section(text: str, heading: str) -> str:
    return text.split(f"### {heading}", 1)[1].split("\n### ", 1)[0]


def test_a_pattern_is_judged_only_on_the_datasets_it_is_about() -> None:
    # the paper reports popularity nearly unchanged on MovieLens; on the Amazon stand-in it is
    # not, which must show as a line beyond the paper, not as a vote against the claim
    metrics = popularity_metrics({"demo_amazon": 0.03, "demo_ml": 0.001})
    text = compare_markdown(
        metrics, paper_reference(), datasets=["demo_amazon", "demo_ml"], scorers=["popularity"],
        headline=HEADLINE,
        dataset_map={"amazon_beauty": "demo_amazon", "movielens_genome": "demo_ml"},
    )  # fmt: skip
    pop = section(text, "item popularity is nearly unchanged across rules")
    assert "Verdict: **holds**." in pop
    assert "Judged on: `demo_ml` (standing in for the paper's `movielens_genome`)." in pop
    judged, beyond = pop.split("Beyond the paper", 1)
    assert judged.count("- yes: demo_ml / popularity") == 2 and "demo_amazon" not in judged
    assert beyond.count("- no: demo_amazon / popularity") == 2 and "demo_ml" not in beyond
    # the residualized score is about Amazon: no such scorer here, so not tested (no votes)
    res = section(text, "a residualized attribute score")
    assert "Verdict: not tested in this run" in res
    # the same data with the datasets swapped: now the claim fails where it is about
    swapped = compare_markdown(
        popularity_metrics({"demo_amazon": 0.001, "demo_ml": 0.03}), paper_reference(),
        datasets=["demo_amazon", "demo_ml"], scorers=["popularity"], headline=HEADLINE,
        dataset_map={"amazon_beauty": "demo_amazon", "movielens_genome": "demo_ml"},
    )  # fmt: skip
    pop = section(swapped, "item popularity is nearly unchanged across rules")
    assert "Verdict: **does not hold everywhere** (0 of 2)." in pop


def test_a_pattern_without_its_dataset_in_the_run_is_not_tested() -> None:
    text = compare_markdown(
        popularity_metrics({"amazon_beauty": 0.001}), paper_reference(),
        datasets=["amazon_beauty"], scorers=["popularity"], headline=HEADLINE,
    )  # fmt: skip
    pop = section(text, "item popularity is nearly unchanged across rules")
    assert "Judged on: `movielens_genome` (not in this run)." in pop
    assert "Verdict: not tested in this run" in pop
    assert pop.count("- yes: amazon_beauty / popularity") == 2  # beyond the paper only


def test_compare_says_when_the_data_are_stand_ins() -> None:
    ref, data = paper_reference(), popularity_metrics({"demo_amazon": 0.0, "demo_ml": 0.0})
    common = dict(scorers=["popularity"], headline=HEADLINE)
    demo = compare_markdown(
        data, ref, datasets=["demo_amazon", "demo_ml"], generated=["demo_amazon", "demo_ml"],
        dataset_map={"amazon_beauty": "demo_amazon", "movielens_genome": "demo_ml"}, **common,
    )  # fmt: skip
    top = demo.split("## Published numbers", 1)[0]
    assert "generated stand-ins" in top and "not expected to match" in top
    assert "`demo_amazon` for `amazon_beauty`, `demo_ml` for `movielens_genome`" in top
    # a mapping to a real dataset of another name: stand-ins, not said to be generated
    other = compare_markdown(data, ref, datasets=["demo_amazon"], **common,
                             dataset_map={"amazon_beauty": "demo_amazon"})  # fmt: skip
    top = other.split("## Published numbers", 1)[0]
    assert "stand-ins: `demo_amazon` for `amazon_beauty`." in top and "generated" not in top
    # one generated, one not: each says which
    mixed = compare_markdown(
        data, ref, datasets=["demo_amazon", "demo_ml"], generated=["demo_ml"],
        dataset_map={"amazon_beauty": "demo_amazon", "movielens_genome": "demo_ml"}, **common,
    )  # fmt: skip
    assert ("stand-ins: `demo_amazon` (another dataset) for `amazon_beauty`, `demo_ml` "
            "(generated) for `movielens_genome`.") in mixed  # fmt: skip
    # generated data under the paper's own name are stand-ins too
    named = popularity_metrics({"amazon_beauty": 0.0})
    gen = compare_markdown(named, ref, datasets=["amazon_beauty"], generated=["amazon_beauty"],
                           **common)  # fmt: skip
    assert "generated stand-ins: `amazon_beauty` for `amazon_beauty`" in gen
    # the paper's datasets themselves: no warning
    real = compare_markdown(named, ref, datasets=["amazon_beauty"], **common)
    assert "Not the paper's data" not in real and "stand-in" not in real


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda ref: ref["patterns"][3].pop("datasets"),
         r"patterns entry 4 \(popularity_stable\): 'datasets' must list"),
        (lambda ref: ref["patterns"][0].update(id="input_order_deflates"),
         r"patterns entry 1: id 'input_order_deflates' is not one of"),
        (lambda ref: ref["values"][1].pop("rule"), r"values entry 2: missing rule"),
        (lambda ref: ref["values"][0].update(value="high"), r"values entry 1: value 'high'"),
    ],
)  # fmt: skip
def test_reference_file_errors_name_the_file_and_entry(tmp_path, edit, message) -> None:
    ref = yaml.safe_load((ROOT / "config" / "paper_reference.yaml").read_text(encoding="utf-8"))
    edit(ref)
    path = tmp_path / "reference.yaml"
    path.write_text(yaml.safe_dump(ref), encoding="utf-8")
    with pytest.raises(ValueError, match=f"{path}: {message}"):
        load_reference(path)


def test_prune_folder_removes_only_what_an_earlier_run_wrote(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the workflow passes paths relative to its working directory
    paper = Path("results/paper")
    for name in ("table_a.csv", "table_old.csv", "figures/a_rules.png", "figures/old_rules.png",
                 "old/only.md", ".table_a.csv.x1.tmp", "notes.txt", "table_a.tex",
                 "mine/draft.tex", "../elsewhere.txt"):  # fmt: skip
        (paper / name).parent.mkdir(parents=True, exist_ok=True)
        (paper / name).write_text(name)
    keep = ["results/paper/table_a.csv", "results/./paper/figures/a_rules.png",
            "results/paper/never_written.md"]  # fmt: skip
    # the earlier run's manifest: its outputs (table_a.tex is one no longer written)
    written = ["table_a.csv", "table_old.csv", "figures/a_rules.png", "figures/old_rules.png",
               "old/only.md", "table_a.tex", "../elsewhere.txt", "/etc/hostname"]  # fmt: skip
    kept, removed, foreign = prune_folder("results/paper", keep, written)
    assert kept == [paper / "figures/a_rules.png", paper / "table_a.csv"]
    assert removed == sorted(paper / n for n in ("table_old.csv", "figures/old_rules.png",
                                                 "old/only.md", "table_a.tex"))  # fmt: skip
    assert foreign == sorted(paper / n for n in (".table_a.csv.x1.tmp", "notes.txt",
                                                 "mine/draft.tex"))  # fmt: skip
    left = sorted(p.relative_to(paper).as_posix() for p in paper.rglob("*"))
    assert left == [".table_a.csv.x1.tmp", "figures", "figures/a_rules.png", "mine",
                    "mine/draft.tex", "notes.txt", "table_a.csv"]  # emptied folder removed
    assert Path("results/elsewhere.txt").is_file()  # a manifest line never leaves the folder
    # no earlier manifest: nothing is removed
    assert prune_folder("results/paper", keep)[1] == []
