"""The ``amazon2023`` generator: Amazon Reviews 2023 (one category) in the released layout.

Scale: benchmark items = max(40, ceil(0.285 * scale)) (207,649 items / 729,576 users in the real
5-core Beauty_and_Personal_Care benchmark); metadata items = 4.95 x benchmark items (1,028,914
metadata records); override with ``n_items=`` (metadata items) and ``n_bench_items=``.

Metadata is written in fixed blocks of items, each from its own seeded stream
(:mod:`tieaudit.sources.amazon2023.meta`), and streamed through gzip, so the metadata file for a
million items (about 2.8 GB uncompressed, ~2.8 KB per record like the real one) never sits in
memory; the block layout does not depend on any option, so ``n_items`` changes only how many
records are written.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tieaudit.data.gen import (
    _RATING_P_IN,
    _RATING_P_OUT,
    _check_scale,
    _choose_counts,
    _fill_distinct,
    _gzip_file,
    _increasing_times,
    _Lines,
    _random_codes,
    _zipf_cdf,
)
from tieaudit.common.seeds import make_rng
from tieaudit.sources._text import _pool
from tieaudit.sources.amazon2023.meta import _amazon_meta_block
from tieaudit.sources.amazon2023.world import (
    _IMG_CHARS,
    _MS_2008,
    _MS_2019,
    _MS_END,
    _REVIEW_TITLES,
    _UPPER_DIGITS,
    _amazon_world,
    _AmazonWorld,
    _user_ids,
)

AMAZON_CATEGORY = "Beauty_and_Personal_Care"

# Ratios of the real datasets (see the module docstring).
AMAZON_BENCH_ITEMS_PER_USER = 0.285
AMAZON_META_ITEMS_PER_BENCH_ITEM = 4.95

_META_BLOCK = 4096  # items per independently seeded metadata block (fixed: output must not vary)


def amazon_file_names(category: str = AMAZON_CATEGORY) -> dict[str, str]:
    """Real file names (basenames of the download URLs) for one Amazon Reviews 2023 category."""
    return {
        "train": f"{category}.train.csv.gz",
        "valid": f"{category}.valid.csv.gz",
        "test": f"{category}.test.csv.gz",
        "meta": f"meta_{category}.jsonl.gz",
        "reviews": f"{category}.jsonl.gz",
    }


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
