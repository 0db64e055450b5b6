"""Benchmark: ``tieaudit evaluate --engine duckdb`` beside the default engine on one file.

Run on demand (``python benchmarks/bench_engines.py --lines 10e6 --memory 1GB``); it prints,
from one run of each in its own process under ``/usr/bin/time``, wall seconds, CPU seconds
(user + system), the peak RSS and the ratios DuckDB / default, with the load average, for the
rules both compute (``input_order optimistic pessimistic expected item_id``) and the measures
``nDCG@10 HR@10 MRR@10``, and checks that the two summaries agree to a relative 1e-12. The
file is the tie-heavy Parquet file of ``benchmarks/bench_stream.py`` (100 candidates a row,
integer scores on 5 levels with 70% zeros, the relevant item stored first), kept in ``--dir``.
Both engines get ``--memory`` and ``--jobs``.
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

from bench_stream import make_file  # this folder is on sys.path when run as a script

TIEAUDIT = [sys.executable, "-c", "import sys; from tieaudit.cli import main; sys.exit(main())"]
RULES = ["input_order", "optimistic", "pessimistic", "expected", "item_id"]
MEASURES = ["nDCG@10", "HR@10", "MRR@10"]


def run(cmd: list[str]) -> tuple[float, float, float]:
    """Wall s, CPU s and peak RSS (bytes) of ``cmd`` under /usr/bin/time."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as fh:
        subprocess.run(["/usr/bin/time", "-o", fh.name, "-f", "%e %U %S %M", *cmd], check=True,
                       capture_output=True, text=True)  # fmt: skip
        wall, user, sys_, rss = fh.read().split()[-4:]
    return float(wall), float(user) + float(sys_), int(rss) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=float, default=10e6, help="lines of the file (default 10M)")
    ap.add_argument("--memory", default="1GB", help="--memory of both engines")
    ap.add_argument("--jobs", type=int, default=1, help="--jobs of both (DuckDB: its threads)")
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "tieaudit-bench")
    args = ap.parse_args()
    n = int(args.lines) // 100 * 100
    args.dir.mkdir(parents=True, exist_ok=True)
    path = args.dir / f"engines_{n}.parquet"
    if not path.exists():
        make_file(path, n)
    out = {}
    results = {}
    for engine in ("numpy", "duckdb"):
        out[engine] = args.dir / f"engines_{engine}.csv"
        cmd = [*TIEAUDIT, "evaluate", str(path), "-r", *RULES, "-m", *MEASURES, "--memory",
               args.memory, "--jobs", str(args.jobs), "--engine", engine, "-o", str(out[engine])]  # fmt: skip
        results[engine] = run(cmd)
        wall, cpu, rss = results[engine]
        print(f"{engine:>6}: {wall:7.1f} s wall, {cpu:7.1f} s CPU, peak {rss / 1e9:.2f} GB "
              f"(load {os.getloadavg()[0]:.1f})")  # fmt: skip
    a, b = (pd.read_csv(out[e]) for e in ("numpy", "duckdb"))
    cols = ["value", "min", "max", "se"]
    agree = np.allclose(a[cols].to_numpy(float), b[cols].to_numpy(float), rtol=1e-12, atol=1e-12,
                        equal_nan=True)  # fmt: skip
    (w0, c0, r0), (w1, c1, r1) = results["numpy"], results["duckdb"]
    print(f"{n:,} lines; duckdb / default: wall {w1 / w0:.2f}x, CPU {c1 / c0:.2f}x, "
          f"peak {r1 / r0:.2f}x; summaries agree to 1e-12: {agree}")  # fmt: skip


if __name__ == "__main__":
    main()
