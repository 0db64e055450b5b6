"""tieaudit.sources.testing: every registered source passes the conformance battery, and the
battery catches each kind of broken source."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from tieaudit.data.interim import IngestReport
from tieaudit.sources import available_sources, get_source
from tieaudit.sources.generic import SOURCE as GENERIC
from tieaudit.sources.testing import SourceConformanceError, check_source_conformance


@pytest.mark.parametrize("name", available_sources())
def test_every_registered_source_conforms(name: str, tmp_path: Path) -> None:
    check_source_conformance(get_source(name), tmp_path)


def test_amazon_raw_reviews_conform(tmp_path: Path) -> None:
    check_source_conformance(get_source("amazon2023"), tmp_path, scale=60,
                             generator={"with_reviews": True}, keys=["meta", "reviews"],
                             options={"attributes": ["store"], "k_core": 2})


_CALLS = iter(range(1 << 30))


def _nondeterministic(out_dir: Any, *, scale: int, seed: int) -> dict[str, Path]:
    files = GENERIC.generate(out_dir, scale=scale, seed=seed)
    with open(files["item_attributes"], "a") as fh:
        fh.write(f"I000001,call:{next(_CALLS)}\n")  # differs between calls
    return files


def _unsorted(paths: Any, out_interactions: Any, out_attributes: Any, **options: Any) -> IngestReport:
    import pyarrow as pa
    import pyarrow.parquet as pq

    report = GENERIC.ingest(paths, out_interactions, out_attributes, **options)
    table = pq.read_table(out_attributes)
    pq.write_table(table.take(pa.array(range(table.num_rows - 1, -1, -1))), out_attributes)
    return report


def _swallows(paths: Any, out_interactions: Any, out_attributes: Any, **options: Any) -> IngestReport:
    try:
        return GENERIC.ingest(paths, out_interactions, out_attributes, **options)
    except ValueError as exc:
        raise RuntimeError("could not parse") from exc  # loses the file name and the type


@pytest.mark.parametrize(
    ("change", "check"),
    [
        ({"name": "Generic-2"}, "interface"),
        ({"description": "two\nlines"}, "interface"),
        ({"generator": _nondeterministic}, "generate-deterministic"),
        ({"check_files": lambda keys: []}, None),  # still conforms: the required keys are checked
        ({"files": tuple(dataclasses.replace(f, required=False) for f in GENERIC.files)},
         "validate"),
        ({"parser": _unsorted}, "ingest"),
        ({"parser": _swallows}, "corrupt"),
    ],
)
def test_a_broken_source_fails_the_check_it_breaks(tmp_path: Path, change: dict,
                                                   check: str | None) -> None:
    source = dataclasses.replace(GENERIC, **change)
    if check is None:
        check_source_conformance(source, tmp_path)
        return
    with pytest.raises(SourceConformanceError, match=rf"^\[{check}\] "):
        check_source_conformance(source, tmp_path)
