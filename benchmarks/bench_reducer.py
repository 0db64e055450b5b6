"""Benchmark: the full-catalog reducer against the one-pass limit, on the same score matrix.

Run on demand (``python benchmarks/bench_reducer.py``); it prints, from one run, for each size
(default 500 x 50,000 and 2,000 x 200,000 users x items):

* the matrix: integer scores 1-5 on 20% of the pairs and 0 on the other 80%, stored float64 (as a
  scorer's block is; 3.2 GB at 2,000 x 200,000), so a held-out item drawn uniformly ties with
  ~80% of the catalogue at 0, each user with 20 random history items;
* **limit**: one numpy pass over the stored matrix, a chunk of rows at a time, that finds per row
  the candidates above and tied with the held-out item (``s > r`` and ``s == r``, counted per
  row), the history items taken off afterwards (their scores gathered): the least any exact
  reduction must do. Its counts are checked equal to the reducer's ``n_higher``/``n_tied``;
* **reducer**: :func:`tieaudit.analyses.fullcatalog.full_catalog_candidates` with a
  :class:`~tieaudit.scorers.MatrixScorer` over the same matrix, every recorded rule
  (``input_order``, ``item_id``, ``docno_desc``, ``hash:0`` .. ``hash:99``), ``k_max=20`` (the
  largest cutoff of the default measures): scoring (the matrix's rows widened to float64),
  counting, the capped hash counts and the summary table, everything;
* their ratio (the target: at most 5x); at the first size also the reducer with exact
  (uncapped, ``k_max=None``) hash counts, and at every size a worst case for the cap: a
  constant matrix, every candidate tied (``g = 0``, ``t`` = the catalogue), where every row's
  100 seeds must each count 20 members below the held-out item's key. (The constant is written
  into the matrix: a never-written ``numpy.zeros`` array reads the kernel's shared zero page,
  which stays in cache and makes both passes look faster than real memory allows.)
* **fixed**: the reducer on the first quarter of the rows, in the same process. The reducer has
  per-run costs that do not grow with the rows (sorting and indexing the catalogue ids, hashing
  item ids, checking ``score_matrix`` against ``score`` on the first chunk); the **marginal**
  ratio, ``(reducer - fixed) / (3/4 limit)``, is what the ratio tends to with many rows (the
  paper's 30,000).

Each measurement is repeated ``--repeat`` times (default 3), the limit pass, the reducer and the
reducer on a quarter of the rows taken in turn, and the fastest of each is reported (its CPU
seconds beside): the ratios compare passes run side by side, under the same load.

Each size runs in its own subprocess (peak RSS, ``ru_maxrss``); the load average is printed at
the start and the end of each (the machine may be shared: compare the ratios, measured side by
side, more than the seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
import pandas as pd

K_MAX = 20
SEEDS = range(100)
HISTORY = 20


def make_matrix(n_users: int, n_items: int, seed: int = 0, constant: bool = False):
    """Scores (float64, integers), users, items, rows (held-out items) and history."""
    rng = np.random.default_rng(seed)
    scores = np.zeros((n_users, n_items), dtype=np.float64)
    if constant:
        scores.fill(1.0)  # written: real pages, not the shared zero page
    else:
        step = max(1, (1 << 24) // n_items)
        for lo in range(0, n_users, step):  # row blocks: no full-size int64 temporary
            hi = min(lo + step, n_users)
            block = rng.integers(1, 6, (hi - lo, n_items)).astype(np.float64)
            block[rng.random((hi - lo, n_items)) < 0.8] = 0.0
            scores[lo:hi] = block
    users = np.array([f"u{u:06d}" for u in range(n_users)], dtype=object)
    items = np.array([f"i{i:07d}" for i in range(n_items)], dtype=object)
    rows = pd.DataFrame({"user_id": users, "item_id": items[rng.integers(0, n_items, n_users)]})
    seen = rng.integers(0, n_items, n_users * HISTORY)
    history = pd.DataFrame({"user_id": np.repeat(users, HISTORY), "item_id": items[seen]})
    return scores, users, items, rows, history


def limit_pass(scores, rows, history, items, chunk_rows: int):
    """Per row: candidates above and tied with the held-out item (see the module docstring)."""
    n_users, n_items = scores.shape
    col = pd.Index(items, dtype=object)
    pos = col.get_indexer(rows["item_id"].to_numpy(dtype=object))
    user_index = pd.Index(rows["user_id"].to_numpy(dtype=object), dtype=object)
    h_row = user_index.get_indexer(history["user_id"].to_numpy(dtype=object))
    h_item = col.get_indexer(history["item_id"].to_numpy(dtype=object))
    key = np.unique(h_row.astype(np.int64) * n_items + h_item)  # distinct history pairs
    h_row, h_item = key // n_items, key % n_items
    keep = h_item != pos[h_row]  # the held-out item stays a candidate
    h_row, h_item = h_row[keep], h_item[keep]
    starts = np.searchsorted(h_row, np.arange(0, n_users + chunk_rows, chunk_rows))
    above = np.empty(n_users, dtype=np.int64)
    tied = np.empty(n_users, dtype=np.int64)
    mask = np.empty(n_items, dtype=bool)
    for j, lo in enumerate(range(0, n_users, chunk_rows)):
        hi = min(lo + chunk_rows, n_users)
        s = scores[lo:hi]
        r = s[np.arange(hi - lo), pos[lo:hi]]
        for k in range(hi - lo):
            above[lo + k] = np.count_nonzero(np.greater(s[k], r[k], out=mask))
            tied[lo + k] = np.count_nonzero(np.equal(s[k], r[k], out=mask)) - 1
        a, b = starts[j], starts[j + 1]
        hr, hs = h_row[a:b] - lo, s[h_row[a:b] - lo, h_item[a:b]]
        above[lo:hi] -= np.bincount(hr[hs > r[hr]], minlength=hi - lo)
        tied[lo:hi] -= np.bincount(hr[hs == r[hr]], minlength=hi - lo)
    return above, tied


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def timed(best: dict, name: str, fn):
    """Run ``fn``; keep the fastest wall time (and its CPU seconds) under ``name``."""
    t0, c0 = time.perf_counter(), time.process_time()
    result = fn()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if wall < best.get(f"{name}_s", float("inf")):
        best[f"{name}_s"], best[f"{name}_cpu"] = wall, cpu
    return result


def child(n_users: int, n_items: int, exact: bool, constant: bool, repeat: int) -> dict:
    from tieaudit.analyses.fullcatalog import DEFAULT_CHUNK_PAIRS, chunk_rows_for, full_catalog_candidates
    from tieaudit.scorers import MatrixScorer

    scores, users, items, rows, history = make_matrix(n_users, n_items, constant=constant)
    chunk = chunk_rows_for(n_items, DEFAULT_CHUNK_PAIRS)
    out = {"users": n_users, "items": n_items, "load_start": load(), "chunk_rows": chunk}
    scorer = MatrixScorer(scores, users, items)
    quarter = rows.iloc[: max(1, n_users // 4)]

    def reduce(part: pd.DataFrame) -> pd.DataFrame:
        return full_catalog_candidates(part, history, items, scorer, seeds=SEEDS, chunk_rows=chunk,
                                       k_max=None if exact else K_MAX)  # fmt: skip

    for _ in range(repeat):
        above, tied = timed(out, "limit", lambda: limit_pass(scores, rows, history, items, chunk))
        table = timed(out, "reducer", lambda: reduce(rows))
        timed(out, "quarter", lambda: reduce(quarter))
    out["quarter_rows"] = len(quarter)
    if not (np.array_equal(table["n_higher"], above) and np.array_equal(table["n_tied"], tied)):
        raise SystemExit("the limit pass and the reducer disagree")
    out["tie_size"] = float(1 + table["n_tied"].mean())
    out["capped_rows"] = float((table["n_higher"] < K_MAX).mean())
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["load_end"] = load()
    return out


def run(
    n_users: int, n_items: int, repeat: int, exact: bool = False, constant: bool = False
) -> dict:
    cmd = [sys.executable, __file__, "--child", str(n_users), str(n_items), "--repeat", str(repeat)]
    cmd += ["--exact"] * exact + ["--constant"] * constant
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def show(r: dict, what: str) -> None:
    pairs = r["users"] * r["items"]
    marginal = (r["reducer_s"] - r["quarter_s"]) / (
        r["limit_s"] * (1 - r["quarter_rows"] / r["users"])
    )
    print(
        f"{r['users']:>6,} x {r['items']:>7,} {what:<22} {r['tie_size']:>9,.0f} "
        f"{r['limit_s']:>7.2f} {pairs / r['limit_s'] / 1e6:>7.0f} "
        f"{r['reducer_s']:>9.2f} {r['reducer_cpu']:>7.2f} {pairs / r['reducer_s'] / 1e6:>7.0f} "
        f"{r['quarter_s']:>7.2f} "
        f"{r['reducer_s'] / r['limit_s']:>6.1f}x {r['reducer_cpu'] / r['limit_cpu']:>6.1f}x "
        f"{marginal:>8.1f}x {r['peak_mb']:>6.0f} MB  "
        f"{r['load_start']} -> {r['load_end']}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", default=["500x50000", "2000x200000"])
    ap.add_argument("--repeat", type=int, default=3, help="runs of each pass; the fastest counts")
    ap.add_argument("--no-exact", action="store_true", help="skip the exact (uncapped) run")
    ap.add_argument("--child", nargs=2, type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--exact", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--constant", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(child(*args.child, args.exact, args.constant, args.repeat)))
        return
    print(f"reducer (every recorded rule, 100 hash seeds, k_max={K_MAX}) against the limit pass, "
          f"fastest of {args.repeat}; seconds are wall, the reducer's CPU beside; 'quarter': the "
          "reducer on the first quarter of the rows; ratios of wall and of CPU seconds, and the "
          "marginal ratio (reducer - quarter) / (3/4 limit)")  # fmt: skip
    print(f"{'users x items':>16} {'matrix':<22} {'tie size':>9} {'limit s':>7} {'Mpair/s':>7} "
          f"{'reducer s':>9} {'CPU s':>7} {'Mpair/s':>7} {'quarter':>7} {'ratio':>7} {'CPU':>7} "
          f"{'marginal':>9} {'peak':>9}  load 1/5/15 min")  # fmt: skip
    for i, size in enumerate(args.sizes):
        n_users, n_items = (int(x) for x in size.split("x"))
        show(run(n_users, n_items, args.repeat), "80% zeros")
        if i == 0 and not args.no_exact:  # the uncapped reference: once (tens of seconds)
            show(run(n_users, n_items, 1, exact=True), "80% zeros, exact hash")
        show(run(n_users, n_items, args.repeat, constant=True), "all tied")


if __name__ == "__main__":
    main()
