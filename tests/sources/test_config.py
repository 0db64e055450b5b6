"""A dataset's source, file keys, parser options and generator are checked by the source itself
before any job runs: ``snakemake -n`` stops, naming each broken key at once."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from tests.test_config_validation import BASE, dry_run_fails, snakemake

pytestmark = pytest.mark.workflow  # Snakemake plans the workflow: make test-fast leaves it out


def test_every_broken_source_key_is_named_at_once(tmp_path: Path) -> None:
    cfg = copy.deepcopy(BASE)
    mini = cfg["datasets"]["mini"]
    zip_file = {"url": "file:data/ml-25m.zip"}
    cfg["datasets"].update({
        "typo": {"source": "movielens", "files": {"zipp": zip_file}, "options": {"top_n": 5}},
        "opts": {"source": "movielens", "files": {"zip": zip_file},
                 "options": {"threshold": "high", "top": 3}},
        "none": {"source": "genome2021", "files": {"zip": zip_file}},
        "amazon": {"source": "amazon2023", "files": {"meta": zip_file, "reviews": zip_file,
                                                     "test": zip_file}},
        "other": {"source": "movielen", "files": {"zip": zip_file}},
        "split": {"source": "amazon2023", "files": {"meta": zip_file, "reviews": zip_file},
                  "options": {"attributes": ["store", {"details.Item Form": {"spilt": ","}}]}},
        "gen": {**copy.deepcopy(mini), "synthetic": {"generator": "generic", "scale": 10, "seed": 1,
                                                    "options": {"n_item": 5}}},
        "gen2": {**copy.deepcopy(mini), "synthetic": {"generator": "netflix", "scale": 10,
                                                     "seed": 1}},
    })
    cfg["datasets"]["unit"] = copy.deepcopy(mini)
    cfg["datasets"]["unit"]["options"] = {"timestamp_unit": "h", "max_bad_lines": -1}
    out = dry_run_fails(tmp_path, cfg)
    expected = [
        "config: datasets.typo.files: unknown key 'zipp' for source movielens; expected: zip",
        "config: datasets.typo.files: missing key 'zip' for source movielens",
        "config: datasets.opts.options: unknown option 'top' for source movielens; expected: "
        "threshold, top_n, max_bad_lines, max_line_bytes",
        "config: datasets.opts.options: threshold must be a finite number, got 'high'",
        "config: datasets.none.options: genome tags need threshold=... and/or top_n=...",
        "config: datasets.amazon.files: give either the benchmark files (train, valid, test) or "
        "reviews, not both",
        "config: datasets.amazon.options: amazon2023 needs attributes=[...]",
        "config: datasets.split.options: attribute field 'details.Item Form': unknown setting "
        "'spilt'; known: split",
        "config: datasets.other.source: unknown source 'movielen'; choose one of ['amazon2023', ",
        "config: datasets.gen.synthetic.options: unknown option 'n_item' for generator generic; "
        "expected: n_items",
        "config: datasets.gen2.synthetic.generator: unknown source 'netflix'",
        "config: datasets.unit.options.timestamp_unit: timestamp_unit must be 's' or 'ms', got 'h'",
        "config: datasets.unit.options.max_bad_lines: max_bad_lines must be an integer >= 0, "
        "got -1",
    ]
    missing = [e for e in expected if e not in out]
    assert not missing, (missing, out[-4000:])
    assert "datasets.mini" not in out  # only the broken datasets


def test_a_source_with_null_options_dry_runs(tmp_path: Path) -> None:
    cfg = copy.deepcopy(BASE)
    cfg["datasets"]["mini"]["options"] = {"timestamp_unit": None, "max_bad_lines": 3}
    res = snakemake(tmp_path, cfg, "-n")
    assert res.returncode == 0, res.stdout[-3000:]
