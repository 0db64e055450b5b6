"""Format-faithful synthetic stand-ins for the real datasets.

The real datasets may never be committed or downloaded in tests, so the demo pipeline, the parsers'
tests and the benchmarks run on files written here. Each generator writes small files **in the real
layout** -- the real file and zip member names, gzip and zip containers, CSV headers and quoting,
JSON field names, field order and value types (nested dicts and lists included), and timestamp
units -- so that a parser which reads these files reads the real ones too. The numbers in them are
invented.

API
---
:func:`generate` dispatches on the dataset name and returns ``{logical name: written path}``;
:func:`generate_amazon2023`, :func:`generate_movielens`, :func:`generate_genome2021` and
:func:`generate_generic` are the per-dataset functions (same keywords). Every file is written to a
temporary file in the destination folder and renamed into place, so a reader never sees a partial
file. Output is a pure function of the arguments: the same seed gives byte-identical files (gzip
headers carry ``mtime=0`` and no file name; zip entries carry a fixed timestamp, fixed permissions
and a fixed "made by" system), a different seed gives different files. Randomness comes from
:func:`tieaudit.seeds.make_rng` with the seed and a stream name per purpose. (Identical bytes assume
the same zlib build: deflate output is fixed for a given zlib version and level, not across all.)

Tie structure
-------------
Attribute-overlap scorers tie heavily on the real data because attributes come from small
vocabularies. The generators reproduce that on purpose: items belong to one of a few "taste
clusters"; each cluster has its own couple of stores/brands, category path, item form, scent and
skin type (Amazon), genres and signature genome tags (MovieLens, Tag Genome 2021), or attribute
values (generic); items take their cluster's values most of the time. Users have a primary cluster
(sometimes a secondary one) and most of their interactions fall in it. So a held-out item usually
shares attributes with the user's history, while most sampled negatives (from other clusters)
share none: overlap scores are mostly zero with a few small integer levels, and the held-out item
is often tied with several negatives from its own cluster. Genome relevances are mostly low
(``Beta(1.1, 12)``, mean ~0.08) with a few high signature tags per movie, so thresholding at 0.5 or
keeping the top few tags gives a handful of tags per movie from a limited set.

Scale
-----
``scale`` is the number of users. Item counts follow the real datasets' item/user ratios (with a
floor so small scales still have a few clusters), and every count can be set explicitly:

=============  ==========================================================================
amazon2023     benchmark items = max(40, ceil(0.285 * scale)) (207,649 items / 729,576
               users in the real 5-core Beauty_and_Personal_Care benchmark); metadata items
               = 4.95 x benchmark items (1,028,914 metadata records); override with
               ``n_items=`` (metadata items; the CLI's ``--items``) and ``n_bench_items=``.
movielens      movies = max(400, ceil(0.384 * scale)) (62,423 movies / 162,541 users in
               ml-25m); 40% of the movies carry genome scores (ml-25m: 13,816); 100 genome
               tags (ml-25m: 1,128); each user rates 20..300 movies, ~40 on average (ml-25m:
               154), at most a quarter of the catalogue, about 40% of them genome movies of
               the user's cluster; override with ``n_items=`` and ``n_tags=`` (up to 2,000,
               e.g. the real 1,128).
genome2021     movies = max(400, ceil(0.342 * scale)) (84,661 movies / 247,383 users); 40%
               carry scores (real: 9,734); 100 scored tags + 2 unscored ones (real: 1,084 of
               1,094); ratings as for movielens; override with ``n_items=`` and ``n_tags=``.
generic        items = max(40, ceil(0.5 * scale)); override with ``n_items=``.
=============  ==========================================================================

Amazon metadata is written in fixed blocks of items, each from its own seeded stream, and streamed
through gzip, so the metadata file for a million items (about 2.8 GB uncompressed, ~2.8 KB per
record like the real one) never sits in memory; the block layout does not depend on any option, so
``n_items`` changes only how many records are written.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tieaudit.data.gen import (
    _RATING_P_IN,
    _RATING_P_OUT,
    _atomic_file,
    _check_scale,
    _choose_counts,
    _cluster_count,
    _csv_line_writer,
    _csv_row,
    _fill_distinct,
    _gzip_file,
    _increasing_times,
    _Lines,
    _random_codes,
    _zip_file,
    _zipf_cdf,
)
from tieaudit.seeds import make_rng

__all__ = [
    "AMAZON_CATEGORY",
    "DATASETS",
    "GENOME_2021_DIR",
    "GENOME_2021_MEMBERS",
    "GENOME_2021_ZIP",
    "ML_25M_DIR",
    "ML_25M_MEMBERS",
    "ML_25M_ZIP",
    "amazon_file_names",
    "generate",
    "generate_amazon2023",
    "generate_generic",
    "generate_genome2021",
    "generate_movielens",
]

DATASETS = ("amazon2023", "movielens", "genome2021", "generic")

AMAZON_CATEGORY = "Beauty_and_Personal_Care"

ML_25M_ZIP = "ml-25m.zip"
ML_25M_DIR = "ml-25m"
#: Member order of the real ml-25m.zip (as ``unzip`` lists it): the folder entry, then the files.
ML_25M_MEMBERS = (
    "ml-25m/",
    "ml-25m/tags.csv",
    "ml-25m/links.csv",
    "ml-25m/README.txt",
    "ml-25m/ratings.csv",
    "ml-25m/genome-tags.csv",
    "ml-25m/genome-scores.csv",
    "ml-25m/movies.csv",
)

GENOME_2021_ZIP = "genome_2021.zip"
GENOME_2021_DIR = "movie_dataset_public_final"
#: Members written for Tag Genome 2021: the ``raw/`` and ``scores/`` files of the real archive
#: (names from its README). The real archive also has ``processed/`` (features_r.csv, 10folds/)
#: and ``predictions/``; those are derived experiment files and are not generated.
GENOME_2021_MEMBERS = (
    f"{GENOME_2021_DIR}/",
    f"{GENOME_2021_DIR}/README.txt",
    f"{GENOME_2021_DIR}/raw/",
    f"{GENOME_2021_DIR}/raw/metadata.json",
    f"{GENOME_2021_DIR}/raw/ratings.json",
    f"{GENOME_2021_DIR}/raw/reviews.json",
    f"{GENOME_2021_DIR}/raw/survey_answers.json",
    f"{GENOME_2021_DIR}/raw/tag_count.json",
    f"{GENOME_2021_DIR}/raw/tags.json",
    f"{GENOME_2021_DIR}/scores/",
    f"{GENOME_2021_DIR}/scores/glmer.csv",
    f"{GENOME_2021_DIR}/scores/tagdl.csv",
)

# Ratios of the real datasets (see the module docstring).
AMAZON_BENCH_ITEMS_PER_USER = 0.285
AMAZON_META_ITEMS_PER_BENCH_ITEM = 4.95
ML_MOVIES_PER_USER = 0.384
GENOME21_MOVIES_PER_USER = 0.342
GENOME_FRACTION = 0.4
GENERIC_ITEMS_PER_USER = 0.5

_MS_2008 = 1_199_145_600_000  # 2008-01-01 UTC, ms
_MS_2019 = 1_546_300_800_000  # 2019-01-01: older Amazon reviews carry whole seconds
_MS_END = 1_694_995_200_000  # 2023-09-18: the 2023 crawl ends in Sep 2023
_S_ML_START = 789_652_009  # 1995-01-09, first ml-25m rating
_S_ML_END = 1_574_327_703  # 2019-11-21, last ml-25m rating
_S_GENERIC_START = 1_420_070_400  # 2015-01-01
_S_GENERIC_END = 1_696_118_400  # 2023-10-01

_META_BLOCK = 4096  # items per independently seeded metadata block (fixed: output must not vary)
_ZIP_DATE_ML = (2019, 11, 21, 10, 55, 0)
_ZIP_DATE_GENOME = (2021, 6, 28, 12, 0, 0)


# --------------------------------------------------------------------------------------------
# shared helpers
# --------------------------------------------------------------------------------------------

_UPPER_DIGITS = np.frombuffer(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ", dtype=np.uint8)
_BASE32 = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", dtype=np.uint8)
_IMG_CHARS = np.frombuffer(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-", dtype=np.uint8
)
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def _user_ids(rng: np.random.Generator, n: int) -> list[str]:
    """Distinct Amazon-2023-style user ids: 28 characters, ``A``, one of ``EFGH``, then 26
    upper-case base32 characters (like ``AFKZENTNBQ7A7V7UXW5JJI6UGRYQ``)."""
    tails = _random_codes(rng, n, b"", _BASE32, 26)
    return [
        "A" + "EFGH"[int(b)] + t for t, b in zip(tails, rng.integers(0, 4, n).tolist(), strict=True)
    ]


# --------------------------------------------------------------------------------------------
# Amazon Reviews 2023
# --------------------------------------------------------------------------------------------

# fmt: off
_STORE_A = (
    "Lumina", "Verde", "Aurora", "Nordic", "Pure", "Velvet", "Coral", "Sable", "Ivory", "Amber",
    "Willow", "Zen", "Maison", "Kōbe", "Olive & Oak", "Petal",
)
_STORE_B = ("Botanics", "Beauty", "Labs", "Naturals", "Skin", "Care", "Cosmetics", "Apothecary")
_CATEGORY_PATHS = (
    ("Beauty & Personal Care", "Skin Care", "Face", "Creams & Moisturizers", "Face Moisturizers"),
    ("Beauty & Personal Care", "Skin Care", "Face", "Creams & Moisturizers", "Night Creams"),
    ("Beauty & Personal Care", "Skin Care", "Face", "Cleansers", "Gels"),
    ("Beauty & Personal Care", "Skin Care", "Body", "Moisturizers", "Lotions"),
    ("Beauty & Personal Care", "Skin Care", "Lip Care", "Balms & Moisturizers"),
    ("Beauty & Personal Care", "Skin Care", "Sun", "Sunscreens & Tanning Products", "Sunscreens"),
    ("Beauty & Personal Care", "Hair Care", "Shampoo & Conditioner", "Shampoos"),
    ("Beauty & Personal Care", "Hair Care", "Styling Products", "Hair Sprays"),
    ("Beauty & Personal Care", "Makeup", "Face", "Foundation"),
    ("Beauty & Personal Care", "Makeup", "Eyes", "Mascara"),
    ("Beauty & Personal Care", "Makeup", "Lips", "Lipstick"),
    ("Beauty & Personal Care", "Foot, Hand & Nail Care", "Nail Art & Polish", "Nail Polish"),
    ("Beauty & Personal Care", "Fragrance", "Women's", "Eau de Parfum"),
    ("Beauty & Personal Care", "Tools & Accessories", "Makeup Brushes & Tools", "Brush Sets"),
    ("Beauty & Personal Care", "Personal Care", "Bath & Bathing Accessories", "Bath", "Bath Salts"),
    ("Beauty & Personal Care", "Personal Care", "Shave & Hair Removal", "Men's", "Shaving Creams"),
    ("Beauty & Personal Care", "Oral Care", "Toothpaste"),
    ("Beauty & Personal Care", "Oral Care", "Mouthwash"),
    ("Beauty & Personal Care", "Skin Care", "Eyes", "Creams"),
    ("Beauty & Personal Care", "Skin Care", "Face", "Treatments & Masks", "Masks"),
    ("Beauty & Personal Care", "Hair Care", "Hair & Scalp Treatments", "Oils"),
    ("Beauty & Personal Care", "Makeup", "Eyes", "Eyeliner"),
    ("Beauty & Personal Care", "Makeup", "Face", "Blush"),
    ("Beauty & Personal Care", "Foot, Hand & Nail Care", "Hand Creams & Lotions"),
    ("Beauty & Personal Care", "Fragrance", "Men's", "Cologne"),
    ("Beauty & Personal Care", "Personal Care", "Deodorants & Antiperspirants", "Deodorant"),
    ("Beauty & Personal Care", "Tools & Accessories", "Bath & Shower Tools", "Loofahs"),
)
_ITEM_FORMS = (
    "Cream", "Lotion", "Gel", "Liquid", "Powder", "Spray", "Oil", "Stick", "Bar", "Balm", "Serum",
    "Foam", "Wipes", "Pencil", "Sheet", "Mask", "Paste", "Mousse", "Wax", "Pads",
)
_SCENTS = ("Unscented", "Lavender", "Vanilla", "Coconut", "Rose", "Citrus", "Eucalyptus", "Fresh")
_SKIN_TYPES = ("All", "Dry", "Oily", "Sensitive", "Combination", "Normal")
_COLORS = ("Natural", "Black", "Nude", "Red", "Pink", "Clear", "Brown", "White")
_MAIN_CATEGORIES = (
    "All Beauty", "Health & Personal Care", "Premium Beauty", "Amazon Home", "AMAZON FASHION",
)
_MAIN_CATEGORY_P = (0.80, 0.08, 0.05, 0.04, 0.03)
_ADJECTIVES = (
    "Hydrating", "Gentle", "Nourishing", "Ultra-Light", "Soothing", "Brightening", "Firming",
    "Clarifying", "Daily", "Intensive", "Sheer", "Long-Lasting", "Weightless", "Repairing",
    "Matte", "Radiant",
)
_NOUNS = (
    "Moisturizer", "Face Cream", "Body Lotion", "Cleanser", "Lip Balm", "Sunscreen SPF 30",
    "Shampoo", "Hair Spray", "Foundation", "Mascara", "Lipstick", "Nail Polish", "Perfume",
    "Brush Set", "Bath Salts", "Shaving Cream", "Toothpaste", "Serum", "Night Cream",
)
_SIZES = (
    "1.7 fl oz", "8 Ounce", "0.5 oz", "3.4 Fl Oz (Pack of 2)", "16.9 fl. oz.", "50 ml", "1 Count",
    "12 Piece Set", "6.7 Ounce (Pack of 3)", '2" x 4"',
)
_INGREDIENTS = (
    "hyaluronic acid", "shea butter", "vitamin C", "niacinamide", "aloe vera", "jojoba oil",
    "ceramides", "green tea extract", "argan oil", "retinol", "açaí berry", "crème de rose",
    "squalane", "coconut water", "oat extract",
)
_BENEFITS = (
    "lock in moisture", "smooth fine lines", "calm redness", "even out skin tone",
    "add volume without weighing hair down", "protect against UV rays",
    "leave a natural-looking finish", "soften rough patches", "reduce shine all day",
    "strengthen brittle nails", "refresh tired skin",
)
_CLAIMS = (
    "Dermatologist tested and free of parabens, sulfates and phthalates.",
    "Cruelty-free™ and never tested on animals.",
    "Made in small batches in the USA with globally sourced ingredients.",
    "Suitable for everyday use, morning and night.",
    'Customers say it\'s "the only one that works" for them.',
    "Satisfaction guaranteed: if you don’t love it, contact us for a full refund.",
    "Travel-friendly size fits in any bag.", "Fragrance notes of bergamot, jasmine & white musk.",
)
_FEATURE_LABELS = (
    "HYDRATION", "GENTLE FORMULA", "CLEAN INGREDIENTS", "EASY TO USE", "LONG-LASTING",
    "GREAT GIFT", "QUALITY GUARANTEE", "WHAT YOU GET", "FOR ALL SKIN TYPES", "VISIBLE RESULTS",
)
_REVIEW_TITLES = (
    "Love it!", "Five Stars", "Works great", "Not what I expected", "Okay", "Great value",
    "Smells amazing", "Broke me out", "Would buy again", "Disappointed", "My new favorite", "Meh",
)
# fmt: on


def _sentence_pool(n: int = 3000) -> list[str]:
    """Fixed (seed-independent) pool of product-copy sentences, ~90 characters each."""
    rng = make_rng("tieaudit.synthetic", "amazon-text-pool")
    out = []
    for _ in range(n):
        kind = int(rng.integers(0, 4))
        adj = _ADJECTIVES[int(rng.integers(len(_ADJECTIVES)))]
        i1, i2 = (int(x) for x in rng.choice(len(_INGREDIENTS), 2, replace=False))
        ing = _INGREDIENTS[i1]
        ben = _BENEFITS[int(rng.integers(len(_BENEFITS)))]
        skin = _SKIN_TYPES[int(rng.integers(len(_SKIN_TYPES)))].lower()
        if kind == 0:
            out.append(f"{adj} formula with {ing} helps {ben}, even for {skin} skin.")
        elif kind == 1:
            out.append(f"Enriched with {ing} and {_INGREDIENTS[i2]} to {ben}.")
        elif kind == 2:
            out.append(_CLAIMS[int(rng.integers(len(_CLAIMS)))])
        else:
            out.append(
                f"Apply a small amount and massage gently; the {adj.lower()} texture "
                f"absorbs quickly to {ben}."
            )
    return out


_POOL: list[str] | None = None


def _pool() -> list[str]:
    global _POOL
    if _POOL is None:
        _POOL = _sentence_pool()
    return _POOL


def amazon_file_names(category: str = AMAZON_CATEGORY) -> dict[str, str]:
    """Real file names (basenames of the download URLs) for one Amazon Reviews 2023 category."""
    return {
        "train": f"{category}.train.csv.gz",
        "valid": f"{category}.valid.csv.gz",
        "test": f"{category}.test.csv.gz",
        "meta": f"meta_{category}.jsonl.gz",
        "reviews": f"{category}.jsonl.gz",
    }


@dataclass
class _AmazonWorld:
    n_clusters: int
    item_cluster: np.ndarray  # cluster of every metadata item
    asins: list[str]  # parent_asin of every metadata item
    cluster_stores: np.ndarray  # (K, 2) store indices
    cluster_path: np.ndarray  # (K,)
    cluster_form: np.ndarray
    cluster_scent: np.ndarray
    cluster_skin: np.ndarray
    stores: list[str]


def _amazon_world(
    seed: int, n_items: int, n_bench: int, n_clusters: int | None = None
) -> _AmazonWorld:
    rng = make_rng(seed, "amazon2023", "world")
    k = _cluster_count(n_bench) if n_clusters is None else n_clusters
    stores = [f"{a} {b}" for a in _STORE_A for b in _STORE_B]
    stores = [stores[i] for i in rng.permutation(len(stores))[: max(48, 2 * k)]]
    if len(stores) < 2 * k:  # more clusters than name pairs: number the extra stores
        stores += [f"{stores[i % len(stores)]} {i}" for i in range(2 * k - len(stores))]
    weights = rng.dirichlet(np.full(k, 8.0))
    item_cluster = rng.choice(k, size=n_items, p=weights)
    return _AmazonWorld(
        n_clusters=k,
        item_cluster=item_cluster,
        asins=_random_codes(
            make_rng(seed, "amazon2023", "asins"), n_items, b"B0", _UPPER_DIGITS, 8
        ),
        cluster_stores=np.stack([rng.choice(len(stores), 2, replace=False) for _ in range(k)]),
        cluster_path=rng.integers(0, len(_CATEGORY_PATHS), k),
        cluster_form=rng.integers(0, len(_ITEM_FORMS), k),
        cluster_scent=rng.integers(0, len(_SCENTS), k),
        cluster_skin=rng.integers(0, len(_SKIN_TYPES), k),
        stores=stores,
    )


def _amazon_interactions(
    seed: int, world: _AmazonWorld, bench: np.ndarray, n_users: int, coherence: float = 0.85
) -> tuple[list[str], list[list[int]], list[np.ndarray], list[np.ndarray]]:
    """Users, and per user the chronological item indices, timestamps (ms) and ratings.

    Every user has >= 5 distinct items and every benchmark item >= 5 users (a 5-core)."""
    rng = make_rng(seed, "amazon2023", "interactions")
    k = world.n_clusters
    bench_cluster = world.item_cluster[bench]
    cluster_sizes = np.bincount(bench_cluster, minlength=k).astype(np.float64)
    user_primary = rng.choice(k, size=n_users, p=(cluster_sizes + 1) / (cluster_sizes + 1).sum())
    has_second = rng.random(n_users) < 0.3
    user_second = (user_primary + rng.integers(1, k, n_users)) % k
    lengths = _choose_counts(rng, n_users, 5, 3.5, 50)
    need = 5 * len(bench)
    if lengths.sum() < need:  # tiny scales: lengthen users until every item can get 5 users
        lengths += int(math.ceil((need - lengths.sum()) / n_users)) + 1
    lengths = np.minimum(lengths, len(bench))

    pools = [np.flatnonzero(bench_cluster == c) for c in range(k)]  # positions into `bench`
    pool_cdfs = [_zipf_cdf(len(p)) if len(p) else np.ones(1) for p in pools]
    everything = np.arange(len(bench))
    everything_cdf = _zipf_cdf(len(bench), 0.3)

    # 1) seed every benchmark item with 5 users, preferring users of its cluster
    assigned: list[list[int]] = [[] for _ in range(n_users)]
    capacity = lengths.copy()
    by_cluster = [np.flatnonzero(user_primary == c) for c in range(k)]
    for pos in rng.permutation(len(bench)).tolist():
        c = int(bench_cluster[pos])
        cand = by_cluster[c][capacity[by_cluster[c]] > 0]
        if len(cand) < 5:
            others = np.flatnonzero(capacity > 0)
            others = others[~np.isin(others, cand)]
            extra = rng.choice(others, size=min(5 - len(cand), len(others)), replace=False)
            chosen = np.concatenate([cand, extra])
            if len(chosen) < 5:  # capacity is a target: lengthen users rather than break 5-core
                rest = np.setdiff1d(np.arange(n_users), chosen)
                chosen = np.concatenate([chosen, rng.choice(rest, 5 - len(chosen), replace=False)])
        else:
            chosen = rng.choice(cand, size=5, replace=False)
        for u in chosen.tolist():
            assigned[u].append(pos)
            capacity[u] -= 1
    lengths = np.maximum(lengths, [len(a) for a in assigned])

    # 2) fill every user to its length from its clusters (popularity-weighted) and the catalogue
    users = _user_ids(rng, n_users)
    items_out: list[list[int]] = []
    times_out: list[np.ndarray] = []
    ratings_out: list[np.ndarray] = []
    for u in range(n_users):
        p, s = int(user_primary[u]), int(user_second[u])
        sources = [
            (coherence, pools[p], pool_cdfs[p]),
            (max(0.01, 0.93 - coherence), everything, everything_cdf),
        ]
        if has_second[u] and len(pools[s]):
            sources.append((0.07, pools[s], pool_cdfs[s]))
        if not len(pools[p]):
            sources = sources[1:]
        have = _fill_distinct(rng, list(assigned[u]), int(lengths[u]), sources, len(bench))
        order = rng.permutation(len(have))
        seq = [int(bench[have[i]]) for i in order]
        times = _increasing_times(rng, len(seq), _MS_2008, _MS_END, 40 * 86_400_000.0, 1000)
        legacy = times < _MS_2019
        if rng.random() < 0.8:  # most pre-2019 reviews carry whole seconds
            times = np.where(legacy, times // 1000 * 1000, times)
        in_cluster = world.item_cluster[seq] == p
        r = (
            np.where(
                in_cluster,
                rng.choice(5, size=len(seq), p=_RATING_P_IN),
                rng.choice(5, size=len(seq), p=_RATING_P_OUT),
            )
            + 1
        )
        items_out.append(seq)
        times_out.append(times)
        ratings_out.append(r)
    return users, items_out, times_out, ratings_out


def _amazon_meta_block(
    seed: int, block: int, world: _AmazonWorld, start: int, stop: int
) -> list[str]:
    """JSON lines for metadata items ``start..stop-1`` (all inside block ``block``)."""
    rng = make_rng(seed, "amazon2023", "meta", block)
    n = stop - start
    pool = _pool()
    n_pool = len(pool)
    clusters = world.item_cluster[start:stop]
    # attribute draws, vectorised
    store_pick = world.cluster_stores[clusters, rng.integers(0, 2, n)]
    store_idx = np.where(rng.random(n) < 0.85, store_pick, rng.integers(0, len(world.stores), n))
    store_null = rng.random(n) < 0.05
    path_idx = np.where(
        rng.random(n) < 0.9, world.cluster_path[clusters], rng.integers(0, len(_CATEGORY_PATHS), n)
    )
    path_empty = rng.random(n) < 0.03
    form = np.where(
        rng.random(n) < 0.8, world.cluster_form[clusters], rng.integers(0, len(_ITEM_FORMS), n)
    )
    scent = np.where(
        rng.random(n) < 0.7, world.cluster_scent[clusters], rng.integers(0, len(_SCENTS), n)
    )
    skin = np.where(
        rng.random(n) < 0.7, world.cluster_skin[clusters], rng.integers(0, len(_SKIN_TYPES), n)
    )
    has = rng.random((n, 8))  # which optional detail keys are present
    main_cat = rng.choice(len(_MAIN_CATEGORIES), size=n, p=_MAIN_CATEGORY_P)
    avg_rating = np.round(np.clip(rng.normal(4.2, 0.5, n), 1.0, 5.0), 1)
    rating_number = (rng.pareto(1.2, n) * 20).astype(np.int64) + 1
    price_null = rng.random(n) < 0.48
    price = np.round(np.exp(rng.normal(2.8, 0.7, n)), 2)
    title_parts = rng.integers(0, 10_000, (n, 3))
    n_feat = rng.choice(8, size=n, p=[0.1, 0.04, 0.06, 0.1, 0.2, 0.26, 0.14, 0.1])
    n_desc = np.where(rng.random(n) < 0.48, 0, rng.choice([1, 2, 3], size=n, p=[0.6, 0.3, 0.1]))
    n_img = rng.choice(np.arange(1, 8), size=n, p=[0.1, 0.08, 0.12, 0.2, 0.22, 0.16, 0.12])
    n_vid = np.where(rng.random(n) < 0.1, rng.integers(1, 3, n), 0)
    sent = rng.integers(0, n_pool, size=int(n_feat.sum() * 2 + n_desc.sum() * 8) + 8).tolist()
    feat_label = rng.integers(0, len(_FEATURE_LABELS), int(n_feat.sum()) + 1).tolist()
    img_ids = _random_codes(rng, int(n_img.sum()) * 2, b"", _IMG_CHARS, 10, unique=False)
    hi_null = (rng.random(int(n_img.sum())) < 0.2).tolist()
    vid_ids = _random_codes(rng, int(n_vid.sum()) + 1, b"", _HEX, 32, unique=False)
    dates = rng.integers(_MS_2008 // 86_400_000, _MS_END // 86_400_000, n).tolist()
    model_no = rng.integers(10_000, 99_999, n).tolist()
    upc = rng.integers(10**11, 10**12 - 1, n).tolist()
    dims = rng.integers(1, 120, (n, 4)).tolist()

    lines = []
    sp = fp = ip = vp = 0
    cols = [
        x.tolist()
        for x in (
            store_idx,
            store_null,
            path_idx,
            path_empty,
            form,
            scent,
            skin,
            main_cat,
            avg_rating,
            rating_number,
            price_null,
            price,
            n_feat,
            n_desc,
            n_img,
            n_vid,
        )
    ]
    has = has.tolist()
    title_parts = title_parts.tolist()
    for j in range(n):
        (
            s_idx,
            s_null,
            p_idx,
            p_empty,
            f_idx,
            sc_idx,
            sk_idx,
            mc,
            avg,
            num,
            pr_null,
            pr,
            nf,
            nd,
            ni,
            nv,
        ) = (c[j] for c in cols)
        store = None if s_null else world.stores[s_idx]
        brand = world.stores[s_idx]
        tp = title_parts[j]
        title = (
            f"{brand} {_ADJECTIVES[tp[0] % len(_ADJECTIVES)]} {_NOUNS[tp[1] % len(_NOUNS)]}"
            f" - {_ITEM_FORMS[f_idx]}, {_SIZES[tp[2] % len(_SIZES)]}"
        )
        features = []
        for _ in range(nf):
            features.append(
                f"{_FEATURE_LABELS[feat_label[fp]]}: {pool[sent[sp]]} {pool[sent[sp + 1]]}"
            )
            fp += 1
            sp += 2
        description = []
        for d in range(nd):
            m = 8 if d == 0 else 5
            description.append(" ".join(pool[i] for i in sent[sp : sp + m]))
            sp += m
        images = []
        for v in range(ni):
            a, b = img_ids[2 * ip], img_ids[2 * ip + 1]
            images.append(
                {
                    "thumb": f"https://m.media-amazon.com/images/I/41{a[:8]}L._SS40_.jpg",
                    "large": f"https://m.media-amazon.com/images/I/41{a[:8]}L.jpg",
                    "variant": "MAIN" if v == 0 else f"PT{v:02d}",
                    "hi_res": None
                    if hi_null[ip]
                    else f"https://m.media-amazon.com/images/I/71{b[:8]}L._SL1500_.jpg",
                }
            )
            ip += 1
        videos = []
        for v in range(nv):
            videos.append(
                {
                    "title": f"{brand} {_NOUNS[(tp[1] + v) % len(_NOUNS)]} review",
                    "url": f"https://www.amazon.com/vdp/{vid_ids[vp]}?ref=dp_vse_rvc_{v}",
                    "user_id": "",
                }
            )
            vp += 1
        h = has[j]
        details: dict[str, str] = {}
        if h[0] < 0.9:
            details["Brand"] = brand
        if h[1] < 0.8:
            details["Item Form"] = _ITEM_FORMS[f_idx]
        if h[2] < 0.55:
            details["Scent"] = _SCENTS[sc_idx]
        if h[3] < 0.45:
            details["Skin Type"] = _SKIN_TYPES[sk_idx]
        if h[4] < 0.2:
            details["Color"] = _COLORS[tp[0] % len(_COLORS)]
        if h[5] < 0.5:
            details["Unit Count"] = f"{1 + tp[2] % 12}.0 Count"
            details["Number of Items"] = str(1 + tp[2] % 3)
        if h[6] < 0.6:
            d0 = dims[j]
            details["Package Dimensions"] = (
                f"{d0[0] / 10:g} x {d0[1] / 10:g} x {d0[2] / 10:g} inches; {d0[3] / 4:g} Ounces"
            )
            details["Item model number"] = f"{brand[:3].upper()}-{model_no[j]}"
        if h[7] < 0.3:
            details["UPC"] = str(upc[j])
        details["Manufacturer"] = brand
        details["Date First Available"] = _date_text(dates[j])
        record = {
            "main_category": _MAIN_CATEGORIES[mc],
            "title": title,
            "average_rating": avg,
            "rating_number": num,
            "features": features,
            "description": description,
            "price": None if pr_null else pr,
            "images": images,
            "videos": videos,
            "store": store,
            "categories": [] if p_empty else list(_CATEGORY_PATHS[p_idx]),
            "details": details,
            "parent_asin": world.asins[start + j],
            "bought_together": None,
        }
        lines.append(json.dumps(record) + "\n")
    return lines


_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


@functools.cache
def _date_text(day: int) -> str:
    """``April 3, 2022`` for a day number since 1970-01-01 (the real "Date First Available")."""
    d = datetime.date(1970, 1, 1) + datetime.timedelta(days=day)
    return f"{_MONTHS[d.month - 1]} {d.day}, {d.year}"


def _amazon_review_line(
    rng: np.random.Generator,
    user: str,
    asin: str,
    parent: str,
    rating: int,
    ts: int,
    pool: list[str],
) -> str:
    n_sent = int(rng.integers(1, 6))
    text = " ".join(pool[int(i)] for i in rng.integers(0, len(pool), n_sent))
    if n_sent > 3:
        text = text.replace(". ", ".<br /><br />", 1)
    images = []
    if rng.random() < 0.05:
        code = _random_codes(rng, 1, b"71", _IMG_CHARS, 9, unique=False)[0] + "L"
        images.append(
            {
                "small_image_url": f"https://m.media-amazon.com/images/I/{code}._SL256_.jpg",
                "medium_image_url": f"https://m.media-amazon.com/images/I/{code}._SL800_.jpg",
                "large_image_url": f"https://m.media-amazon.com/images/I/{code}.jpg",
                "attachment_type": "IMAGE",
            }
        )
    record = {
        "rating": float(rating),
        "title": _REVIEW_TITLES[int(rng.integers(len(_REVIEW_TITLES)))],
        "text": text,
        "images": images,
        "asin": asin,
        "parent_asin": parent,
        "user_id": user,
        "timestamp": int(ts),
        "helpful_vote": int(rng.geometric(0.6) - 1),
        "verified_purchase": bool(rng.random() < 0.9),
    }
    return json.dumps(record) + "\n"


def generate_amazon2023(
    out_dir: Path | str,
    *,
    scale: int,
    seed: int,
    n_items: int | None = None,
    n_bench_items: int | None = None,
    with_reviews: bool = False,
    category: str = AMAZON_CATEGORY,
    compresslevel: int = 6,
    coherence: float = 0.85,
    n_clusters: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Path]:
    """Amazon Reviews 2023 (McAuley Lab; Hou et al. 2024, "Bridging Language and Items for
    Retrieval and Recommendation", arXiv:2403.03952), one category, in the released layout.

    Files written to ``out_dir`` (basenames of the real download URLs):

    ``{category}.train.csv.gz`` / ``.valid.csv.gz`` / ``.test.csv.gz``
        The "5-core, last_out_w_his" benchmark split (``benchmark/5core/last_out_w_his/`` of the
        release; split by the release's ``benchmark_scripts/last_out_split.py``). gzip of CSV with
        header ``user_id,parent_asin,rating,timestamp,history`` and no quoting. Per user (rows
        grouped by user, chronological): test = last item, valid = second to last, train = the
        rest. ``history`` is the space-separated parent_asins of the user's earlier items: all
        items before it (test: train + valid items; valid: train items; train row *i*: the user's
        first *i* train items, so the first train row has an empty history and the line ends in
        a comma). ``rating`` is written like ``5.0``; ``timestamp`` is Unix time in
        **milliseconds** (most pre-2019 values are whole seconds x 1000, as in the real data).
        Every user has >= 5 items and every item >= 5 users. user_id: 28 characters, ``A`` then
        upper-case base32 (like ``AFKZENTNBQ7A7V7UXW5JJI6UGRYQ``).

    ``meta_{category}.jsonl.gz``
        Item metadata, one JSON object per line (``json.dumps`` default separators, non-ASCII
        escaped), keys in the real order: ``main_category`` (str), ``title`` (str),
        ``average_rating`` (float), ``rating_number`` (int), ``features`` (list of str, may be
        empty), ``description`` (list of str, empty for ~half), ``price`` (float or null, null for
        ~half), ``images`` (list of ``{"thumb", "large", "variant", "hi_res"}``, variant ``MAIN``
        then ``PT01``...; ``hi_res`` may be null), ``videos`` (list of ``{"title", "url",
        "user_id"}``, usually empty), ``store`` (str or null), ``categories`` (list of str, a path
        starting ``Beauty & Personal Care``; occasionally empty), ``details`` (dict of str ->
        str, e.g. ``Brand``, ``Item Form``, ``Scent``, ``Manufacturer``, ``Date First
        Available``), ``parent_asin`` (``B0`` + 8 upper-case alphanumerics), ``bought_together``
        (null). Contains every benchmark item plus extra items (~5x, as the real file), in no
        particular order; records average ~2.8 KB like the real ~2.8 KB.

    ``{category}.jsonl.gz`` (only with ``with_reviews=True``)
        Raw reviews, one JSON object per line: ``rating`` (float), ``title``, ``text``, ``images``
        (list of ``{"small_image_url", "medium_image_url", "large_image_url",
        "attachment_type"}``), ``asin``, ``parent_asin``, ``user_id``, ``timestamp`` (int, Unix
        **milliseconds**), ``helpful_vote`` (int), ``verified_purchase`` (bool). Holds one review
        per benchmark interaction (same user, parent_asin, rating and timestamp) plus reviews by
        light users (1-3 reviews each), so that 5-core filtering of this file gives exactly the
        benchmark.

    ``n_items`` sets the number of metadata items (default 4.95 x benchmark items),
    ``n_bench_items`` the number of benchmark items (default ``max(40, ceil(0.285 * scale))``,
    at most ``n_items``). ``progress(done, total)`` is called after every metadata block.
    ``coherence`` (default 0.85) is the weight of a user's primary taste cluster when its items are
    drawn (the rest: 0.07 a second cluster for some users, the remainder the whole catalogue);
    lower values make the held-out item share attributes with the history less often, so it more
    often ties with the many negatives that share none (the demo uses this to show the effect).
    ``n_clusters`` sets the number of taste clusters (default ``min(24, max(3, items // 10))``),
    each with two stores of its own: more clusters make a store rarer, as in the real catalogue.
    Returns ``{"train", "valid", "test", "meta"[, "reviews"]}`` -> paths.
    """
    _check_scale(scale, minimum=5)
    out = Path(out_dir)
    if n_bench_items is None:
        n_bench_items = max(40, math.ceil(AMAZON_BENCH_ITEMS_PER_USER * scale))
    if n_items is None:
        n_items = math.ceil(AMAZON_META_ITEMS_PER_BENCH_ITEM * n_bench_items)
    n_bench_items = min(n_bench_items, n_items)
    if n_bench_items < 5:
        raise ValueError(f"need at least 5 benchmark items, got {n_bench_items}")
    world = _amazon_world(seed, n_items, n_bench_items, n_clusters)
    bench = np.sort(
        make_rng(seed, "amazon2023", "bench").choice(n_items, n_bench_items, replace=False)
    )
    if not 0.0 < coherence < 0.93:
        raise ValueError(f"coherence must be in (0, 0.93), got {coherence}")
    users, seqs, times, ratings = _amazon_interactions(seed, world, bench, scale, coherence)
    names = amazon_file_names(category)
    paths = {key: out / names[key] for key in ("train", "valid", "test", "meta")}
    header = "user_id,parent_asin,rating,timestamp,history\n"
    asins = world.asins

    with contextlib.ExitStack() as stack:
        files = {
            key: _Lines(stack.enter_context(_gzip_file(paths[key], compresslevel)))
            for key in ("train", "valid", "test")
        }
        for f in files.values():
            f.add(header)
        for user, seq, ts, rs in zip(users, seqs, times, ratings, strict=True):
            ids = [asins[i] for i in seq]
            ts_l, rs_l = ts.tolist(), rs.tolist()
            n = len(ids)
            for i in range(n - 2):
                files["train"].add(f"{user},{ids[i]},{rs_l[i]}.0,{ts_l[i]},{' '.join(ids[:i])}\n")
            files["valid"].add(
                f"{user},{ids[n - 2]},{rs_l[n - 2]}.0,{ts_l[n - 2]},{' '.join(ids[: n - 2])}\n"
            )
            files["test"].add(
                f"{user},{ids[n - 1]},{rs_l[n - 1]}.0,{ts_l[n - 1]},{' '.join(ids[: n - 1])}\n"
            )
        for f in files.values():
            f.flush()

    with _gzip_file(paths["meta"], compresslevel) as gz:
        for block in range(math.ceil(n_items / _META_BLOCK)):
            start = block * _META_BLOCK
            stop = min(start + _META_BLOCK, n_items)
            gz.write("".join(_amazon_meta_block(seed, block, world, start, stop)).encode("ascii"))
            if progress is not None:
                progress(stop, n_items)

    if with_reviews:
        paths["reviews"] = out / names["reviews"]
        _write_amazon_reviews(
            paths["reviews"], seed, world, bench, users, seqs, times, ratings, compresslevel
        )
    return paths


def _write_amazon_reviews(
    path: Path,
    seed: int,
    world: _AmazonWorld,
    bench: np.ndarray,
    users: list[str],
    seqs: list[list[int]],
    times: list[np.ndarray],
    ratings: list[np.ndarray],
    compresslevel: int,
) -> None:
    rng = make_rng(seed, "amazon2023", "reviews")
    pool = _pool()
    asins = world.asins
    n_light = max(1, len(users) // 5)
    core = set(users)
    light = [u for u in _user_ids(rng, n_light) if u not in core]
    variants = _random_codes(rng, len(asins), b"B0", _UPPER_DIGITS, 8)
    variant_of = {}
    with _gzip_file(path, compresslevel) as gz:
        lines = _Lines(gz)
        for user, seq, ts, rs in zip(users, seqs, times, ratings, strict=True):
            for item, t, r in zip(seq, ts.tolist(), rs.tolist(), strict=True):
                parent = asins[item]
                asin = parent if rng.random() < 0.8 else variant_of.setdefault(item, variants[item])
                lines.add(_amazon_review_line(rng, user, asin, parent, r, t, pool))
        n_all = len(asins)
        for user in light:
            k = int(rng.integers(1, 4))
            items = rng.choice(n_all, size=k, replace=False).tolist()
            ts = _increasing_times(rng, k, _MS_2008, _MS_END, 90 * 86_400_000.0, 1000).tolist()
            for item, t in zip(items, ts, strict=True):
                r = int(rng.choice(5, p=_RATING_P_OUT)) + 1
                lines.add(_amazon_review_line(rng, user, asins[item], asins[item], r, t, pool))
        lines.flush()


# --------------------------------------------------------------------------------------------
# movie worlds (MovieLens ml-25m and Tag Genome 2021)
# --------------------------------------------------------------------------------------------

# fmt: off
_GENRES = (
    "Action", "Adventure", "Animation", "Children", "Comedy", "Crime", "Documentary", "Drama",
    "Fantasy", "Film-Noir", "Horror", "IMAX", "Musical", "Mystery", "Romance", "Sci-Fi",
    "Thriller", "War", "Western",
)
_GENOME_TAGS = (
    "007", "18th century", "1920s", "action", "action packed", "adventure", "afi 100", "aliens",
    "alternate reality", "animation", "anime", "assassination", "atmospheric", "based on a book",
    "based on a true story", "beautiful scenery", "bittersweet", "black comedy", "bleak", "boxing",
    "brainwashing", "british", "chase", "cinematography", "classic", "clever", "coming of age",
    "computer animation", "conspiracy", "cult film", "cyberpunk", "dark", "dark comedy",
    "dialogue", "disney", "dystopia", "emotional", "epic", "family", "fantasy world", "feel-good",
    "film noir", "friendship", "funny", "gangsters", "ghosts", "gore", "great acting",
    "great ending", "heist", "high school", "historical", "horror", "idealism", "imdb top 250",
    "inspirational", "intense", "island", "jazz", "kids", "love story", "martial arts",
    "melancholic", "mental illness", "mindfuck", "musical", "mystery", "nonlinear", "nostalgic",
    "original", "oscar (best picture)", "paranoia", "philosophical", "pixar", "plot twist",
    "political", "post-apocalyptic", "prison", "psychological", "quirky", "revenge", "road trip",
    "robots", "romantic", "satire", "sci-fi", "serial killer", "space", "spies", "sports",
    "stylized", "superhero", "surreal", "suspense", "thought-provoking", "time travel",
    "twist ending", "vampires", "violence", "visually appealing", "war", "western", "witty",
    "zombies", "whimsical", "wilderness", "world war ii", "writers", "wuxia", "zany", "adaptation",
    "aging", "ambitious", "art", "betrayal", "biographical", "cars", "chess", "christmas",
    "circus",
)
_FIRST_NAMES = (
    "John", "Mary", "Akira", "Sofia", "Pedro", "Ingrid", "Wei", "Amélie", "Kwame", "Olga", "Raj",
    "Chloé", "Hiro", "Fatima", "Lars", "Nadia",
)
_LAST_NAMES = (
    "Lasseter", "Berg", "Kurosawa", "Coppola", "Almodóvar", "Nakamura", "Okafor", "Ivanova",
    "Kapoor", "Dubois", "Smith", "Lindqvist", "Haddad", "Zhang",
)
_TITLE_WORDS = (
    "Silent", "River", "Night", "Empire", "Garden", "Stranger", "Winter", "Iron", "Glass", "Paper",
    "Moon", "Last", "Red", "City", "Dream", "Shadow", "Summer", "Machine", "Heart", "Road",
    "Ghost", "King", "Blue", "House", "Storm",
)
_USER_TAG_EXTRA = (
    "funny, dark", "Criterion", "seen at the cinema", "must see!", 'Quote: "I\'ll be back"',
    "slow", "overrated",
)
# fmt: on


MAX_GENOME_TAGS = 2000


@functools.cache
def _tag_vocabulary() -> tuple[str, ...]:
    """Genome-style tag strings: the hand-written ones, then two-word combinations of them (enough
    for the real 1,128 ml-25m tags and more)."""
    extra = (f"{a} {b.lower()}" for b in _TITLE_WORDS for a in _GENOME_TAGS)
    combos = [t for t in extra if t not in _GENOME_TAGS]
    return (_GENOME_TAGS + tuple(dict.fromkeys(combos)))[: MAX_GENOME_TAGS + 2]


@dataclass
class _MovieWorld:
    movie_ids: np.ndarray  # sorted, sparse
    n_clusters: int
    movie_cluster: np.ndarray
    popularity_rank: np.ndarray  # movie positions, most popular first
    scored: np.ndarray  # positions of movies with genome scores (sorted)
    tags: list[str]
    relevance: np.ndarray  # (len(scored), len(tags)) float64 in (0, 1)
    titles: list[str]
    genres: list[str]
    user_primary: np.ndarray
    user_movies: list[np.ndarray]  # positions, per user
    user_ratings: list[np.ndarray]  # 0.5 .. 5.0


def _movie_title(rng: np.random.Generator, year: int, kind: float) -> str:
    """A ml-25m-style title for a uniform ``kind`` draw: ``Name (Year)``, ``Name, The (Year)``,
    accented ``Misérables ..., Les (Year)``, ``"Quoted" Name (Year)``, ..."""
    w = [_TITLE_WORDS[int(i)] for i in rng.integers(0, len(_TITLE_WORDS), 3)]
    if kind < 0.12:
        return f"{w[0]} {w[1]}, The ({year})"
    if kind < 0.16:
        return f"Misérables {w[0]}, Les ({year})"
    if kind < 0.19:
        return f'"{w[0]} {w[1]}" {w[2]} ({year})'
    if kind < 0.3:
        return f"{w[0]} of the {w[1]} ({year})"
    if kind < 0.33:
        return f"{w[0]} {w[1]}: Part {int(rng.integers(2, 5))} ({year})"
    return f"{w[0]} {w[1]} ({year})"


def _movie_world(
    seed: int, name: str, n_users: int, n_movies: int, n_tags: int, min_ratings: int,
    coherence: float | None = None,
) -> _MovieWorld:
    rng = make_rng(seed, name, "world")
    if n_movies < 2 * min_ratings:
        raise ValueError(f"need at least {2 * min_ratings} movies, got {n_movies}")
    if not 4 <= n_tags <= MAX_GENOME_TAGS:
        raise ValueError(f"n_tags must be in [4, {MAX_GENOME_TAGS}], got {n_tags}")
    gaps = rng.geometric(0.35, size=n_movies)
    gaps[0] = 1
    movie_ids = np.cumsum(gaps)
    movie_ids[int(n_movies * 0.8) :] += 50_000  # later movies have large, sparse ids (as ml-25m)
    popularity_rank = rng.permutation(n_movies)
    n_scored = max(min(20, n_movies), int(round(GENOME_FRACTION * n_movies)))
    k = int(min(24, max(3, n_scored // 25)))  # ~25+ scored movies per taste cluster
    movie_cluster = rng.integers(0, k, n_movies)
    scored = np.sort(popularity_rank[:n_scored])
    vocabulary = _tag_vocabulary()
    if n_tags <= len(_GENOME_TAGS):  # hand-written tags only
        tags = sorted(_GENOME_TAGS[i] for i in rng.permutation(len(_GENOME_TAGS))[:n_tags])
    else:
        tags = sorted(vocabulary[i] for i in rng.permutation(len(vocabulary))[:n_tags])

    # genome relevance: low background, a few high "signature" tags per cluster
    n_sig = min(4, n_tags)
    signature = np.stack([rng.choice(n_tags, n_sig, replace=False) for _ in range(k)])
    rel = rng.beta(1.1, 12.0, size=(n_scored, n_tags))
    rows = np.arange(n_scored)
    sc = movie_cluster[scored]
    for s in range(n_sig):
        strong = rng.random(n_scored) < 0.85
        high = rng.uniform(0.6, 0.995, n_scored)
        mid = rng.uniform(0.3, 0.5, n_scored)
        rel[rows, signature[sc, s]] = np.where(strong, high, mid)
    extra = rng.random(n_scored) < 0.15
    extra_tag = rng.integers(0, n_tags, n_scored)
    rel[rows[extra], extra_tag[extra]] = np.maximum(
        rel[rows[extra], extra_tag[extra]], rng.uniform(0.5, 0.8, int(extra.sum()))
    )

    years = rng.integers(1920, 2020, n_movies)
    kinds = rng.random(n_movies)
    kinds[rng.choice(n_movies, 3, replace=False)] = (0.05, 0.15, 0.18)  # each quoting case occurs
    titles = [_movie_title(rng, int(y), float(kd)) for y, kd in zip(years, kinds, strict=True)]
    main_genres = [i for i, g in enumerate(_GENRES) if g not in ("IMAX", "Film-Noir")]
    cluster_genres = np.stack([rng.choice(main_genres, 2, replace=False) for _ in range(k)])
    genres = []
    for m in range(n_movies):
        g = set()
        for gi in cluster_genres[movie_cluster[m]].tolist():
            if rng.random() < 0.8:
                g.add(gi)
        if rng.random() < 0.4:
            g.add(int(rng.integers(len(_GENRES))))
        genres.append("|".join(_GENRES[i] for i in sorted(g)) if g else "(no genres listed)")

    # users: a primary cluster, ratings mostly in it and mostly on scored (popular) movies
    sizes = np.bincount(movie_cluster[scored], minlength=k).astype(float) + 1
    user_primary = rng.choice(k, size=n_users, p=sizes / sizes.sum())
    counts = _choose_counts(rng, n_users, min_ratings, 20.0, 300)
    counts = np.minimum(counts, max(n_movies // 4, min_ratings))  # leave unrated movies to sample
    unscored = popularity_rank[n_scored:] if n_scored < n_movies else popularity_rank
    unscored_cdf = _zipf_cdf(len(unscored), 0.9)
    scored_pools = [scored[movie_cluster[scored] == c] for c in range(k)]
    scored_cdfs = [_zipf_cdf(len(p)) if len(p) else np.ones(1) for p in scored_pools]
    scored_cdf = _zipf_cdf(len(scored), 0.5)
    user_movies, user_ratings = [], []
    for u in range(n_users):
        c = int(user_primary[u])
        # in-cluster genome movies, a few other genome movies, the rest outside the genome
        in_w, out_w = (0.4, 0.03)
        if coherence is not None:
            in_w, out_w = 0.43 * coherence, 0.43 * (1 - coherence)
        sources = [(out_w, scored, scored_cdf), (0.57, unscored, unscored_cdf)]
        if len(scored_pools[c]):
            sources.insert(0, (in_w, scored_pools[c], scored_cdfs[c]))
        have = np.array(_fill_distinct(rng, [], int(counts[u]), sources, n_movies))
        mine = movie_cluster[have] == c
        stars = np.where(mine, rng.normal(4.0, 0.7, len(have)), rng.normal(3.0, 1.0, len(have)))
        stars = np.clip(np.round(stars * 2) / 2, 0.5, 5.0)
        user_movies.append(have)
        user_ratings.append(stars)
    return _MovieWorld(
        movie_ids,
        k,
        movie_cluster,
        popularity_rank,
        scored,
        tags,
        rel,
        titles,
        genres,
        user_primary,
        user_movies,
        user_ratings,
    )


def _relevance_text(x: np.ndarray) -> list[str]:
    """Genome relevances as ml-25m writes them: multiples of 1/4000 carrying double-precision
    noise from the computation, printed with ``repr`` (``0.028749999999999998``-style)."""
    k = np.clip(np.rint(x * 4000), 1, 3999)
    return [repr(v) for v in (1.0 - (4000 - k) / 4000).tolist()]


def _ml_readme(world: _MovieWorld, n_ratings: int, n_tags_applied: int, n_users: int) -> str:
    return f"""Summary
=======

SYNTHETIC DATA generated by tieaudit.data.synthetic in the layout of ml-25m (MovieLens 25M,
F. Maxwell Harper and Joseph A. Konstan. 2015. The MovieLens Datasets: History and Context. ACM
TiiS 5, 4: 19:1-19:19. https://doi.org/10.1145/2827872). Every number below is invented.

This dataset (ml-25m) describes 5-star rating and free-text tagging activity. It contains
{n_ratings} ratings and {n_tags_applied} tag applications across {len(world.movie_ids)} movies,
created by {n_users} users. All selected users had rated at least 20 movies.

The data are contained in the files `genome-scores.csv`, `genome-tags.csv`, `links.csv`,
`movies.csv`, `ratings.csv` and `tags.csv`.

Formatting and Encoding
=======================

The dataset files are written as comma-separated values files with a single header row. Columns
that contain commas (`,`) are escaped using double-quotes (`"`). These files are encoded as UTF-8.

Ratings Data File Structure (ratings.csv)
-----------------------------------------

userId,movieId,rating,timestamp

Ordered first by userId, then, within the user, by movieId. Ratings are made on a 5-star scale,
with half-star increments (0.5 stars - 5.0 stars). Timestamps represent seconds since midnight
Coordinated Universal Time (UTC) of January 1, 1970.

Tags Data File Structure (tags.csv)
-----------------------------------

userId,movieId,tag,timestamp

Movies Data File Structure (movies.csv)
---------------------------------------

movieId,title,genres

Links Data File Structure (links.csv)
-------------------------------------

movieId,imdbId,tmdbId

Tag Genome (genome-scores.csv and genome-tags.csv)
--------------------------------------------------

movieId,tagId,relevance

tagId,tag
"""


def generate_movielens(
    out_dir: Path | str, *, scale: int, seed: int, n_items: int | None = None, n_tags: int = 100,
    coherence: float | None = None,
) -> dict[str, Path]:
    """MovieLens 25M (ml-25m; Harper & Konstan 2015, doi:10.1145/2827872) in the released layout.

    Writes ``ml-25m.zip`` holding, in the real member order, the folder ``ml-25m/`` and
    ``ml-25m/tags.csv``, ``links.csv``, ``README.txt``, ``ratings.csv``, ``genome-tags.csv``,
    ``genome-scores.csv``, ``movies.csv`` (UTF-8 CSV, one header row, ``"``-quoting only where a
    field needs it, LF line ends; formats from the ml-25m README):

    * ``ratings.csv``: ``userId,movieId,rating,timestamp``; ordered by userId then movieId; rating
      in half stars written like ``3.5``; timestamp Unix **seconds** (1995-01-09 .. 2019-11-21);
      every user has >= 20 ratings.
    * ``movies.csv``: ``movieId,title,genres``; titles ``Name (Year)``, some with commas
      (``"River Night, The (1995)"``), quotes (doubled) or accents; genres ``|``-separated or
      ``(no genres listed)``.
    * ``tags.csv``: ``userId,movieId,tag,timestamp`` (seconds), ordered by userId then movieId.
    * ``links.csv``: ``movieId,imdbId,tmdbId``; imdbId 7 digits zero-padded; tmdbId sometimes
      empty.
    * ``genome-tags.csv``: ``tagId,tag`` with tagIds 1..n_tags.
    * ``genome-scores.csv``: ``movieId,tagId,relevance`` for every genome movie x every tag,
      ordered by movieId then tagId; relevance in (0, 1) printed like ``0.028749999999999998``.
      Genome movies (40% of the movies) are a subset of movies.csv.
    * ``README.txt``: a short synthetic README in the real one's structure.

    ``n_items`` sets the number of movies (default ``max(400, ceil(0.384 * scale))``, at least
    40), ``n_tags`` the number of genome tags (default 100, at most 2,000; the real file has
    1,128: ``n_items=34_540, n_tags=1_128`` gives the real 15.6M-row genome-scores.csv).
    ``coherence`` (default: 0.4 / 0.43, about 0.93) is the share of a user's genome-scored movies
    drawn from its own taste cluster.
    Returns ``{"zip": path}``.
    """
    _check_scale(scale, minimum=1)
    n_movies = n_items if n_items is not None else max(400, math.ceil(ML_MOVIES_PER_USER * scale))
    world = _movie_world(seed, "movielens", scale, n_movies, n_tags, min_ratings=20,
                         coherence=coherence)
    rng = make_rng(seed, "movielens", "files")
    mids = world.movie_ids.tolist()
    path = Path(out_dir) / ML_25M_ZIP

    # user activity times (seconds): sessions of ratings
    user_times = []
    for u in range(scale):
        n = len(world.user_movies[u])
        user_times.append(_increasing_times(rng, n, _S_ML_START, _S_ML_END, 3 * 3600.0, 1))

    # tag applications
    tag_rows: list[tuple[int, int, str, int]] = []
    cluster_tag = [
        world.tags[
            int(np.argmax(world.relevance[world.movie_cluster[world.scored] == c].mean(axis=0)))
        ]
        if np.any(world.movie_cluster[world.scored] == c)
        else world.tags[0]
        for c in range(world.n_clusters)
    ]
    for u in range(scale):
        if rng.random() >= 0.15:
            continue
        movies = world.user_movies[u]
        picks = rng.choice(
            len(movies), size=min(len(movies), int(rng.integers(1, 6))), replace=False
        )
        for p in picks.tolist():
            m = int(movies[p])
            if rng.random() < 0.6:
                tag = cluster_tag[int(world.movie_cluster[m])]
            elif rng.random() < 0.5:
                tag = world.tags[int(rng.integers(len(world.tags)))]
            else:
                tag = _USER_TAG_EXTRA[int(rng.integers(len(_USER_TAG_EXTRA)))]
            t = min(int(user_times[u][p]) + int(rng.integers(0, 600)), _S_ML_END)
            tag_rows.append((u + 1, mids[m], tag, t))
    tag_rows.sort(key=lambda r: (r[0], r[1], r[3]))

    n_ratings = sum(len(m) for m in world.user_movies)
    with _zip_file(path, _ZIP_DATE_ML) as z:
        z.folder("ml-25m/")
        with z.stream("ml-25m/tags.csv") as fh:
            lines = _Lines(fh)
            w = _csv_line_writer(lines)
            w.writerow(["userId", "movieId", "tag", "timestamp"])
            w.writerows(tag_rows)
            lines.flush()
        imdb = rng.choice(9_989_999, size=len(mids), replace=False) + 10_000
        tmdb = rng.choice(699_998, size=len(mids), replace=False) + 2
        tmdb_missing = rng.random(len(mids)) < 0.01
        link_lines = ["movieId,imdbId,tmdbId\n"] + [
            f"{m},{i:07d},{'' if miss else t}\n"
            for m, i, t, miss in zip(
                mids, imdb.tolist(), tmdb.tolist(), tmdb_missing.tolist(), strict=True
            )
        ]
        z.text("ml-25m/links.csv", "".join(link_lines))
        z.text("ml-25m/README.txt", _ml_readme(world, n_ratings, len(tag_rows), scale))
        with z.stream("ml-25m/ratings.csv") as fh:
            lines = _Lines(fh)
            lines.add("userId,movieId,rating,timestamp\n")
            for u in range(scale):
                movies = world.user_movies[u]
                order = np.argsort(world.movie_ids[movies], kind="stable")
                ts = user_times[u]
                for p in order.tolist():
                    lines.add(
                        f"{u + 1},{mids[int(movies[p])]},"
                        f"{float(world.user_ratings[u][p])!r},{int(ts[p])}\n"
                    )
            lines.flush()
        z.text(
            "ml-25m/genome-tags.csv",
            "".join(["tagId,tag\n"] + [_csv_row([i + 1, t]) for i, t in enumerate(world.tags)]),
        )
        with z.stream("ml-25m/genome-scores.csv") as fh:
            lines = _Lines(fh)
            lines.add("movieId,tagId,relevance\n")
            n_tags_ = len(world.tags)
            tag_ids = [str(i + 1) for i in range(n_tags_)]
            for row, m in enumerate(world.scored.tolist()):
                mid = mids[m]
                for tid, val in zip(tag_ids, _relevance_text(world.relevance[row]), strict=True):
                    lines.add(f"{mid},{tid},{val}\n")
            lines.flush()
        z.text(
            "ml-25m/movies.csv",
            "".join(
                ["movieId,title,genres\n"]
                + [_csv_row([mids[m], world.titles[m], world.genres[m]]) for m in range(len(mids))]
            ),
        )
    return {"zip": path}


_GENOME21_README = """Summary
=======
SYNTHETIC DATA generated by tieaudit.data.synthetic in the layout of the Tag Genome 2021 movie
dataset (Kotkov, D., Maslov, A., and Neovius, M. (2021). Revisiting the tag relevance prediction
problem. SIGIR 2021. https://doi.org/10.1145/3404835.3463019; Vig, J., Sen, S., and Riedl, J.
(2012). The tag genome. ACM TiiS 2(3)). Every number is invented.

The dataset files contain json objects (one line per object). The files are encoded as UTF-8. User
ids (user_id), tag ids (tag_id) and movie ids (item_id) are consistent across all files.

raw/metadata.json: title, directedBy, starring, dateAdded, avgRating, imdbId, item_id
raw/reviews.json: item_id, txt
raw/tags.json: tag, id
raw/tag_count.json: item_id, tag_id, num
raw/ratings.json: item_id, user_id, rating
raw/survey_answers.json: user_id, item_id, tag_id, score
scores/glmer.csv: tag,item_id,score
scores/tagdl.csv: tag,item_id,score

The processed/ and predictions/ folders of the real dataset are not generated.
"""


def generate_genome2021(
    out_dir: Path | str, *, scale: int, seed: int, n_items: int | None = None, n_tags: int = 100
) -> dict[str, Path]:
    """Tag Genome 2021 movie dataset (Kotkov, Maslov & Neovius, SIGIR 2021,
    doi:10.1145/3404835.3463019; tag genome of Vig, Sen & Riedl 2012) in the released layout.

    Writes ``genome_2021.zip`` with the folder ``movie_dataset_public_final/`` holding (field
    names, types and formats from the dataset's README):

    * ``raw/metadata.json``: JSON lines ``{"title": str, "directedBy": str, "starring": str,
      "dateAdded": null, "avgRating": float, "imdbId": str, "item_id": int}`` (directors and
      actors comma-separated; imdbId 7 digits zero-padded), one per movie.
    * ``raw/ratings.json``: ``{"item_id": int, "user_id": int, "rating": float}`` (half stars
      0.5..5.0; no timestamps), grouped by item_id; user ids are large sparse integers.
    * ``raw/tags.json``: ``{"tag": str, "id": int}``, sparse ids; two tags have no scores (as
      1,094 tags vs 1,084 scored in the real data).
    * ``raw/tag_count.json``: ``{"item_id": int, "tag_id": int, "num": int}``.
    * ``raw/reviews.json``: ``{"item_id": int, "txt": str}``.
    * ``raw/survey_answers.json``: ``{"user_id": int, "item_id": int, "tag_id": int,
      "score": int}`` with score in 1..5 or -1 ("not sure").
    * ``scores/glmer.csv``: header ``tag,item_id,score``; every scored movie x every scored tag,
      ordered by tag then item_id; score in (0, 1) with 15 significant digits.
    * ``scores/tagdl.csv``: same header; float32-precision scores in [-0.07, 1.13].
    * ``README.txt``: a short synthetic README (its location in the real archive is not
      confirmed).

    Scored movies (40% of the movies) are a subset of metadata.json. ``n_items`` sets the number
    of movies (default ``max(400, ceil(0.342 * scale))``, at least 40), ``n_tags`` the number of
    scored tags (default 100, at most 2,000). Returns ``{"zip": path}``.
    """
    _check_scale(scale, minimum=1)
    n_movies = (
        n_items if n_items is not None else max(400, math.ceil(GENOME21_MOVIES_PER_USER * scale))
    )
    world = _movie_world(seed, "genome2021", scale, n_movies, n_tags, min_ratings=20)
    rng = make_rng(seed, "genome2021", "files")
    mids = world.movie_ids.tolist()
    n_tags_all = len(world.tags) + 2
    in_use = set(world.tags)
    spare = [t for t in _tag_vocabulary() if t not in in_use][:2]
    all_tags = world.tags + spare
    tag_ids = (rng.choice(59_999, size=n_tags_all, replace=False) + 1).tolist()
    user_ids = np.sort(rng.choice(1_099_000, size=scale, replace=False) + 1_000)
    imdb = (rng.choice(9_989_999, size=len(mids), replace=False) + 10_000).tolist()
    path = Path(out_dir) / GENOME_2021_ZIP
    d = GENOME_2021_DIR

    # per movie ratings (grouped by item, as the real file)
    by_movie: list[list[tuple[int, float]]] = [[] for _ in mids]
    for u in range(scale):
        for m, r in zip(world.user_movies[u].tolist(), world.user_ratings[u].tolist(), strict=True):
            by_movie[m].append((int(user_ids[u]), r))

    with _zip_file(path, _ZIP_DATE_GENOME) as z:
        z.folder(f"{d}/")
        z.text(f"{d}/README.txt", _GENOME21_README)
        z.folder(f"{d}/raw/")
        meta_lines = []
        for m, mid in enumerate(mids):
            rs = [r for _, r in by_movie[m]]
            avg = round(float(np.mean(rs)), 5) if rs else round(float(rng.uniform(2, 4.5)), 5)
            directors = ", ".join(
                f"{_FIRST_NAMES[int(a)]} {_LAST_NAMES[int(b)]}"
                for a, b in rng.integers(0, 14, (int(rng.choice([1, 1, 1, 2])), 2))
            )
            actors = ", ".join(
                f"{_FIRST_NAMES[int(a) % 16]} {_LAST_NAMES[int(b)]}"
                for a, b in rng.integers(0, 14, (int(rng.integers(2, 11)), 2))
            )
            meta_lines.append(
                json.dumps(
                    {
                        "title": world.titles[m],
                        "directedBy": directors,
                        "starring": actors,
                        "dateAdded": None,
                        "avgRating": avg,
                        "imdbId": f"{imdb[m]:07d}",
                        "item_id": mid,
                    }
                )
                + "\n"
            )
        z.text(f"{d}/raw/metadata.json", "".join(meta_lines))
        with z.stream(f"{d}/raw/ratings.json") as fh:
            lines = _Lines(fh)
            for m, mid in enumerate(mids):
                for uid, r in sorted(by_movie[m]):
                    lines.add(json.dumps({"item_id": mid, "user_id": uid, "rating": r}) + "\n")
            lines.flush()
        review_lines = []
        pool = _pool()
        for mid in mids:
            for _ in range(int(rng.integers(0, 4))):
                txt = " \r ".join(pool[int(i)] for i in rng.integers(0, len(pool), 3))
                review_lines.append(json.dumps({"item_id": mid, "txt": txt}) + "\n")
        z.text(f"{d}/raw/reviews.json", "".join(review_lines))
        survey = []
        survey_users = user_ids[: max(1, scale // 20)].tolist()
        for row, m in enumerate(world.scored.tolist()):
            for _ in range(int(rng.integers(0, 3))):
                t = int(rng.integers(len(world.tags)))
                rel = float(world.relevance[row, t])
                score = (
                    -1
                    if rng.random() < 0.08
                    else int(np.clip(round(1 + 4 * rel + rng.normal(0, 0.6)), 1, 5))
                )
                survey.append(
                    json.dumps(
                        {
                            "user_id": survey_users[int(rng.integers(len(survey_users)))],
                            "item_id": mids[m],
                            "tag_id": tag_ids[t],
                            "score": score,
                        }
                    )
                    + "\n"
                )
        z.text(f"{d}/raw/survey_answers.json", "".join(survey))
        counts = []
        for row, m in enumerate(world.scored.tolist()):
            for t in np.flatnonzero(world.relevance[row] > 0.5).tolist():
                if rng.random() < 0.7:
                    counts.append(
                        json.dumps(
                            {
                                "item_id": mids[m],
                                "tag_id": tag_ids[t],
                                "num": int(rng.geometric(0.3)),
                            }
                        )
                        + "\n"
                    )
        z.text(f"{d}/raw/tag_count.json", "".join(counts))
        z.text(
            f"{d}/raw/tags.json",
            "".join(
                json.dumps({"tag": t, "id": i}) + "\n"
                for t, i in zip(all_tags, tag_ids, strict=True)
            ),
        )
        z.folder(f"{d}/scores/")
        scored_ids = [mids[m] for m in world.scored.tolist()]
        noise = rng.normal(0.0, 0.03, world.relevance.shape)
        tagdl = np.clip(world.relevance + noise, -0.07, 1.13).astype(np.float32)
        for member, fmt in (("glmer.csv", "glmer"), ("tagdl.csv", "tagdl")):
            with z.stream(f"{d}/scores/{member}") as fh:
                lines = _Lines(fh)
                lines.add("tag,item_id,score\n")
                for t, tag in enumerate(world.tags):
                    tag_cell = _csv_row([tag])[:-1]
                    if fmt == "glmer":
                        vals = [f"{v:.15g}" for v in world.relevance[:, t].tolist()]
                    else:
                        vals = [str(v) for v in tagdl[:, t]]
                    for mid, v in zip(scored_ids, vals, strict=True):
                        lines.add(f"{tag_cell},{mid},{v}\n")
                lines.flush()
    return {"zip": path}


# --------------------------------------------------------------------------------------------
# generic
# --------------------------------------------------------------------------------------------

_GENERIC_ATTRS = {
    "brand": (
        "acme",
        "globex",
        "initech",
        "umbrella",
        "hooli",
        "stark",
        "wayne",
        "wonka",
        "tyrell",
        "cyberdyne",
        "soylent",
        "vandelay",
        "oscorp",
        "gringotts",
        "aperture",
        "massive-dynamic",
    ),
    "category": (
        "skin-care",
        "hair-care",
        "makeup",
        "fragrance",
        "tools",
        "bath",
        "oral-care",
        "nail-care",
        "sun-care",
        "shaving",
        "eye-care",
        "lip-care",
    ),
    "form": ("cream", "gel", "liquid", "powder", "spray", "oil", "stick", "balm", "foam", "bar"),
    "scent": ("unscented", "lavender", "vanilla", "citrus", "rose", "coconut", "mint", "musk"),
}


def generate_generic(
    out_dir: Path | str, *, scale: int, seed: int, n_items: int | None = None
) -> dict[str, Path]:
    """tieaudit's generic input format: two CSV files (UTF-8, header row, LF line ends).

    * ``interactions.csv``: ``user_id,item_id,rating,timestamp``; ids are strings (``U000001``,
      ``I000001``); rating an integer 1..5; timestamp Unix **seconds**; rows ordered by user then
      time; every user has >= 5 interactions (distinct items).
    * ``item_attributes.csv``: ``item_id,attribute``, one line per (item, attribute) pair, 2-4
      attributes per item written ``kind:value`` (``brand:acme``, ``category:skin-care``, ...),
      ordered by item.

    ``n_items`` sets the number of items (default ``max(40, ceil(0.5 * scale))``).
    Returns ``{"interactions": path, "item_attributes": path}``.
    """
    _check_scale(scale, minimum=1)
    n = n_items if n_items is not None else max(40, math.ceil(GENERIC_ITEMS_PER_USER * scale))
    if n < 5:
        raise ValueError(f"need at least 5 items, got {n}")
    rng = make_rng(seed, "generic", "world")
    k = _cluster_count(n)
    item_cluster = rng.integers(0, k, n)
    kinds = list(_GENERIC_ATTRS)
    cluster_values = {kind: rng.integers(0, len(_GENERIC_ATTRS[kind]), k) for kind in kinds}
    item_ids = [f"I{i + 1:06d}" for i in range(n)]
    user_ids = [f"U{u + 1:06d}" for u in range(scale)]
    out = Path(out_dir)
    paths = {
        "interactions": out / "interactions.csv",
        "item_attributes": out / "item_attributes.csv",
    }

    attr_lines = ["item_id,attribute\n"]
    for i in range(n):
        c = int(item_cluster[i])
        chosen = ["brand", "category"] + [kd for kd in kinds[2:] if rng.random() < 0.5]
        for kind in chosen:
            vals = _GENERIC_ATTRS[kind]
            v = (
                vals[int(cluster_values[kind][c])]
                if rng.random() < 0.85
                else vals[int(rng.integers(len(vals)))]
            )
            attr_lines.append(f"{item_ids[i]},{kind}:{v}\n")
    with _atomic_file(paths["item_attributes"]) as fh:
        fh.write("".join(attr_lines).encode("utf-8"))

    pools = [np.flatnonzero(item_cluster == c) for c in range(k)]
    cdfs = [_zipf_cdf(len(p)) if len(p) else np.ones(1) for p in pools]
    everything = np.arange(n)
    everything_cdf = _zipf_cdf(n, 0.3)
    primary = rng.integers(0, k, scale)
    lengths = np.minimum(_choose_counts(rng, scale, 5, 5.0, 60), n)
    with _atomic_file(paths["interactions"]) as fh:
        lines = _Lines(fh)
        lines.add("user_id,item_id,rating,timestamp\n")
        for u in range(scale):
            c = int(primary[u])
            sources = [(0.12, everything, everything_cdf)]
            if len(pools[c]):
                sources.insert(0, (0.88, pools[c], cdfs[c]))
            items = _fill_distinct(rng, [], int(lengths[u]), sources, n)
            ts = _increasing_times(
                rng, len(items), _S_GENERIC_START, _S_GENERIC_END, 20 * 86_400.0, 1
            ).tolist()
            for it, t in zip(items, ts, strict=True):
                p = _RATING_P_IN if item_cluster[it] == c else _RATING_P_OUT
                r = int(rng.choice(5, p=p)) + 1
                lines.add(f"{user_ids[u]},{item_ids[it]},{r},{t}\n")
        lines.flush()
    return paths


# --------------------------------------------------------------------------------------------
# dispatch
# --------------------------------------------------------------------------------------------


_GENERATORS: dict[str, Callable[..., dict[str, Path]]] = {
    "amazon2023": generate_amazon2023,
    "movielens": generate_movielens,
    "genome2021": generate_genome2021,
    "generic": generate_generic,
}


def generate(
    dataset: str, out_dir: Path | str, *, scale: int, seed: int, **options: Any
) -> dict[str, Path]:
    """Write a synthetic ``dataset`` (one of :data:`DATASETS`) into ``out_dir`` and return
    ``{logical name: path}``: ``train``/``valid``/``test``/``meta`` (+ ``reviews``) for
    ``amazon2023``, ``zip`` for ``movielens`` and ``genome2021``, ``interactions``/
    ``item_attributes`` for ``generic``. ``scale`` is the number of users; ``options`` are the
    per-dataset keywords (``n_items`` for all; see the per-dataset functions)."""
    try:
        gen = _GENERATORS[dataset]
    except KeyError:
        raise ValueError(f"unknown dataset {dataset!r}; expected one of {DATASETS}") from None
    return gen(out_dir, scale=scale, seed=seed, **options)
