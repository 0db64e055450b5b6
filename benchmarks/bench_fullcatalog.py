"""Benchmark: full-catalog evaluation rows per second and peak memory (tieaudit.analyses.fullcatalog).

Run on demand (``python benchmarks/bench_fullcatalog.py``); it prints, from one run, for three
row counts (default 1,000 / 3,000 / 10,000) on MovieLens-like data — a catalogue of 13,816 movies
(the ml-25m genome movies) with ~10 genome tags each out of 1,128, users with ~40 rated movies
mostly from their taste cluster, the ``attribute_overlap`` scorer (``weight: rating``):

* seconds and rows per second of :func:`tieaudit.analyses.fullcatalog.full_catalog_candidates` (scoring
  every catalogue item of every row in chunks with the scorer's ``score_matrix``, and reducing
  each row to its summary line with 100 hash seeds, capped at ``k_max=20`` as the pipeline
  does with its measures);
* the mean tie-group size at the held-out item (what the 100 hash seeds are computed over);
* the peak RSS of the process (``resource.getrusage(RUSAGE_SELF).ru_maxrss``), before and after
  the evaluation: each row count runs in its own subprocess so the peaks do not mix.

Then, side by side at the first row count: the same evaluation scoring through ``score`` on
repeated/tiled pair arrays (the path of a scorer without ``score_matrix``), and the ratio; and a
worst case for the hash seeds, a scorer that ties every candidate (every row's tie group is the
whole catalogue). Outputs are checked identical between the two scoring paths.

Memory should stay flat in the number of rows (bounded by the chunk, ``--chunk-pairs``); time
should grow linearly.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
import pandas as pd

N_ITEMS = 13_816
N_TAGS = 1_128
TAGS_PER_ITEM = 10
N_CLUSTERS = 24


def make_data(n_users: int, seed: int = 0):
    """MovieLens-like history, held-out rows, catalogue and item attributes."""
    rng = np.random.default_rng(seed)
    items = np.array([f"m{i:06d}" for i in range(N_ITEMS)], dtype=object)
    cluster = rng.integers(0, N_CLUSTERS, N_ITEMS)
    signature = rng.integers(0, N_TAGS, (N_CLUSTERS, 30))
    own = signature[cluster][np.arange(N_ITEMS)[:, None], rng.integers(0, 30, (N_ITEMS, 7))]
    other = rng.integers(0, N_TAGS, (N_ITEMS, TAGS_PER_ITEM - 7))
    tags = np.concatenate([own, other], axis=1)
    attrs = pd.DataFrame(
        {
            "item_id": np.repeat(items, TAGS_PER_ITEM),
            "attribute": np.char.add("tag", tags.ravel().astype(str)).astype(object),
        }
    ).drop_duplicates()
    pools = [np.flatnonzero(cluster == c) for c in range(N_CLUSTERS)]
    users, hist_items, ratings = [], [], []
    held_user, held_item = [], []
    primary = rng.integers(0, N_CLUSTERS, n_users)
    lengths = np.clip(rng.geometric(1 / 40, n_users), 20, 300)
    for u in range(n_users):  # data generation only (not timed)
        k = int(lengths[u])
        mine = rng.choice(pools[primary[u]], size=min(int(0.7 * k), len(pools[primary[u]])),
                          replace=False)  # fmt: skip
        chosen = np.unique(np.concatenate([mine, rng.integers(0, N_ITEMS, k - len(mine))]))
        rng.shuffle(chosen)
        uid = f"u{u:07d}"
        users += [uid] * (len(chosen) - 1)
        hist_items.append(chosen[:-1])
        ratings.append(rng.integers(1, 11, len(chosen) - 1) / 2)
        held_user.append(uid)
        held_item.append(items[chosen[-1]])
    history = pd.DataFrame(
        {
            "user_id": users,
            "item_id": items[np.concatenate(hist_items)],
            "rating": np.concatenate(ratings),
        }
    )
    rows = pd.DataFrame({"user_id": held_user, "item_id": held_item})
    return history, rows, items, attrs


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


class _PairsOnly:
    """The scorer without its ``score_matrix``: full-catalog scoring goes through ``score``."""

    def __init__(self, inner):
        self.inner = inner

    def score(self, users, items):
        return self.inner.score(users, items)


class _AllTied:
    """Every candidate scores 0: every row's tie group is the whole catalogue."""

    def score(self, users, items):
        return np.zeros(len(users))

    def score_matrix(self, users, items):
        return np.zeros((len(users), len(items)))


