"""A download's expected format from what the dataset source says the file is, not only from the
file's name: a zip behind a URL that does not end in ``.zip`` is still checked as a zip, by the
download function and by the workflow's download step."""

from __future__ import annotations

import copy
import gzip
import io
import zipfile
from pathlib import Path

import pytest

from tests.test_config_validation import BASE, snakemake
from tieaudit.data.download import FORMAT_NAMES, DownloadError, download
from tieaudit.sources import available_sources, get_source


def zip_bytes() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("a.csv", "x\n1\n")
    return buf.getvalue()


def test_a_declared_format_is_checked_whatever_the_name(tmp_path: Path) -> None:
    wrong = tmp_path / "download"  # a URL path with no suffix, e.g. .../download?id=...
    wrong.write_bytes(gzip.compress(b"x\n1\n", mtime=0))
    with pytest.raises(DownloadError, match=r"not a zip file \(the dataset source expects one "
                                            r"for this file\): it starts with b'\\x1f\\x8b"):
        download(wrong.as_uri(), tmp_path / "raw" / "download", format="zip", progress=False)
    assert not (tmp_path / "raw" / "download").exists()
    # by its name alone the same file is accepted (nothing says what it must be)
    download(wrong.as_uri(), tmp_path / "raw" / "download", progress=False)

    good = tmp_path / "archive.bin"
    good.write_bytes(zip_bytes())
    assert download(good.as_uri(), tmp_path / "raw" / "archive.bin", format="zip",
                    progress=False).read_bytes() == good.read_bytes()
    with pytest.raises(ValueError, match="unknown format 'rar'"):
        download(good.as_uri(), tmp_path / "raw" / "x.bin", format="rar", progress=False)


@pytest.mark.parametrize("name", available_sources())
def test_every_format_a_source_declares_is_one_download_checks(name: str) -> None:
    declared = {f.format for f in get_source(name).files} - {None}
    assert declared <= set(FORMAT_NAMES), declared


@pytest.mark.slow
def test_a_declared_zip_is_checked_whatever_its_url_is_called(tmp_path: Path) -> None:
    cfg = copy.deepcopy(BASE)
    cfg["datasets"] = {"ml": {"source": "movielens", "files": {"zip": {"url": "file:in/archive"}},
                              "options": {"top_n": 5}}}
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "archive").write_bytes(gzip.compress(b"userId,movieId\n", mtime=0))
    res = snakemake(tmp_path, cfg, "data/raw/ml/zip/archive")
    assert res.returncode != 0
    log = (tmp_path / "results" / "logs" / "download" / "ml" / "zip" / "archive.log").read_text()
    assert "not a zip file (the dataset source expects one for this file)" in log, log[-2000:]
    assert not (tmp_path / "data" / "raw" / "ml" / "zip" / "archive").exists()
