"""The synthetic Amazon world: taste clusters of items, each with its own couple of stores, a
category path, item form, scent and skin type that its items take most of the time (so
attribute-overlap scores tie as they do on the real catalogue), and the words of the invented
metadata."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tieaudit.data.gen import _cluster_count, _random_codes
from tieaudit.common.seeds import make_rng
from tieaudit.sources._text import _SKIN_TYPES

_MS_2008 = 1_199_145_600_000  # 2008-01-01 UTC, ms
_MS_2019 = 1_546_300_800_000  # 2019-01-01: older Amazon reviews carry whole seconds
_MS_END = 1_694_995_200_000  # 2023-09-18: the 2023 crawl ends in Sep 2023

_UPPER_DIGITS = np.frombuffer(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ", dtype=np.uint8)
_BASE32 = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", dtype=np.uint8)
_IMG_CHARS = np.frombuffer(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-", dtype=np.uint8
)
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


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
_COLORS = ("Natural", "Black", "Nude", "Red", "Pink", "Clear", "Brown", "White")
_MAIN_CATEGORIES = (
    "All Beauty", "Health & Personal Care", "Premium Beauty", "Amazon Home", "AMAZON FASHION",
)
_MAIN_CATEGORY_P = (0.80, 0.08, 0.05, 0.04, 0.03)
_NOUNS = (
    "Moisturizer", "Face Cream", "Body Lotion", "Cleanser", "Lip Balm", "Sunscreen SPF 30",
    "Shampoo", "Hair Spray", "Foundation", "Mascara", "Lipstick", "Nail Polish", "Perfume",
    "Brush Set", "Bath Salts", "Shaving Cream", "Toothpaste", "Serum", "Night Cream",
)
_SIZES = (
    "1.7 fl oz", "8 Ounce", "0.5 oz", "3.4 Fl Oz (Pack of 2)", "16.9 fl. oz.", "50 ml", "1 Count",
    "12 Piece Set", "6.7 Ounce (Pack of 3)", '2" x 4"',
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


def _user_ids(rng: np.random.Generator, n: int) -> list[str]:
    """Distinct Amazon-2023-style user ids: 28 characters, ``A``, one of ``EFGH``, then 26
    upper-case base32 characters (like ``AFKZENTNBQ7A7V7UXW5JJI6UGRYQ``)."""
    tails = _random_codes(rng, n, b"", _BASE32, 26)
    return [
        "A" + "EFGH"[int(b)] + t for t, b in zip(tails, rng.integers(0, 4, n).tolist(), strict=True)
    ]


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
