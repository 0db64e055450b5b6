"""Paper tables (tieaudit.outputs.papertables): scorers x rules with a block per measure, the legend,
and LaTeX that pdflatex compiles into the text width of a two-column paper."""

from __future__ import annotations

import shutil
import subprocess

import pandas as pd
import pytest

from tieaudit.outputs.papertables import paper_cells, paper_latex, paper_markdown, paper_table

RULES = ["input_order", "optimistic", "pessimistic", "expected", "hash:3", "hash_mean"]
SCORERS = ["attribute_overlap", "residualized_attribute"]


def metrics(setting: str = "sampled") -> pd.DataFrame:
    rows = []
    for i, s in enumerate(SCORERS):
        for h in ("nDCG@10", "HR@10"):
            base = 0.4 + 0.1 * i + (0.05 if h == "HR@10" else 0)
            for r in RULES:
                v = {"input_order": 1.5 * base, "optimistic": 1.6 * base,
                     "pessimistic": 0.5 * base, "hash:3": base + 0.001}.get(r, base)  # fmt: skip
                rec = {"dataset": "d", "candidates": setting, "scorer": s, "metric": h,
                       "rule": r, "value": v, "sd": float("nan"), "min": float("nan"),
                       "max": float("nan")}  # fmt: skip
                if r == "hash_mean":
                    rec.update(sd=0.002)
                if r == "expected":
                    rec.update(sd=0.001, min=0.5 * base, max=1.6 * base)
                rows.append(rec)
    return pd.DataFrame(rows)


def test_paper_table_columns_and_values() -> None:
    t = paper_table(pd.concat([metrics(), metrics("full")]), "d", "sampled", SCORERS, RULES,
                    ["nDCG@10", "HR@10"])  # fmt: skip
    assert list(t.columns) == ["metric", "scorer", "input_order", "hash:3", "hash_mean",
                               "hash_mean_sd", "expected", "expected_sd", "pessimistic",
                               "optimistic", "inflation"]  # fmt: skip
    assert list(t["metric"]) == ["nDCG@10", "nDCG@10", "HR@10", "HR@10"]
    one = t.iloc[1]  # residualized_attribute, nDCG@10: base 0.5
    assert one["input_order"] == pytest.approx(0.75) and one["inflation"] == pytest.approx(1.5)
    assert (one["pessimistic"], one["optimistic"]) == pytest.approx((0.25, 0.8))
    head, rows = paper_cells(t[t["metric"] == "HR@10"])
    assert head == ["scorer", "input_order", "hash:3", "hash_mean ± sd", "expected ± sd",
                    "[pessimistic, optimistic]", "input_order / expected"]  # fmt: skip
    assert rows[0] == ["attribute_overlap", "0.6750", "0.4510", "0.4500 ± 0.0020",
                       "0.4500 ± 0.0010", "[0.2250, 0.7200]", "1.50"]  # fmt: skip


def test_columns_of_missing_rules_are_left_out() -> None:
    t = paper_table(metrics(), "d", "sampled", SCORERS, ["input_order", "expected"], ["HR@10"])
    assert list(t.columns) == ["metric", "scorer", "input_order", "expected", "expected_sd",
                               "pessimistic", "optimistic", "inflation"]  # fmt: skip
    with pytest.raises(ValueError, match="no HR@10 for d/sampled/x under input_order"):
        paper_table(metrics(), "d", "sampled", ["x"], ["input_order"], ["HR@10"])


def test_markdown_has_a_block_and_a_legend_per_measure() -> None:
    t = paper_table(metrics(), "d", "sampled", SCORERS, RULES, ["nDCG@10", "HR@10"])
    text = paper_markdown(t, "d", n_seeds=100)
    assert text.count("| scorer | input_order | hash:3 |") == 2
    assert text.count("*hash_mean ± sd: mean and standard deviation over 100 hash seeds;") == 2
    assert "[pessimistic, optimistic]" in text and "exact bounds" in text


@pytest.mark.skipif(shutil.which("pdflatex") is None,
                    reason="pdflatex not installed (Debian: apt-get install texlive-latex-base "
                    "texlive-latex-recommended; .ci/run installs them)")  # fmt: skip
def test_latex_compiles_and_fits_the_text_width(tmp_path) -> None:
    t = paper_table(metrics(), "d", "sampled", SCORERS, RULES, ["nDCG@10", "HR@10"])
    tex = paper_latex(t, "d_x: caption & 100% of it", "tab:d", n_seeds=100)
    assert r"\begin{table*}" in tex and r"\toprule" in tex and r"\small" in tex
    (tmp_path / "t.tex").write_text(tex)
    (tmp_path / "doc.tex").write_text("\\documentclass[twocolumn]{article}\n"
                                      "\\usepackage{booktabs}\n\\begin{document}\n"
                                      "\\input{t.tex}\nText.\n\\end{document}\n")  # fmt: skip
    res = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)  # fmt: skip
    log = (tmp_path / "doc.log").read_text(errors="replace")
    assert res.returncode == 0, log[-3000:]
    assert "Overfull \\hbox" not in log  # fits \textwidth
    assert (tmp_path / "doc.pdf").stat().st_size > 0
