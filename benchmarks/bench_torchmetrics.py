"""Benchmark: ``tieaudit.torchmetrics.RetrievalNormalizedDCG`` against torchmetrics' own
``RetrievalNormalizedDCG`` inside a loop: ``--queries`` queries (default 1M) of ``--candidates``
candidates (default 100), fed in batches of ``--batch`` queries (default 1,000) as a validation
loop feeds them (flat ``preds``, ``target``, ``indexes`` of one shape), then ``compute()``.

Run on demand (``python benchmarks/bench_torchmetrics.py``). Each metric runs in a process of its
own, which prints its peak RSS (``ru_maxrss``: the process's maximum resident set) beside the
RSS after the imports and the first batch generated (the baseline both share), the seconds in
``update`` and in ``compute`` (the batches' generation is outside both) and the value; the
parent prints the ratios. The batches are generated from ``--seed`` batch by batch, the same in
both processes: scores on 20 levels in float32 (ties in every query), about 5% relevant
candidates, at least one a query. Both take ``top_k=10``; their values must agree to 1e-6
(torchmetrics computes in float32), which is checked.

torchmetrics keeps every prediction, target and index in list states until ``compute``, then
concatenates them and loops over the queries; tieaudit's metric evaluates each batch when it
comes and keeps five float64 sums. Targets (issue 36): tieaudit's peak above the baseline at
most 1/20 of torchmetrics', its time at most 1x torchmetrics'.

Measured on the 2-core machine, 2026-12-06, load 9 to 11 (the table in
``docs/guide/benchmarks.md``): tieaudit 242.8 s and 0.040 GB above the baseline, torchmetrics
2253 s and 8.0 GB: 0.005x the memory above the baseline, 0.108x the time.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import time


def batches(queries: int, candidates: int, batch: int, seed: int):
    """``(preds, target, indexes)`` of each batch, flat (torchmetrics' usual form)."""
    import numpy as np
    import torch

    for b, start in enumerate(range(0, queries, batch)):
        n = min(batch, queries - start)
        rng = np.random.default_rng([seed, b])
        preds = rng.integers(0, 20, (n, candidates)).astype(np.float32) / 4
        target = rng.random((n, candidates)) < 0.05
        target[np.arange(n), rng.integers(0, candidates, n)] = True  # one relevant at least
        idx = np.repeat(np.arange(start, start + n, dtype=np.int64), candidates)
        yield (torch.from_numpy(preds.reshape(-1)), torch.from_numpy(target.reshape(-1)),
               torch.from_numpy(idx))  # fmt: skip


def peak_rss() -> int:
    """The process's peak resident set so far, in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def one(which: str, queries: int, candidates: int, batch: int, seed: int) -> dict:
    """Run one metric over every batch; what the parent prints."""
    if which == "tieaudit":
        from tieaudit.torchmetrics import RetrievalNormalizedDCG
    else:
        from torchmetrics.retrieval import RetrievalNormalizedDCG
    metric = RetrievalNormalizedDCG(top_k=10)
    gen = batches(queries, candidates, batch, seed)
    first = next(gen)
    baseline = peak_rss()
    update = 0.0
    for preds, target, idx in itertools.chain([first], gen):
        t = time.perf_counter()
        metric.update(preds, target, indexes=idx)
        update += time.perf_counter() - t
    t = time.perf_counter()
    value = float(metric.compute())
    compute = time.perf_counter() - t
    return {"which": which, "baseline": baseline, "peak": peak_rss(), "update": update,
            "compute": compute, "value": value}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=1_000_000)
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=["tieaudit", "torchmetrics"],
                        help="run one metric in this process and print its result as JSON")  # fmt: skip
    args = parser.parse_args()
    sizes = (args.queries, args.candidates, args.batch, args.seed)
    if args.only:
        print(json.dumps(one(args.only, *sizes)))
        return
    print(f"{args.queries:,} queries x {args.candidates} candidates, batches of {args.batch:,} "
          f"queries, nDCG@10; load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    res = {}
    for which in ("tieaudit", "torchmetrics"):
        cmd = [sys.executable, __file__, "--only", which, "--queries", str(args.queries),
               "--candidates", str(args.candidates), "--batch", str(args.batch),
               "--seed", str(args.seed)]  # fmt: skip
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        r = res[which] = json.loads(out.strip().splitlines()[-1])
        print(f"{which:>12}: update {r['update']:8.1f} s, compute {r['compute']:8.1f} s, "
              f"peak RSS {r['peak'] / 1e9:6.2f} GB ({(r['peak'] - r['baseline']) / 1e9:6.3f} GB "
              f"above the baseline {r['baseline'] / 1e9:.2f} GB), nDCG@10 {r['value']:.6f}; "
              f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    ta, tm = res["tieaudit"], res["torchmetrics"]
    assert abs(ta["value"] - tm["value"]) <= 1e-6, (ta["value"], tm["value"])
    grown = (ta["peak"] - ta["baseline"]) / max(tm["peak"] - tm["baseline"], 1)
    seconds = (ta["update"] + ta["compute"]) / (tm["update"] + tm["compute"])
    print(f"tieaudit / torchmetrics: peak above the baseline {grown:.4f}x (target <= 0.05), "
          f"peak {ta['peak'] / tm['peak']:.3f}x, time {seconds:.3f}x (target <= 1)")  # fmt: skip


if __name__ == "__main__":
    main()
