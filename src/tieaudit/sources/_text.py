"""Invented product-copy text for the synthetic generators: a fixed (seed-independent) pool of
sentences, used for Amazon features, descriptions and reviews and for Tag Genome 2021 reviews."""

from __future__ import annotations

from tieaudit.common.seeds import make_rng

# fmt: off
_SKIN_TYPES = ("All", "Dry", "Oily", "Sensitive", "Combination", "Normal")
_ADJECTIVES = (
    "Hydrating", "Gentle", "Nourishing", "Ultra-Light", "Soothing", "Brightening", "Firming",
    "Clarifying", "Daily", "Intensive", "Sheer", "Long-Lasting", "Weightless", "Repairing",
    "Matte", "Radiant",
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
