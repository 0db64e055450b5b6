"""The paper's tables, the comparison with the published numbers, and the combined checklist.

Inputs are the files the pipeline wrote (``metrics.csv``, ``audit/invariance.csv``,
``audit/diagnostics.csv``, ``audit/checklist.md`` per dataset and scorer); every number in the
outputs is read from them, never retyped.

Tables
    ``table_{dataset}``: one line per scorer and rule with the headline measures; for each headline
    measure ``m`` the columns ``m`` (mean over rows), ``m_sd``, ``m_min``, ``m_max`` (hash_mean: over
    seeds; expected: exact sd and the pessimistic/optimistic bounds) and ``m_z`` (hash_mean: seed
    mean against the exact expectation). ``ties_invariance``: per dataset and scorer the share of
    rows whose relevant item is tied, the mean tie size at it, the share of rows whose tie group
    straddles each headline cutoff, and the invariance verdict of every rule.

Full-catalog block
    Results live under ``results/{dataset}/{setting}/{scorer}/``, ``setting`` being ``sampled``
    or ``full``; :func:`collect` tags every line with the ``dataset``, ``scorer`` and
    ``candidates`` setting the caller gives for its file (no folder name is parsed). When full-catalog results are present, the tables gain a block of columns beside
    the sampled ones, each named ``full:`` + the sampled column's name (``full:nDCG@10``,
    ``full:nDCG@10_sd``, ..., ``full:share_tied``, ``full:invariant:input_order``): the same
    scorer and rule on one line, sampled and full-catalog side by side. Without them the tables
    are exactly the sampled ones. ``compare_markdown`` compares the sampled setting only (the
    paper's protocol), and :func:`combined_checklist` marks the full-catalog checklists in their
    headings.

Comparison with the paper
    :func:`compare_markdown` sets the published numbers of the reference file
    (:func:`load_reference`) beside ours and judges each pattern the paper reports on the
    dataset(s) the pattern names, mapped to this run's stand-ins; this run's other datasets are
    shown as lines beyond the paper that do not vote. When the compared data are stand-ins (a
    mapped name or a generated dataset), the file opens with a note saying so.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
import yaml

from ..common.io import frame_to_markdown

__all__ = [
    "collect",
    "dataset_table",
    "ties_invariance_table",
    "compare_markdown",
    "combined_checklist",
    "frame_to_latex",
    "load_reference",
    "prune_folder",
    "read_manifest",
    "PATTERNS",
    "Tolerances",
]


#: Candidate settings in table order.
CANDIDATE_SETTINGS = ("sampled", "full")

#: What a result file is of: (dataset, candidates setting, scorer).
Key = tuple[str, str, str]


def _keys(paths: Sequence[str | Path], keys: Sequence[Key]) -> list[Key]:
    """``keys`` checked against ``paths``: one (dataset, setting, scorer) per file, each setting
    one of :data:`CANDIDATE_SETTINGS`."""
    keys = [tuple(k) for k in keys]
    if len(keys) != len(paths):
        raise ValueError(f"{len(paths)} file(s) but {len(keys)} (dataset, setting, scorer) key(s)")
    for path, key in zip(paths, keys, strict=True):
        if len(key) != 3 or key[1] not in CANDIDATE_SETTINGS:
            raise ValueError(
                f"{path}: key {key!r} is not (dataset, setting, scorer) with setting one of "
                f"{', '.join(CANDIDATE_SETTINGS)}"
            )
    return keys  # type: ignore[return-value]


def collect(paths: Sequence[str | Path], keys: Sequence[Key]) -> pd.DataFrame:
    """Concatenate per-(dataset, setting, scorer) CSV files, adding the ``dataset``, ``scorer``
    and ``candidates`` (setting: ``sampled`` or ``full``) columns; ``keys[i]`` is the
    ``(dataset, setting, scorer)`` of ``paths[i]``."""
    frames = []
    for p, (d, c, s) in zip(paths, _keys(paths, keys), strict=True):
        f = pd.read_csv(p, keep_default_na=True)
        f.insert(0, "candidates", c)
        f.insert(0, "scorer", s)
        f.insert(0, "dataset", d)
        frames.append(f)
    return pd.concat(frames, ignore_index=True)


def _settings(frame: pd.DataFrame, datasets: Sequence[str]) -> list[str]:
    """The candidate settings present for ``datasets``, in table order (sampled when untagged)."""
    if "candidates" not in frame.columns:
        return ["sampled"]
    present = set(frame.loc[frame["dataset"].isin(list(datasets)), "candidates"])
    return [c for c in CANDIDATE_SETTINGS if c in present] or ["sampled"]


def _sampled(frame: pd.DataFrame) -> pd.DataFrame:
    if "candidates" not in frame.columns:
        return frame
    return frame[frame["candidates"] == "sampled"]


def _prefix(setting: str) -> str:
    """Column prefix of a candidate setting's block: none for sampled, ``full:`` for full."""
    return "" if setting == "sampled" else f"{setting}:"


