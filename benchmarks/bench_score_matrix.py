"""Benchmark: ``score`` on repeat/tile pairs against ``score_matrix`` for one chunk of users.

Run on demand (``python benchmarks/bench_score_matrix.py``); it prints, from one run, for the
``attribute_overlap`` scorer (``weight: rating``) on two generated data sets:

* **genome**: shaped like MovieLens Tag Genome — 13,816 movies with 10 distinct tags each out of
  1,128 (7 from the movie's taste cluster, 3 at random), users with 20-300 rated movies
  (log-uniform; 70% from their own cluster), ratings multiples of 0.5;
* **amazon**: Amazon-like — 200,000 items, two category attributes every item shares, one of 6
  sub-categories and one of 120 leaf categories, a brand (25,000 values) and a store (20,000
  values) drawn Zipf-like, users with 3-50 rated items, integer ratings 1-5;

the seconds and pairs per second of ``score(np.repeat(users, n), np.tile(catalog, c))`` (the pair
arrays built beforehand, not timed) and of ``score_matrix(users, catalog)`` for the same chunk of
``c`` users against the whole catalogue (both best of ``--repeat``), their ratio, the first
``score_matrix`` call on its own (it builds the inverted index that later calls reuse), and the
peak of numpy's allocations during each call (``tracemalloc``, measured in separate untimed
calls). The two results are checked bit-identical (``np.array_equal``).

The chunk is what full-catalog evaluation scores at once: ``chunk_rows_for(n_items,
--chunk-pairs)`` users (default 2,000,000 pairs: 144 genome users, 10 amazon users), a sample of
the users of the history.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np
import pandas as pd

from bench_evaluate import timed  # best of N (this folder is on sys.path when run as a script)
from tieaudit.fullcatalog import DEFAULT_CHUNK_PAIRS, chunk_rows_for
from tieaudit.scorers import AttributeOverlapScorer

GENOME_ITEMS, GENOME_TAGS, TAGS_PER_ITEM, CLUSTERS = 13_816, 1_128, 10, 24
AMAZON_ITEMS, BRANDS, STORES = 200_000, 25_000, 20_000


def make_genome(n_users: int, seed: int = 0):
    """Tag-Genome-like history (20-300 ratings a user, multiples of 0.5) and item attributes."""
    rng = np.random.default_rng(seed)
    items = np.array([f"m{i:06d}" for i in range(GENOME_ITEMS)], dtype=object)
    cluster = rng.integers(0, CLUSTERS, GENOME_ITEMS)
    signature = np.array([rng.choice(GENOME_TAGS, 30, replace=False) for _ in range(CLUSTERS)])
    tags = np.empty((GENOME_ITEMS, TAGS_PER_ITEM), dtype=np.int64)
    for i in range(GENOME_ITEMS):  # data generation only (not timed)
        own = rng.choice(signature[cluster[i]], 7, replace=False)
        rest = np.setdiff1d(np.arange(GENOME_TAGS), own)
        tags[i] = np.concatenate([own, rng.choice(rest, TAGS_PER_ITEM - 7, replace=False)])
    attrs = pd.DataFrame(
        {
            "item_id": np.repeat(items, TAGS_PER_ITEM),
            "attribute": np.char.add("tag", tags.ravel().astype(str)).astype(object),
        }
    )
    pools = [np.flatnonzero(cluster == c) for c in range(CLUSTERS)]
    lengths = np.exp(rng.uniform(np.log(20), np.log(301), n_users)).astype(np.int64)
    primary = rng.integers(0, CLUSTERS, n_users)
    user_col, item_col = [], []
    for u in range(n_users):  # data generation only (not timed)
        k = int(lengths[u])
        mine = rng.choice(pools[primary[u]], min(int(0.7 * k), len(pools[primary[u]])), False)
        chosen = np.unique(np.concatenate([mine, rng.integers(0, GENOME_ITEMS, k - len(mine))]))
        user_col.append(np.full(len(chosen), u))
        item_col.append(chosen)
    user_code = np.concatenate(user_col)
    history = pd.DataFrame(
        {
            "user_id": np.char.add("u", user_code.astype(str)).astype(object),
            "item_id": items[np.concatenate(item_col)],
            "rating": rng.integers(1, 11, len(user_code)) / 2,
        }
    )
    return history, attrs, items


def make_amazon(n_users: int, seed: int = 0):
    """Amazon-like history (3-50 ratings a user, integers 1-5) and item attributes."""
    rng = np.random.default_rng(seed)
    items = np.array([f"B{i:09d}" for i in range(AMAZON_ITEMS)], dtype=object)

    def zipf(n_values: int, prefix: str) -> np.ndarray:
        p = 1.0 / np.arange(1, n_values + 1)
        codes = rng.choice(n_values, AMAZON_ITEMS, p=p / p.sum())
        return np.char.add(prefix, codes.astype(str)).astype(object)

    columns = [
        np.full(AMAZON_ITEMS, "category:Beauty", dtype=object),
        np.full(AMAZON_ITEMS, "category:All Beauty", dtype=object),
        np.char.add("sub:", rng.integers(0, 6, AMAZON_ITEMS).astype(str)).astype(object),
        np.char.add("leaf:", rng.integers(0, 120, AMAZON_ITEMS).astype(str)).astype(object),
        zipf(BRANDS, "brand:"),
        zipf(STORES, "store:"),
    ]
    attrs = pd.DataFrame(
        {
            "item_id": np.tile(items, len(columns)),
            "attribute": np.concatenate(columns),
        }
    )
    lengths = np.clip(rng.geometric(1 / 8, n_users), 3, 50)
    user_code = np.repeat(np.arange(n_users), lengths)
    p = 1.0 / np.arange(1, AMAZON_ITEMS + 1) ** 0.8  # popular items are rated more often
    history = pd.DataFrame(
        {
            "user_id": np.char.add("u", user_code.astype(str)).astype(object),
            "item_id": items[rng.choice(AMAZON_ITEMS, len(user_code), p=p / p.sum())],
            "rating": rng.integers(1, 6, len(user_code)).astype(np.float64),
        }
    )
    return history, attrs, items


def peak_mb(fn) -> float:
    """Peak of the traced (numpy and Python) allocations while ``fn`` runs, in MB."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def run(name: str, history, attrs, catalog, chunk_pairs: int, repeat: int, seed: int) -> None:
    scorer = AttributeOverlapScorer(weight="rating").fit(history, attrs)
    n_items = len(catalog)
    c = chunk_rows_for(n_items, chunk_pairs)
    all_users = pd.unique(history["user_id"].to_numpy(dtype=object))
    users = np.random.default_rng(seed).choice(all_users, c, replace=False).astype(object)
    n_rated = history["user_id"].value_counts().reindex(users).to_numpy()
    pair_users, pair_items = np.repeat(users, n_items), np.tile(catalog, c)
    n = c * n_items

    t_first = time.perf_counter()
    scorer.score_matrix(users, catalog)
    t_first = time.perf_counter() - t_first
    t_pair, s_pair = timed(lambda: scorer.score(pair_users, pair_items), repeat)
    t_mat, s_mat = timed(lambda: scorer.score_matrix(users, catalog), repeat)
    same = np.array_equal(s_pair.reshape(c, n_items), s_mat)
    m_pair = peak_mb(lambda: scorer.score(pair_users, pair_items))
    m_mat = peak_mb(lambda: scorer.score_matrix(users, catalog))
    print(
        f"{name}: {n_items:,} items, {attrs['attribute'].nunique():,} attributes, "
        f"{len(history):,} history rows; chunk of {c} users ({n_rated.min()}-{n_rated.max()} "
        f"rated, median {int(np.median(n_rated))}) x {n_items:,} items = {n:,} pairs"
    )
    print(f"  {'path':<13} {'seconds':>8} {'Mpairs/s':>9} {'peak MB':>8}")
    print(f"  {'score':<13} {t_pair:>8.3f} {n / t_pair / 1e6:>9.2f} {m_pair:>8.0f}")
    print(f"  {'score_matrix':<13} {t_mat:>8.3f} {n / t_mat / 1e6:>9.2f} {m_mat:>8.0f}")
    print(
        f"  ratio {t_pair / t_mat:.1f}x; first score_matrix call (builds the inverted index) "
        f"{t_first:.3f} s; results bit-identical: {same}",
        flush=True,
    )
    if not same:
        raise SystemExit(f"{name}: score_matrix and score disagree")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", choices=["genome", "amazon"], default=["genome", "amazon"])
    ap.add_argument("--chunk-pairs", type=int, default=DEFAULT_CHUNK_PAIRS)
    ap.add_argument("--genome-users", type=int, default=5_000)
    ap.add_argument("--amazon-users", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"attribute_overlap (weight: rating), best of {args.repeat}, "
          f"chunk_pairs={args.chunk_pairs:,}")  # fmt: skip
    if "genome" in args.data:
        history, attrs, items = make_genome(args.genome_users, args.seed)
        run("genome", history, attrs, items, args.chunk_pairs, args.repeat, args.seed)
    if "amazon" in args.data:
        history, attrs, items = make_amazon(args.amazon_users, args.seed)
        run("amazon", history, attrs, items, args.chunk_pairs, args.repeat, args.seed)


if __name__ == "__main__":
    main()
