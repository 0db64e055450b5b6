"""``amazon2023``: Amazon Reviews 2023 (McAuley Lab; Hou et al. 2024, "Bridging Language and Items
for Retrieval and Recommendation", arXiv:2403.03952), one category.

The parser is :func:`~tieaudit.sources.amazon2023.parse.ingest_amazon2023`, the generator
:func:`~tieaudit.sources.amazon2023.synthetic.generate_amazon2023`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tieaudit.sources.amazon2023.parse import (
    _AMAZON_SPLITS,
    ATTRIBUTE_FORMS,
    _check_k_core,
    _parse_attribute_specs,
    ingest_amazon2023,
)
from tieaudit.sources.amazon2023.synthetic import (
    AMAZON_CATEGORY,
    amazon_file_names,
    generate_amazon2023,
)
from tieaudit.sources.base import DatasetSource, FileKey, Option, register

__all__ = [
    "AMAZON_CATEGORY",
    "ATTRIBUTE_FORMS",
    "SOURCE",
    "amazon_file_names",
    "generate_amazon2023",
    "ingest_amazon2023",
]


def _check_files(keys: set[str]) -> list[str]:
    """The benchmark files or the raw reviews, not both."""
    if "reviews" in keys:
        if any(k in keys for k in _AMAZON_SPLITS):
            return ["give either the benchmark files (train, valid, test) or reviews, not both"]
        return []
    return [f"missing key {k!r} for source amazon2023 (or give reviews instead of train, "
            "valid and test)" for k in _AMAZON_SPLITS if k not in keys]


def _check_options(options: Mapping[str, Any]) -> None:
    _parse_attribute_specs(options.get("attributes"))


def _split(name: str) -> FileKey:
    return FileKey(name, f"benchmark 5-core last-out split, {name} rows "
                   f"(`<Category>.{name}.csv.gz`); with the other two, or give reviews",
                   required=False)


#: The ``amazon2023`` source, registered: its files, options and reader.
SOURCE = register(DatasetSource(
    name="amazon2023",
    description="Amazon Reviews 2023, one category: the benchmark split or the raw reviews; "
    "item metadata fields as attributes",
    files=(
        *(_split(name) for name in _AMAZON_SPLITS),
        FileKey("meta", "item metadata, JSON lines (`meta_<Category>.jsonl.gz`)"),
        FileKey("reviews", "raw reviews, JSON lines (`<Category>.jsonl.gz`), instead of the "
                "benchmark split: de-duplicated (earliest review of a user and item) and k-cored",
                required=False),
    ),
    parser=ingest_amazon2023,
    generator=generate_amazon2023,
    options=(
        Option("attributes", "which metadata fields become attributes (required): one or more of "
               f"{', '.join(f'`{form}`' for form in ATTRIBUTE_FORMS)} (e.g. `details.Brand`); "
               "written `<field>=<normalised value>`. A details value is a string or a number in "
               "the real files, several values one comma-joined string (`Cream,Gel`): "
               "`- details.Item Form: {split: \",\"}` makes one attribute of each part. A field "
               "no record has is a warning naming the nearest keys; when every field misses, "
               "an error"),
        Option("k_core", "with `reviews`: keep the iterative k-core, every user and item with at "
               "least `k_core` interactions", 5, _check_k_core),
    ),
    example_options={"attributes": ["store", "categories", "details.Brand"]},
    check_files=_check_files,
    check_options=_check_options,
))