def dataset_table(
    metrics: pd.DataFrame, dataset: str, scorers: Sequence[str], rules: Sequence[str],
    headline: Sequence[str],
) -> pd.DataFrame:  # fmt: skip
    """Scorer x rule table of the headline measures for one dataset (see module doc); with
    full-catalog results a ``full:`` block of columns beside the sampled ones."""
    m = metrics[metrics["dataset"] == dataset]
    settings = _settings(metrics, [dataset])
    rows = []
    for s in scorers:
        for r in rules:
            rec: dict[str, object] = {"scorer": s, "rule": r}
            for c in settings:
                mc = m[m["candidates"] == c] if "candidates" in m.columns else m
                pre = _prefix(c)
                for h in headline:
                    sel = mc[(mc["scorer"] == s) & (mc["rule"] == r) & (mc["metric"] == h)]
                    if sel.empty:
                        raise ValueError(
                            f"no {h} for {dataset}/{s} ({c} candidates) under {r} in the metrics"
                        )
                    one = sel.iloc[0]
                    rec[f"{pre}{h}"] = one["value"]
                    for col in ("sd", "min", "max", "z"):
                        rec[f"{pre}{h}_{col}"] = one[col]
            rows.append(rec)
    return pd.DataFrame(rows)


def ties_invariance_table(
    diagnostics: pd.DataFrame, invariance: pd.DataFrame, datasets: Sequence[str],
    scorers: Sequence[str], rules: Sequence[str], headline: Sequence[str],
) -> pd.DataFrame:  # fmt: skip
    """Per dataset and scorer: ties at the relevant item and each rule's invariance verdict; with
    full-catalog results a ``full:`` block of the same columns beside them (empty for a dataset
    without full-catalog results)."""
    ks = sorted({int(h.split("@")[1]) for h in headline})
    settings = _settings(diagnostics, datasets)
    tagged = "candidates" in diagnostics.columns and "candidates" in invariance.columns
    rows = []
    for d in datasets:
        for s in scorers:
            rec: dict[str, object] = {"dataset": d, "scorer": s}
            for c in settings:
                dg = diagnostics[(diagnostics["dataset"] == d) & (diagnostics["scorer"] == s)]
                iv = invariance[(invariance["dataset"] == d) & (invariance["scorer"] == s)]
                if tagged:
                    dg, iv = dg[dg["candidates"] == c], iv[iv["candidates"] == c]
                def diag(name: str, key: str = "", dg: pd.DataFrame = dg) -> float:
                    if dg.empty:  # no results of this setting for this dataset
                        return math.nan
                    sel = dg[(dg["diagnostic"] == name) & (dg["key"].fillna("") == key)]
                    return float(sel["value"].iloc[0])

                pre = _prefix(c)
                rec[f"{pre}share_tied"] = diag("share_positive_tied")
                rec[f"{pre}mean_t"] = diag("mean_tie_size_at_positive")
                for k in ks:
                    rec[f"{pre}straddle@{k}"] = diag("share_tie_group_straddles_k", f"k={k}")
                verdicts = iv.drop_duplicates("rule").set_index("rule")["invariant"]
                for r in rules:
                    rec[f"{pre}invariant:{r}"] = verdicts.get(r, "")
            rows.append(rec)
    return pd.DataFrame(rows)


_LATEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                  "^": r"\textasciicircum{}"}  # fmt: skip


def _latex_escape(text: str) -> str:
    return re.sub(r"[\\&%$#_{}~^]", lambda m: _LATEX_ESCAPES[m.group(0)], text)


def frame_to_latex(frame: pd.DataFrame, caption: str = "", label: str = "") -> str:
    """A booktabs LaTeX table (floats with 4 decimals, NaN empty)."""

    def cell(v: object) -> str:
        if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
            return ""
        if isinstance(v, float):
            return f"{v:.4f}"
        return _latex_escape(str(v))

    align = "".join("r" if pd.api.types.is_numeric_dtype(frame[c]) else "l" for c in frame.columns)
    lines = [r"\begin{table}[t]", r"\centering", r"\small"]
    if caption:
        lines.append(rf"\caption{{{_latex_escape(caption)}}}")
    if label:
        lines.append(rf"\label{{{label}}}")
    lines += [rf"\begin{{tabular}}{{{align}}}", r"\toprule"]
    lines.append(" & ".join(_latex_escape(str(c)) for c in frame.columns) + r" \\")
    lines.append(r"\midrule")
    for rec in frame.itertuples(index=False):
        lines.append(" & ".join(cell(v) for v in rec) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(lines)


class Tolerances:
    """Thresholds that decide whether a qualitative pattern of the paper holds.

    * input order inflates: ``input_order >= (1 + inflation) * expected`` (default 25% above);
    * expected matches hash_mean: ``|z| <= max_abs_z`` (default 3);
    * a score is "nearly unchanged": ``optimistic - pessimistic <= max_gap`` (default 0.01).
    """

    def __init__(self, inflation: float = 0.25, max_abs_z: float = 3.0, max_gap: float = 0.01):
        self.inflation, self.max_abs_z, self.max_gap = inflation, max_abs_z, max_gap


def _value(metrics: pd.DataFrame, d: str, s: str, rule: str, metric: str, col: str = "value"):
    sel = metrics[(metrics["dataset"] == d) & (metrics["scorer"] == s) & (metrics["rule"] == rule)
                  & (metrics["metric"] == metric)]  # fmt: skip
    return None if sel.empty else float(sel[col].iloc[0])


#: The patterns compare.md can judge (the ``id`` of a pattern in the reference file).
PATTERNS = ("input_order_inflates", "expected_matches_hash_mean", "residualized_stable",
            "popularity_stable")  # fmt: skip


def _pattern_checks(
    pat: Mapping[str, object], metrics: pd.DataFrame, d: str, scorers: Sequence[str],
    headline: Sequence[str], tol: Tolerances,
) -> list[tuple[str, bool]]:  # fmt: skip
    """The (text, holds) lines of one pattern on one dataset of this run, one per headline
    measure (and scorer, for ``expected_matches_hash_mean``) the metrics have."""
    pid = pat["id"]
    checks: list[tuple[str, bool]] = []
    for h in headline:
        if pid == "input_order_inflates":
            s = str(pat.get("scorer", "attribute_overlap"))
            io_, ex = _value(metrics, d, s, "input_order", h), _value(metrics, d, s, "expected", h)
            if io_ is None or ex is None:
                continue
            checks.append((f"{d} / {s} {h}: input_order {io_:.4f} vs expected {ex:.4f}"
                           f" ({io_ / ex:.2f}x)" if ex > 0 else
                           f"{d} / {s} {h}: input_order {io_:.4f} vs expected 0",
                           io_ >= (1 + tol.inflation) * ex and io_ > ex))  # fmt: skip
        elif pid == "expected_matches_hash_mean":
            for s in scorers:
                z = _value(metrics, d, s, "hash_mean", h, "z")
                hm = _value(metrics, d, s, "hash_mean", h)
                ex = _value(metrics, d, s, "expected", h)
                if z is None or ex is None:
                    continue
                checks.append((f"{d} / {s} {h}: hash_mean {hm:.4f} vs expected "
                               f"{ex:.4f} (z = {z:+.2f})", abs(z) <= tol.max_abs_z))  # fmt: skip
        else:  # residualized_stable, popularity_stable: a score nearly unchanged across rules
            s = str(pat["scorer"])
            op, pe = _value(metrics, d, s, "optimistic", h), _value(metrics, d, s, "pessimistic", h)
            io_ = _value(metrics, d, s, "input_order", h)
            if op is None or pe is None:
                continue
            checks.append((f"{d} / {s} {h}: optimistic - pessimistic = {op - pe:.4f}"
                           + (f", input_order {io_:.4f}" if io_ is not None else ""),
                           op - pe <= tol.max_gap))  # fmt: skip
    return checks


def _stand_ins(
    reference: Mapping[str, object], datasets: Sequence[str], dmap: Mapping[str, str],
    generated: Sequence[str],
) -> list[tuple[str, str]]:  # fmt: skip
    """(paper dataset, this run's dataset) for every paper dataset of the reference file that
    this run compares against data other than the paper's: a dataset mapped to another name,
    or a generated one."""
    named = [v["dataset"] for v in reference.get("values", [])]
    named += [p for pat in reference.get("patterns", []) for p in pat.get("datasets", [])]
    out = []
    for paper in dict.fromkeys(named):
        ours = dmap.get(paper, paper)
        if ours in datasets and (ours != paper or ours in generated):
            out.append((paper, ours))
    return out


def _stand_in_note(stand_ins: Sequence[tuple[str, str]], generated: Sequence[str]) -> str:
    """The warning at the top of compare.md when the paper's datasets are not this run's."""
    made = {ours in generated for _, ours in stand_ins}
    mixed = len(made) > 1

    def one(paper: str, ours: str) -> str:
        kind = (" (generated)" if ours in generated else " (another dataset)") if mixed else ""
        return f"`{ours}`{kind} for `{paper}`"

    return (f"> **Not the paper's data.** This run compares the paper's datasets against "
            f"{'generated ' if made == {True} else ''}stand-ins: "
            + ", ".join(one(p, o) for p, o in stand_ins)
            + ". The published numbers are set beside them for orientation only: the magnitudes "
            "are not expected to match. A verdict below says whether the paper's pattern also "
            "appears in these data.")  # fmt: skip


def compare_markdown(
    metrics: pd.DataFrame,
    reference: Mapping[str, object],
    *,
    datasets: Sequence[str],
    scorers: Sequence[str],
    headline: Sequence[str],
    dataset_map: Mapping[str, str] | None = None,
    generated: Sequence[str] = (),
    tol: Tolerances | None = None,
) -> str:
    """Published numbers beside ours, and whether each pattern the paper claims holds here.

    ``dataset_map`` maps a dataset name of the reference file (the paper's) to this run's name;
    ``generated`` names this run's datasets made by a generator. Each pattern is judged on the
    datasets it names (``datasets`` in the reference file, mapped), only; this run's other
    datasets are listed under it as "beyond the paper" and cast no vote. When a paper dataset is
    compared against a stand-in (mapped to another name, or generated), the file says so at the
    top.
    """
    tol = tol or Tolerances()
    dmap = dict(dataset_map or {})
    metrics = _sampled(metrics)  # the paper's protocol: sampled candidates
    out = ["# Our numbers beside the paper's", ""]
    stand_ins = _stand_ins(reference, datasets, dmap, generated)
    if stand_ins:
        out += [_stand_in_note(stand_ins, generated), ""]
    out.append(f"Published values are from the {reference.get('source', 'paper')}; ours are read "
               "from this run's `results/*/sampled/*/metrics.csv`. Candidates and scores are "
               "fixed; only the tie rule changes.")  # fmt: skip
    out += ["", "## Published numbers", ""]
    rows = []
    for v in reference.get("values", []):
        d = dmap.get(v["dataset"], v["dataset"])
        ours = _value(metrics, d, v["scorer"], v["rule"], v["metric"])
        hm = _value(metrics, d, v["scorer"], "hash_mean", v["metric"])
        rows.append({
            "dataset": d, "scorer": v["scorer"], "metric": v["metric"], "rule": v["rule"],
            "paper": float(v["value"]), "ours": ours if ours is not None else math.nan,
            "ours_hash_mean": hm if hm is not None else math.nan,
        })  # fmt: skip
    if rows:
        out.append(frame_to_markdown(pd.DataFrame(rows)))
    else:
        out.append("(no published values in the reference file)\n")
    out.append("A missing value means this run has no such dataset, scorer or rule.\n")

    out += ["## Patterns the paper reports", ""]
    for pat in reference.get("patterns", []):
        about = [dmap.get(p, p) for p in pat["datasets"]]
        judged: list[tuple[str, bool]] = []
        beyond: list[tuple[str, bool]] = []
        for d in datasets:
            checks = _pattern_checks(pat, metrics, d, scorers, headline, tol)
            (judged if d in about else beyond).extend(checks)
        if not judged:
            verdict = "not tested in this run (dataset, scorer or rule missing)"
        else:
            n_ok = sum(ok for _, ok in judged)
            verdict = ("**holds**" if n_ok == len(judged) else
                       f"**does not hold everywhere** ({n_ok} of {len(judged)})")  # fmt: skip
        on = [f"`{ours}`" + ("" if ours == p else f" (standing in for the paper's `{p}`)")
              + ("" if ours in datasets else " (not in this run)")
              for p, ours in zip(pat["datasets"], about, strict=True)]  # fmt: skip
        out += [f"### {pat['text']}", "", f"Judged on: {', '.join(on)}.", ""]
        out += [f"Verdict: {verdict}.", ""]
        out += [f"- {'yes' if ok else 'no'}: {text}" for text, ok in judged]
        if beyond:
            out += ([""] if judged else []) + [
                "Beyond the paper (this run's other datasets; not counted in the verdict):", ""]
            out += [f"- {'yes' if ok else 'no'}: {text}" for text, ok in beyond]
        out.append("")
    out += [
        "Criteria: input order inflates when it is at least "
        f"{100 * tol.inflation:.0f}% above the exact expectation; expected matches hash_mean when "
        f"|z| <= {tol.max_abs_z:g}; a score is nearly unchanged when its optimistic - pessimistic "
        f"gap is at most {tol.max_gap:g}.",
        "",
    ]
    return "\n".join(out)


def combined_checklist(paths: Sequence[str | Path], keys: Sequence[Key]) -> str:
    """The per-(dataset, setting, scorer) checklists under one title, in the given order;
    ``keys[i]`` is the ``(dataset, setting, scorer)`` of ``paths[i]`` (a full-catalog one is
    marked in its heading)."""
    parts = ["# Reporting checklists", ""]
    for p, (_, setting, _) in zip(paths, _keys(paths, keys), strict=True):
        text = Path(p).read_text(encoding="utf-8").strip()
        if setting == "full":
            text = re.sub(r"^(# .*)$", r"\1 (full catalogue)", text, count=1, flags=re.M)
        parts += [re.sub(r"^# ", "## ", text, count=1), ""]
        parts[-2] = re.sub(r"(?m)^## (?!Tie-handling)", "### ", parts[-2])
    return "\n".join(parts)


def prune_folder(folder: str | Path, keep: Sequence[str | Path], written: Sequence[str] = ()
                 ) -> tuple[list[Path], list[Path], list[Path]]:  # fmt: skip
    """Remove the files under ``folder`` that an earlier run wrote (``written``: the lines of
    its manifest, paths relative to ``folder``) and that are not in ``keep`` this time, and the
    folders that leaves empty. Every other file (a user's notes, a hand-edited copy) stays.
    Return the kept files that exist, the removed ones and the ones left that no run wrote, each
    sorted. ``keep`` paths are taken as the same relative or absolute paths as ``folder``; a
    ``written`` line that leaves the folder (``..``, absolute) removes nothing."""
    root = Path(folder)
    wanted = {Path(os.path.normpath(p)) for p in keep}
    ours = {Path(os.path.normpath(root / w)) for w in written
            if w and not Path(w).is_absolute() and ".." not in Path(w).parts}  # fmt: skip
    kept, removed, foreign = [], [], []
    for path in sorted(p for p in root.rglob("*") if not p.is_dir()):
        norm = Path(os.path.normpath(path))
        if norm in wanted:
            kept.append(path)
        elif norm in ours:
            path.unlink()
            removed.append(path)
        else:
            foreign.append(path)
    for path in removed:
        for sub in path.parents:
            if sub == root or not sub.is_relative_to(root) or any(sub.iterdir()):
                break
            sub.rmdir()
    return kept, removed, foreign


def read_manifest(path: str | Path) -> list[str]:
    """The lines of a manifest written by :func:`prune_folder`'s caller (none when it is absent)."""
    path = Path(path)
    return path.read_text(encoding="utf-8").splitlines() if path.is_file() else []


_VALUE_KEYS = ("dataset", "scorer", "metric", "rule", "value")


def load_reference(path: str | Path) -> dict:
    """The reference YAML (published numbers and patterns), checked: every entry of ``values``
    names its ``dataset``, ``scorer``, ``metric``, ``rule`` and a numeric ``value``; every
    pattern has a known ``id`` (:data:`PATTERNS`), a ``text`` and the paper's ``datasets`` it is
    about (``residualized_stable`` and ``popularity_stable`` also a ``scorer``). A bad entry is a
    ``ValueError`` naming the file and the entry (counted from 1)."""
    with open(path, encoding="utf-8") as fh:
        ref = yaml.safe_load(fh) or {}
    if not isinstance(ref, dict):
        raise ValueError(f"{path}: expected a mapping with 'values' and 'patterns'")
    ref["values"] = ref.get("values") or []
    ref["patterns"] = ref.get("patterns") or []
    for n, v in enumerate(ref["values"], 1):
        missing = [k for k in _VALUE_KEYS if not isinstance(v, dict) or k not in v]
        if missing:
            raise ValueError(f"{path}: values entry {n}: missing {', '.join(missing)}")
        if isinstance(v["value"], bool) or not isinstance(v["value"], (int, float)):
            raise ValueError(f"{path}: values entry {n}: value {v['value']!r} is not a number")
    for n, pat in enumerate(ref["patterns"], 1):
        where = f"{path}: patterns entry {n}"
        pid = pat.get("id") if isinstance(pat, dict) else None
        if pid not in PATTERNS:
            raise ValueError(f"{where}: id {pid!r} is not one of {', '.join(PATTERNS)}")
        where += f" ({pid})"
        if not isinstance(pat.get("text"), str):
            raise ValueError(f"{where}: no text")
        names = pat.get("datasets")
        if not (isinstance(names, list) and names and all(isinstance(d, str) for d in names)):
            raise ValueError(f"{where}: 'datasets' must list the paper's dataset(s) the pattern "
                             "is about, e.g. [amazon_beauty]")  # fmt: skip
        if pid in PATTERNS[2:] and not isinstance(pat.get("scorer"), str):
            raise ValueError(f"{where}: no scorer (the score that is nearly unchanged)")
    return ref
