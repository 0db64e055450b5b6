"""Format-faithful synthetic stand-ins for the real datasets.

The real datasets may never be committed or downloaded in tests, so the demo pipeline, the parsers'
tests and the benchmarks run on files written here. Each generator writes small files **in the real
layout** -- the real file and zip member names, gzip and zip containers, CSV headers and quoting,
JSON field names, field order and value types (nested dicts and lists included), and timestamp
units -- so that a parser which reads these files reads the real ones too. The numbers in them are
invented.

API
---
:func:`generate` hands the work to the registered dataset source of that name
(:func:`tieaudit.sources.get_source`; the built-in ones are :data:`DATASETS`) and returns ``{file
key: written path}``; each source's module documents its generator, its options and how its sizes
follow ``scale`` (the number of users). Every file is written to a temporary file in the
destination folder and renamed into place, so a reader never sees a partial file. Output is a pure function of the arguments: the same seed gives byte-identical files (gzip
headers carry ``mtime=0`` and no file name; zip entries carry a fixed timestamp, fixed permissions
and a fixed "made by" system), a different seed gives different files. Randomness comes from
:func:`tieaudit.common.seeds.make_rng` with the seed and a stream name per purpose. (Identical bytes assume
the same zlib build: deflate output is fixed for a given zlib version and level, not across all.)

Tie structure
-------------
Attribute-overlap scorers tie heavily on the real data because attributes come from small
vocabularies. The generators reproduce that on purpose: items belong to one of a few "taste
clusters"; each cluster has its own couple of stores/brands, category path, item form, scent and
skin type (Amazon), genres and signature genome tags (MovieLens, Tag Genome 2021), or attribute
values; items take their cluster's values most of the time. Users have a primary cluster
(sometimes a secondary one) and most of their interactions fall in it. So a held-out item usually
shares attributes with the user's history, while most sampled negatives (from other clusters)
share none: overlap scores are mostly zero with a few small integer levels, and the held-out item
is often tied with several negatives from its own cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tieaudit.sources import available_sources, get_source

__all__ = ["DATASETS", "generate"]

#: The built-in dataset sources, each with its generator.
DATASETS = tuple(available_sources())


def generate(
    dataset: str, out_dir: Path | str, *, scale: int, seed: int, **options: Any
) -> dict[str, Path]:
    """Write a synthetic ``dataset`` (a registered source name) into ``out_dir`` and return
    ``{file key: path}``. ``scale`` is the number of users; ``options`` are the keywords of that
    source's generator (``n_items`` for all; see the source's module)."""
    if dataset not in available_sources():
        raise ValueError(f"unknown dataset {dataset!r}; expected one of {available_sources()}")
    return get_source(dataset).generate(out_dir, scale=scale, seed=seed, **options)
