"""Synthetic Amazon item metadata: one JSON line per item in the real ``meta_<Category>.jsonl``
layout (keys in the real order, nested lists and dicts, ~2.8 KB per record), written in blocks of
items each drawn from its own seeded stream."""

from __future__ import annotations

import datetime
import functools
import json

import numpy as np

from tieaudit.data.gen import _random_codes
from tieaudit.common.seeds import make_rng
from tieaudit.sources._text import _ADJECTIVES, _SKIN_TYPES, _pool
from tieaudit.sources.amazon2023.world import (
    _CATEGORY_PATHS,
    _COLORS,
    _FEATURE_LABELS,
    _HEX,
    _IMG_CHARS,
    _ITEM_FORMS,
    _MAIN_CATEGORIES,
    _MAIN_CATEGORY_P,
    _MS_2008,
    _MS_END,
    _NOUNS,
    _SCENTS,
    _SIZES,
    _AmazonWorld,
)


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