def child(n_rows: int, chunk_pairs: int, mode: str) -> dict:
    from tieaudit.analyses.fullcatalog import chunk_rows_for, full_catalog_candidates
    from tieaudit.scorers import get_scorer

    history, rows, catalog, attrs = make_data(n_rows)
    scorer = get_scorer("attribute_overlap", weight="rating").fit(history, attrs)
    if mode == "pairs":
        scorer = _PairsOnly(scorer)
    elif mode == "tied":
        scorer = _AllTied()
    before = peak_mb()
    t0 = time.perf_counter()
    out = full_catalog_candidates(rows, history, catalog, scorer, chunk_pairs=chunk_pairs,
                                  k_max=20)  # fmt: skip
    secs = time.perf_counter() - t0
    digest = hashlib.sha256(pd.util.hash_pandas_object(out, index=False).values).hexdigest()
    return {
        "rows": n_rows,
        "mode": mode,
        "seconds": secs,
        "rows_per_s": n_rows / secs,
        "pairs_per_s": n_rows * len(catalog) / secs,
        "tie_size": float(1 + out["n_tied"].mean()),
        "chunk_rows": chunk_rows_for(len(catalog), chunk_pairs),
        "peak_mb_before": before,
        "peak_mb": peak_mb(),
        "digest": digest,
    }


def run(n: int, chunk_pairs: int, mode: str) -> dict:
    res = subprocess.run(
        [sys.executable, __file__, "--child", str(n), "--chunk-pairs", str(chunk_pairs),
         "--mode", mode],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(res.stdout.strip().splitlines()[-1])


def show(r: dict) -> None:
    print(f"{r['mode']:>7} {r['rows']:>7,} {r['seconds']:>8.1f} {r['rows_per_s']:>8.0f} "
          f"{r['pairs_per_s'] / 1e6:>9.1f} {r['tie_size']:>9.1f} {r['chunk_rows']:>6} "
          f"{r['peak_mb_before']:>8.0f} MB {r['peak_mb']:>6.0f} MB", flush=True)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000, 3_000, 10_000])
    ap.add_argument("--chunk-pairs", type=int, default=2_000_000)
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="matrix", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.chunk_pairs, args.mode)))
        return
    print(f"full catalogue: {N_ITEMS:,} items, attribute_overlap, 100 hash seeds (k_max=20), "
          f"chunk_pairs={args.chunk_pairs:,}, load average "
          f"{'/'.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip
    print(f"{'scoring':>7} {'rows':>7} {'seconds':>8} {'rows/s':>8} {'Mpairs/s':>9} "
          f"{'tie size':>9} {'chunk':>6} {'RSS before':>11} {'peak RSS':>9}")  # fmt: skip
    results = []
    for n in args.rows:
        results.append(run(n, args.chunk_pairs, "matrix"))
        show(results[-1])
    n = args.rows[0]
    pairs = run(n, args.chunk_pairs, "pairs")
    show(pairs)
    tied = run(n, args.chunk_pairs, "tied")
    show(tied)
    same = "identical" if pairs["digest"] == results[0]["digest"] else "DIFFERENT"
    print(f"\nat {n:,} rows: score_matrix {results[0]['seconds']:.1f} s vs score on pairs "
          f"{pairs['seconds']:.1f} s: {pairs['seconds'] / results[0]['seconds']:.1f}x; "
          f"outputs {same}")  # fmt: skip
    print(f"every candidate tied (tie group = catalogue, 100 seeds): {tied['rows_per_s']:.0f} rows/s")
    print(f"load average at the end {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
