"""Benchmark: streamed ``tieaudit evaluate``, ``audit`` and ``compare`` on large tie-heavy
Parquet files against the limit.

Run on demand (``python benchmarks/bench_stream.py --lines 3e6 30e6``); it prints, from one run
per case, wall seconds, CPU seconds (user + system) and peak RSS of

* ``tieaudit evaluate FILE --metrics nDCG@10 HR@10 --rules input_order expected`` (``--jobs 1``
  and ``--jobs 2``; the default memory budget, 1 GB), with the CPU seconds of the main process
  and of its workers apart (a Parquet file is read by the workers themselves, row groups at a
  time, so the main process should use next to none) and the ratio jobs 1 / jobs 2 on a line
  of its own;
* the one-pass numpy limit on the same file (:func:`limit_pass`, below): the file read by row
  groups, rows coded by hashing (no sort), each row's relevant score and the counts ``g`` above
  it, ``t`` tied with it and tied before it in stored order taken with ``np.bincount``: that gives
  input_order and expected nDCG@10 and HR@10 exactly (checked against tieaudit's output);
* ``tieaudit evaluate`` under every registered rule (seeded ones with seed 0) and
  ``--seeds 100`` (``--all-rules``, ``--jobs 1``);
* ``tieaudit audit`` and ``tieaudit compare`` (the file against a second model: the same rows,
  items and relevant items, other scores) with the two rules, at the sizes of ``--analyses``;

and the ratios tieaudit / limit and jobs 1 / jobs 2. Each run is its own process under
``/usr/bin/time`` (peak RSS is the largest single process: with ``--jobs 2`` the main process
and each worker hold about one chunk). The machine may be shared: the load average is printed
beside every line.

The files (generated block by block into ``--dir``, so generation holds one row group at a
time; kept, or deleted after their size's runs with ``--delete``): 100 candidates a row,
integer scores on 5 levels 0..4 with 70% zeros, the relevant item stored first and one level up
half of the time, integer row, user and item ids, row groups of 1M lines.

Targets (issue 22): peak RSS <= 1.5 GB at every size; the two-rule evaluation <= 5x the limit
pass at 30M and 300M lines; ``--jobs 2`` >= 1.7x faster than ``--jobs 1``; audit and compare at
30M lines within 1.5 GB. ``--quick`` runs only the 30M-line two-rule cases (the limit, ``--jobs
1`` and ``--jobs 2``): the jobs ratio is a wall-clock ratio, so run it on a quiet machine.

Measured on the 2-core machine, 2026-12-02, nothing else running (CPU = user + system seconds;
load average in brackets): 30M lines, two rules: ``--jobs 1`` 12.7 CPU-s and 0.84 GB against 3.3
CPU-s for the limit pass, 3.85x (4.77 GB and 16.5x before streaming) [1]; ``--jobs 2`` 1.28x
faster, where two ``--jobs 1`` runs side by side do 1.91x the work of one [1]. 300M lines: 108.6
CPU-s and 0.91 GB against 24.6 CPU-s, 4.42x [1] (2.74 GB before: pyarrow's pre-buffering kept
every column chunk read until the file was closed); ``--jobs 2`` 1.73x faster, 94% of the
machine's ceiling of 1.83x [2]. Every rule with 100 seeds at 30M lines: 40.7 CPU-s, 1.05 GB; the
audit 102.2 CPU-s, 0.78 GB; compare 53.6 CPU-s, 1.41 GB [1].
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from tieaudit.ties.rules import rule_kinds

N_CANDIDATES = 100
ROW_GROUP = 1_000_000
CATALOG = 1_000_000
K = 10


def make_file(path: Path, n_lines: int, seed: int = 0, score_seed: int | None = None,
              per_row: int = N_CANDIDATES) -> None:  # fmt: skip
    """Write the tie-heavy file of ``n_lines`` lines (a multiple of ``per_row``, the candidates
    of a row) block by block; with ``score_seed``, the same rows, items and relevant items
    scored by another model."""
    n_rows = n_lines // per_row
    rng = np.random.default_rng(seed)
    other = None if score_seed is None else np.random.default_rng([seed, score_seed])
    schema = pa.schema([("row", pa.int64()), ("user_id", pa.int64()), ("item_id", pa.int64()),
                        ("label", pa.int8()), ("score", pa.int64())])  # fmt: skip
    tmp = path.with_suffix(".tmp")
    with pq.ParquetWriter(tmp, schema) as writer:
        per_block = ROW_GROUP // per_row
        for lo in range(0, n_rows, per_block):
            w = min(per_block, n_rows - lo)
            levels = _levels(rng, w, per_row)
            if other is not None:  # the first model's draws keep the items the same
                levels = _levels(other, w, per_row)
            # distinct items within a row: a random start and stride over the catalogue
            start = rng.integers(0, CATALOG, size=(w, 1))
            items = (start + np.arange(per_row) * 7919) % CATALOG
            rows = np.repeat(np.arange(lo, lo + w), per_row)
            labels = np.zeros((w, per_row), dtype=np.int8)
            labels[:, 0] = 1
            writer.write_table(pa.table({"row": rows, "user_id": rows // 2,
                                         "item_id": items.ravel(), "label": labels.ravel(),
                                         "score": levels.ravel()}, schema=schema))  # fmt: skip
    tmp.replace(path)


def _levels(rng: np.random.Generator, w: int, per_row: int = N_CANDIDATES) -> np.ndarray:
    """Scores of ``w`` rows of ``per_row`` candidates: 5 levels, 70% zeros, the relevant item
    (first) one level up half of the time."""
    levels = rng.choice(5, p=[0.7, 0.12, 0.09, 0.06, 0.03], size=(w, per_row))
    levels[:, 0] = np.minimum(levels[:, 0] + rng.integers(0, 2, size=w), 4)
    return levels


def limit_pass(path: Path) -> dict[str, float]:
    """Means of input_order and expected nDCG@10 and HR@10 in one pass of row groups."""
    disc = np.r_[0.0, 1.0 / np.log2(np.arange(2, K + 2))]  # disc[r]: rank r = 1..K
    cum = np.cumsum(disc)  # cum[r]: discounts of ranks 1..r
    sums = dict.fromkeys(["input_order nDCG@10", "input_order HR@10", "expected nDCG@10",
                          "expected HR@10"], 0.0)  # fmt: skip
    n_rows = 0
    carry = None
    pf = pq.ParquetFile(path)
    for batch in pf.iter_batches(batch_size=ROW_GROUP, columns=["row", "label", "score"]):
        t = pa.Table.from_batches([batch])
        if carry is not None:
            t = pa.concat_tables([carry, t])
        row = t.column("row").to_numpy()
        last = np.flatnonzero(row != row[-1])
        cut = int(last[-1]) + 1 if len(last) else 0
        carry, t = t.slice(cut), t.slice(0, cut)
        if cut:
            n_rows += _limit_block(t, disc, cum, sums)
    if carry is not None and carry.num_rows:
        n_rows += _limit_block(carry, disc, cum, sums)
    return {k: v / n_rows for k, v in sums.items()}


def _limit_block(t: pa.Table, disc, cum, sums) -> int:
    code, uniq = pd.factorize(t.column("row").to_numpy())
    w = len(uniq)
    label = t.column("label").to_numpy() == 1
    score = t.column("score").to_numpy()
    at = np.flatnonzero(label)
    rel = np.empty(w, dtype=score.dtype)
    rel[code[at]] = score[at]
    first = np.empty(w, dtype=np.int64)
    first[code[at]] = at
    s = rel[code]
    g = np.bincount(code, weights=score > s, minlength=w)
    tie = score == s
    ties = np.bincount(code, weights=tie, minlength=w)
    before = np.bincount(code, weights=tie & (np.arange(len(code)) < first[code]), minlength=w)
    rank = (g + 1 + before).astype(np.int64)
    hit = rank <= K
    sums["input_order nDCG@10"] += disc[np.where(hit, rank, 0)].sum()
    sums["input_order HR@10"] += hit.sum()
    lo = np.minimum(g, K).astype(np.int64)
    hi = np.minimum(g + ties, K).astype(np.int64)
    sums["expected nDCG@10"] += ((cum[hi] - cum[lo]) / ties).sum()
    sums["expected HR@10"] += ((hi - lo) / ties).sum()
    return w


def timed(cmd: list[str]) -> tuple[float, float, float, str]:
    """Wall s, CPU s and peak RSS (GB) of ``cmd`` under /usr/bin/time; its stdout (for
    :func:`cli_cpu`'s line: the CPU of the main process and of its workers)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as fh:
        out = subprocess.run(["/usr/bin/time", "-o", fh.name, "-f", "%e %U %S %M", *cmd],
                             check=True, capture_output=True, text=True)  # fmt: skip
        wall, user, sys_, rss = fh.read().split()[-4:]
    return float(wall), float(user) + float(sys_), int(rss) / 1e6, out.stdout


def side_by_side(cmds: list[list[str]]) -> float:
    """Wall seconds of ``cmds`` started at once (until the last ends)."""
    t0 = time.monotonic()
    procs = [subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for cmd in cmds]
    if any(p.wait() for p in procs):
        raise RuntimeError(f"{cmds} failed")
    return time.monotonic() - t0


def cli_cpu(argv: list[str]) -> None:
    """Run ``tieaudit`` with ``argv`` in this process; print the CPU seconds of this process and
    of its workers (``cpu MAIN WORKERS``)."""
    import resource

    from tieaudit.cli import main as tieaudit_main

    if tieaudit_main(argv):
        sys.exit(2)
    me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    print(f"cpu {me.ru_utime + me.ru_stime} {kids.ru_utime + kids.ru_stime}")


def _split_cpu(run: tuple[float, float, float, str]) -> str:
    """``main X s + workers Y s`` from a run of :func:`cli_cpu`."""
    line = next(t for t in run[3].splitlines() if t.startswith("cpu "))
    main_cpu, workers = map(float, line.split()[1:])
    return f"CPU main {main_cpu:.1f} s + workers {workers:.1f} s"


def all_rules() -> list[str]:
    """Every registered rule, the seeded ones with seed 0."""
    return [f"{k.name}:0" if k.seeded else k.name for k in rule_kinds()]


def _fmt(run: tuple[float, float, float, str]) -> str:
    return f"{run[0]:.1f} s / {run[1]:.1f} s / {run[2]:.2f} GB"


def _ratio(run: tuple[float, float, float, str], base: tuple[float, float, float, str],
           what: str) -> str:  # fmt: skip
    """Wall and CPU of ``run`` against ``base``'s."""
    return f"{run[0] / base[0]:.2f}x {what} (CPU {run[1] / base[1]:.2f}x)"


def _line(*cells: str) -> None:
    print("| " + " | ".join(cells) + f" | {os.getloadavg()[0]:.1f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=float, nargs="+", default=[3e6, 30e6])
    ap.add_argument("--analyses", type=float, nargs="*", default=[30e6],
                    help="sizes (among --lines) at which audit and compare run")  # fmt: skip
    ap.add_argument("--all-rules", action="store_true",
                    help="also every registered rule with --seeds 100")  # fmt: skip
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2],
                    help="the --jobs of the two-rule evaluation (default: 1 2)")  # fmt: skip
    ap.add_argument("--delete", action="store_true", help="delete each file after its runs")
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "tieaudit-bench")
    ap.add_argument("--quick", action="store_true",
                    help="only the 30M-line two-rule cases: limit, --jobs 1 and --jobs 2")  # fmt: skip
    ap.add_argument("--limit-only", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--cli", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cli:  # tieaudit in its own process, its CPU and its workers' apart
        cli_cpu(args.cli)
        return
    if args.limit_only:  # the limit pass in its own process, for its peak RSS
        for k, v in limit_pass(args.limit_only).items():
            print(f"{k},{float(v)!r}")
        return
    if args.quick:
        args.lines, args.analyses, args.all_rules, args.jobs = [30e6], [], False, [1, 2]
    args.dir.mkdir(parents=True, exist_ok=True)
    tieaudit = [sys.executable, __file__, "--cli"]
    two = ["--metrics", "nDCG@10", "HR@10", "--rules", "input_order", "expected"]
    print(f"{os.cpu_count()} cores; wall / CPU (user + system) / peak RSS, one run each")
    print("| lines | case | wall / CPU / RSS | ratio | load |")
    print("|---:|---|---|---:|---:|")
    for n in map(int, args.lines):
        path = args.dir / f"ties_{n}.parquet"
        if not path.exists():
            make_file(path, n)
        size = f"{n / 1e6:g}M ({path.stat().st_size / 1e6:.0f} MB)"
        lim = timed([sys.executable, __file__, "--limit-only", str(path)])
        limit = dict(line.split(",") for line in lim[3].splitlines())
        _line(size, "limit pass", _fmt(lim), "1x")
        runs = {}
        for jobs in args.jobs:
            out = args.dir / f"m_{n}_{jobs}.csv"
            runs[jobs] = timed([*tieaudit, "evaluate", str(path), *two, "--out", str(out),
                                "--jobs", str(jobs)])  # fmt: skip
            for rec in pd.read_csv(out).itertuples():
                assert abs(rec.value - float(limit[f"{rec.rule} {rec.metric}"])) < 1e-12, rec
            _line(size, f"evaluate, 2 rules, --jobs {jobs}", _fmt(runs[jobs]),
                  f"{_ratio(runs[jobs], lim, 'limit')}; {_split_cpu(runs[jobs])}")  # fmt: skip
        for jobs in [j for j in args.jobs if j > 1 and 1 in runs]:
            # what the machine itself gives: `jobs` independent --jobs 1 runs at once take this
            # long, so `jobs` processes can be at most `ceiling` times as fast as one
            pair = side_by_side([[*tieaudit, "evaluate", str(path), *two, "--out",
                                  str(args.dir / f"m_{n}_1_{i}.csv")] for i in range(jobs)])
            ceiling = jobs * runs[1][0] / pair
            _line(size, f"{jobs} x --jobs 1 side by side (the machine's ceiling)",
                  f"{pair:.1f} s", f"{ceiling:.2f}x the work of one run per second")  # fmt: skip
            speedup = runs[1][0] / runs[jobs][0]
            _line(size, f"**--jobs 1 / --jobs {jobs}**", "",
                  f"**{speedup:.2f}x wall** (target >= 1.7x; {speedup / ceiling:.0%} of the "
                  "machine's ceiling)")  # fmt: skip
        if args.all_rules:
            run = timed([*tieaudit, "evaluate", str(path), "--metrics", "nDCG@10", "HR@10",
                         "--rules", *all_rules(), "--seeds", "100", "--out",
                         str(args.dir / f"all_{n}.csv")])  # fmt: skip
            _line(size, f"evaluate, {len(all_rules())} rules, 100 seeds", _fmt(run),
                  _ratio(run, lim, "limit"))  # fmt: skip
        if n in map(int, args.analyses):
            run = timed([*tieaudit, "audit", str(path), *two, "--out-dir",
                         str(args.dir / f"audit_{n}")])  # fmt: skip
            _line(size, "audit, 2 rules, 5 permutations", _fmt(run), _ratio(run, lim, "limit"))
            other = args.dir / f"ties_{n}_b.parquet"
            if not other.exists():
                make_file(other, n, score_seed=1)
            run = timed([*tieaudit, "compare", str(path), str(other), *two, "--out",
                         str(args.dir / f"flips_{n}.csv")])  # fmt: skip
            _line(size, "compare, 2 models, 2 rules", _fmt(run), _ratio(run, lim, "limit"))
            if args.delete:
                other.unlink()
        if args.delete:
            path.unlink()


if __name__ == "__main__":
    main()
