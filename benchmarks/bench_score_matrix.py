"""Benchmark: each built-in scorer's ``score_matrix`` against a plain sparse-product baseline
and against ``score`` on repeat/tile pairs, for one chunk of users.

Run on demand (``python benchmarks/bench_score_matrix.py``); it prints, from one run, for the
``attribute_overlap`` and ``residualized_attribute`` scorers (``weight: rating``) and
``popularity`` on two generated data sets:

* **genome**: shaped like MovieLens Tag Genome — 13,816 movies with 10 distinct tags each out of
  1,128 (7 from the movie's taste cluster, 3 at random), users with 20-300 rated movies
  (log-uniform; 70% from their own cluster), ratings multiples of 0.5;
* **amazon**: Amazon-like — 200,000 items, two category attributes every item shares, one of 6
  sub-categories and one of 120 leaf categories, a brand (25,000 values) and a store (20,000
  values) drawn Zipf-like, users with 3-50 rated items, integer ratings 1-5;

the seconds and pairs per second (best of ``--repeat``) of

* ``score(np.repeat(users, n), np.tile(catalog, c))`` (the pair arrays built beforehand, not
  timed), the path of a scorer without ``score_matrix``;
* ``score_matrix(users, catalog)`` for the same chunk of ``c`` users against the whole
  catalogue, passed as full-catalog evaluation passes it (one read-only array, so the scorer
  recognises it without comparing its ids); its first call, which builds what later calls
  reuse, is reported on its own;
* the **baseline**: the same block from matrices built beforehand with pandas and
  ``scipy.sparse``, outside the timing — ``(A @ W).T`` with ``A`` the items x attributes
  incidence (CSR) and ``W`` the users' attribute weights (dense), minus the items' fitted values
  for ``residualized_attribute``; the items' popularity row repeated for ``popularity``: the
  floor for a scorer that must also find the users' weights and the items' rows;

their ratios, and the peak of numpy's allocations during each scorer call (``tracemalloc``,
measured in separate untimed calls). All three results are checked bit-identical
(``np.array_equal``).

The chunk is what full-catalog evaluation scores at once: ``chunk_rows_for(n_items,
--chunk-pairs)`` users (default 2,000,000 pairs: 144 genome users, 10 amazon users), a sample of
the users of the history.
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc

import numpy as np
import pandas as pd

from scipy import sparse

from bench_evaluate import timed  # best of N (this folder is on sys.path when run as a script)
from tieaudit.analyses.fullcatalog import DEFAULT_CHUNK_PAIRS, calibration_sample, chunk_rows_for
from tieaudit.scorers import get_scorer

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


def baseline(name: str, scorer, history, attrs, users, catalog):
    """The block as a plain product of matrices built here (untimed); returns the timed part."""
    if name == "popularity":
        counts = history["item_id"].value_counts()
        row = counts.reindex(catalog, fill_value=0).to_numpy(dtype=np.float64)
        return lambda: np.repeat(row[None, :], len(users), axis=0)
    pairs = attrs[["item_id", "attribute"]].drop_duplicates()
    attr_code, attr_names = pd.factorize(pairs["attribute"], sort=True)
    item_pos = pd.Index(catalog).get_indexer(pairs["item_id"])
    keep = item_pos >= 0
    incidence = sparse.csr_array(
        (np.ones(int(keep.sum())), (item_pos[keep], attr_code[keep])),
        shape=(len(catalog), len(attr_names)),
    )
    incidence.sort_indices()
    mine = history[history["user_id"].isin(users)][["user_id", "item_id", "rating"]]
    touched = mine.merge(pairs, on="item_id")
    weights = touched.assign(rating=touched["rating"].fillna(1.0)).groupby(
        ["user_id", "attribute"], sort=False)["rating"].sum()  # fmt: skip
    dense = np.zeros((len(attr_names), len(users)))
    col = pd.Index(users).get_indexer(weights.index.get_level_values(0))
    dense[attr_names.get_indexer(weights.index.get_level_values(1)), col] = weights.to_numpy()
    if name == "attribute_overlap":
        return lambda: np.ascontiguousarray((incidence @ dense).T)
    b0, b1, b2 = (float(c) for c in scorer.coef_)
    x1, x2 = scorer.covariates(catalog)
    fitted = b0 + b1 * x1 + b2 * x2
    return lambda: np.ascontiguousarray((incidence @ dense).T) - fitted[None, :]


def run(data: str, history, attrs, catalog, chunk_pairs: int, repeat: int, seed: int) -> None:
    n_items = len(catalog)
    c = chunk_rows_for(n_items, chunk_pairs)
    catalog = np.array(catalog, dtype=object)  # as full_catalog_candidates passes it: read-only
    catalog.flags.writeable = False
    all_users = pd.unique(history["user_id"].to_numpy(dtype=object))
    users = np.random.default_rng(seed).choice(all_users, c, replace=False).astype(object)
    n_rated = history["user_id"].value_counts().reindex(users).to_numpy()
    n = c * n_items
    print(
        f"{data}: {n_items:,} items, {attrs['attribute'].nunique():,} attributes, "
        f"{len(history):,} history rows; chunk of {c} users ({n_rated.min()}-{n_rated.max()} "
        f"rated, median {int(np.median(n_rated))}) x {n_items:,} items = {n:,} pairs"
    )
    print(f"  {'scorer':<23} {'score':>8} {'matrix':>8} {'baseline':>8}  (Mpairs/s)  "
          f"{'score/matrix':>12} {'matrix/baseline':>15} {'first call':>10} {'peak MB':>14}")  # fmt: skip
    for name in ("attribute_overlap", "residualized_attribute", "popularity"):
        show_scorer(name, history, attrs, users, catalog, repeat, seed)
    print("  (peak MB: score / score_matrix; all three results bit-identical)")


def show_scorer(name: str, history, attrs, users, catalog, repeat: int, seed: int) -> None:
    """One line of the table: the three paths of ``name`` on the chunk ``users x catalog``."""
    c, n_items = len(users), len(catalog)
    n = c * n_items
    pair_users, pair_items = np.repeat(users, n_items), np.tile(catalog, c)
    options = {} if name == "popularity" else {"weight": "rating"}
    scorer = get_scorer(name, **options).fit(history, attrs)
    if name == "residualized_attribute":
        scorer.calibrate(calibration_sample(pd.DataFrame({"user_id": users}), catalog,
                                            50_000, seed=seed))  # fmt: skip
    t_first = time.perf_counter()
    scorer.score_matrix(users, catalog)
    t_first = time.perf_counter() - t_first
    t_pair, s_pair = timed(lambda: scorer.score(pair_users, pair_items), repeat)
    t_mat, s_mat = timed(lambda: scorer.score_matrix(users, catalog), repeat)
    t_base, s_base = timed(baseline(name, scorer, history, attrs, users, catalog), repeat)
    same = np.array_equal(s_pair.reshape(c, n_items), s_mat) and np.array_equal(s_mat, s_base)
    m_pair = peak_mb(lambda: scorer.score(pair_users, pair_items))
    m_mat = peak_mb(lambda: scorer.score_matrix(users, catalog))
    print(
        f"  {name:<23} {n / t_pair / 1e6:>8.1f} {n / t_mat / 1e6:>8.1f} "
        f"{n / t_base / 1e6:>8.1f}  {'':>10}  {t_pair / t_mat:>11.1f}x {t_mat / t_base:>14.2f}x "
        f"{t_first:>9.3f}s {m_pair:>6.0f} / {m_mat:>5.0f}",
        flush=True,
    )
    if not same:
        raise SystemExit(f"{name}: score, score_matrix and the baseline disagree")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", choices=["genome", "amazon"], default=["genome", "amazon"])
    ap.add_argument("--chunk-pairs", type=int, default=DEFAULT_CHUNK_PAIRS)
    ap.add_argument("--genome-users", type=int, default=5_000)
    ap.add_argument("--amazon-users", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"best of {args.repeat}, chunk_pairs={args.chunk_pairs:,}, load average "
          f"{'/'.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip
    if "genome" in args.data:
        history, attrs, items = make_genome(args.genome_users, args.seed)
        run("genome", history, attrs, items, args.chunk_pairs, args.repeat, args.seed)
    if "amazon" in args.data:
        history, attrs, items = make_amazon(args.amazon_users, args.seed)
        run("amazon", history, attrs, items, args.chunk_pairs, args.repeat, args.seed)
    print(f"load average at the end {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
