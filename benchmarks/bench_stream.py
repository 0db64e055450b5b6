"""Benchmark: streamed ``tieaudit evaluate`` on large tie-heavy Parquet files against the limit.

Run on demand (``python benchmarks/bench_stream.py --lines 3e6 30e6``); it prints, from one run
per case, wall seconds, CPU seconds (user + system) and peak RSS of

* ``tieaudit evaluate FILE --metrics nDCG@10 HR@10 --rules input_order expected`` (``--jobs 1``
  and ``--jobs 2``; the default memory budget, 1 GB);
* the one-pass numpy limit on the same file (:func:`limit_pass`, below): the file read by row
  groups, rows coded by hashing (no sort), each row's relevant score and the counts ``g`` above
  it, ``t`` tied with it and tied before it in stored order taken with ``np.bincount``: that gives
  input_order and expected nDCG@10 and HR@10 exactly (checked against tieaudit's output);

and the ratios tieaudit / limit and jobs 1 / jobs 2. Each run is its own process under
``/usr/bin/time`` (peak RSS is the largest single process: with ``--jobs 2`` the main process
and each worker hold about one chunk). The machine may be shared: the load average is printed
beside the numbers.

The files (generated once into ``--dir``, kept): 100 candidates a row, integer scores on 5
levels 0..4 with 70% zeros, the relevant item stored first and one level up half of the time,
integer row, user and item ids, row groups of 1M lines.

Targets (issue 22): peak RSS <= 1.5 GB at every size; the two-rule evaluation <= 5x the limit
pass at 30M and 300M lines; ``--jobs 2`` >= 1.7x faster than ``--jobs 1``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

N_CANDIDATES = 100
ROW_GROUP = 1_000_000
CATALOG = 1_000_000
K = 10


def make_file(path: Path, n_lines: int, seed: int = 0) -> None:
    """Write the tie-heavy file of ``n_lines`` lines (a multiple of 100) block by block."""
    n_rows = n_lines // N_CANDIDATES
    rng = np.random.default_rng(seed)
    schema = pa.schema([("row", pa.int64()), ("user_id", pa.int64()), ("item_id", pa.int64()),
                        ("label", pa.int8()), ("score", pa.int64())])  # fmt: skip
    tmp = path.with_suffix(".tmp")
    with pq.ParquetWriter(tmp, schema) as writer:
        per_block = ROW_GROUP // N_CANDIDATES
        for lo in range(0, n_rows, per_block):
            w = min(per_block, n_rows - lo)
            levels = rng.choice(5, p=[0.7, 0.12, 0.09, 0.06, 0.03], size=(w, N_CANDIDATES))
            levels[:, 0] = np.minimum(levels[:, 0] + rng.integers(0, 2, size=w), 4)
            # distinct items within a row: a random start and stride over the catalogue
            start = rng.integers(0, CATALOG, size=(w, 1))
            items = (start + np.arange(N_CANDIDATES) * 7919) % CATALOG
            rows = np.repeat(np.arange(lo, lo + w), N_CANDIDATES)
            labels = np.zeros((w, N_CANDIDATES), dtype=np.int8)
            labels[:, 0] = 1
            writer.write_table(pa.table({"row": rows, "user_id": rows // 2,
                                         "item_id": items.ravel(), "label": labels.ravel(),
                                         "score": levels.ravel()}, schema=schema))  # fmt: skip
    tmp.replace(path)


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
    """Wall s, CPU s and peak RSS (GB) of ``cmd`` under /usr/bin/time; its stdout."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as fh:
        out = subprocess.run(["/usr/bin/time", "-o", fh.name, "-f", "%e %U %S %M", *cmd],
                             check=True, capture_output=True, text=True)  # fmt: skip
        wall, user, sys_, rss = fh.read().split()[-4:]
    return float(wall), float(user) + float(sys_), int(rss) / 1e6, out.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=float, nargs="+", default=[3e6, 30e6])
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "tieaudit-bench")
    ap.add_argument("--limit-only", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.limit_only:  # the limit pass in its own process, for its peak RSS
        for k, v in limit_pass(args.limit_only).items():
            print(f"{k},{float(v)!r}")
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    tieaudit = [sys.executable, "-m", "tieaudit.cli"]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| lines | file | limit: wall / CPU / RSS | jobs 1: wall / CPU / RSS | ratio | "
          "jobs 2: wall / CPU / RSS | jobs 1 / jobs 2 | load |")
    print("|---:|---:|---|---|---:|---|---:|---:|")
    for n in args.lines:
        n = int(n)
        path = args.dir / f"ties_{n}.parquet"
        if not path.exists():
            make_file(path, n)
        lim = timed([sys.executable, __file__, "--limit-only", str(path)])
        limit = dict(line.split(",") for line in lim[3].splitlines())
        runs = {}
        for jobs in (1, 2):
            out = args.dir / f"m_{n}_{jobs}.csv"
            runs[jobs] = timed([*tieaudit, "evaluate", str(path), "--metrics", "nDCG@10", "HR@10",
                                "--rules", "input_order", "expected", "--out", str(out),
                                "--jobs", str(jobs)])  # fmt: skip
            got = pd.read_csv(out)
            for rec in got.itertuples():
                assert abs(rec.value - float(limit[f"{rec.rule} {rec.metric}"])) < 1e-12, rec
        load = os.getloadavg()[0]
        fmt = "{:.1f} s / {:.1f} s / {:.2f} GB".format
        print(f"| {n / 1e6:g}M | {path.stat().st_size / 1e6:.0f} MB | {fmt(*lim[:3])} | "
              f"{fmt(*runs[1][:3])} | {runs[1][0] / lim[0]:.1f}x | {fmt(*runs[2][:3])} | "
              f"{runs[1][0] / runs[2][0]:.2f}x | {load:.1f} |", flush=True)


if __name__ == "__main__":
    main()
