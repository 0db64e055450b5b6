"""Tests for tieaudit.sources.ingest: small hand-written files in the real formats, then the synthetic
generator's files."""

from __future__ import annotations

import doctest
import gzip
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tieaudit.data import interim, tables
from tieaudit.sources.ingest import IngestError, ingest, normalise_attribute
from tieaudit.sources import _genome_tags
from tests.conftest import examples

BEAUTY = "Beauty_and_Personal_Care"
AMAZON_HEADER = "user_id,parent_asin,rating,timestamp,history"
ALL_SPECS = ["store", "categories", "details.Brand", "main_category"]


# ------------------------------------------------------------------------------------------------
# helpers


def write_gz(path: Path, data: str | bytes) -> Path:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with open(path, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as gz:
        gz.write(raw)
    return path


def write_zip(path: Path, members: dict[str, str | bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def jsonl(*records: Any, crlf: bool = False) -> str:
    end = "\r\n" if crlf else "\n"
    return "".join((r if isinstance(r, str) else json.dumps(r)) + end for r in records)


def meta(asin: str, **fields: Any) -> dict[str, Any]:
    record = {"main_category": "All Beauty", "title": "t", "average_rating": 4.5,
              "rating_number": 3, "features": [], "description": [], "price": None, "images": [],
              "videos": [], "store": None, "categories": [], "details": {}, "parent_asin": asin,
              "bought_together": None}
    record.update(fields)
    return record


def frame(path: Path) -> pd.DataFrame:
    return pq.read_table(path).to_pandas()


def pairs(path: Path) -> list[tuple[str, str]]:
    return [tuple(r) for r in frame(path)[["item_id", "attribute"]].itertuples(index=False)]


@pytest.fixture
def out(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "out" / "interactions.parquet", tmp_path / "out" / "attributes.parquet"


@pytest.fixture
def amazon(tmp_path: Path) -> dict[str, Path]:
    """Benchmark split files (train with BOM + CRLF) and a small metadata file."""
    d = tmp_path / "amazon"
    d.mkdir()
    train = ("\ufeff" + AMAZON_HEADER + "\r\n"
             "AUSER1,B0ITEM0001,5.0,1588615855070,\r\n"
             "AUSER1,0123456789,4.0,1588615856999,B0ITEM0001\r\n"
             "AUSER2,B0ITEM0001,3.0,1000000000000,\r\n")
    valid = AMAZON_HEADER + "\nAUSER1,B0ITEM0002,2.0,1600000000500,B0ITEM0001 0123456789\n"
    test = AMAZON_HEADER + "\nAUSER1,B0ITEM0003,1.0,1600000001000,B0ITEM0001 0123456789 B0ITEM0002\n"
    records = [
        meta("B0ITEM0001", store="  L'Oreal   Paris ", categories=["Beauty & Personal Care", "Skin Care"],
             details={"Brand": "L'OREAL PARIS", "Item Form": "Cream", "Unit Count": 2}),
        meta("0123456789", store=None, main_category="Premium Beauty",
             details={"Brand": "Ｃｅｒａｖｅ"}),  # full-width letters: NFKC -> "cerave"
        meta("B0ITEM0002", store="Acme", categories=[], details={"Brand": "Acme"}),
        meta("B0ITEM0002", store="acme", categories=["Hair\tCare"]),  # duplicate record: merged
        meta("B0ITEM0003", store="   ", details=None),  # blank store: no attribute
    ]
    return {
        "train": write_gz(d / f"{BEAUTY}.train.csv.gz", train),
        "valid": write_gz(d / f"{BEAUTY}.valid.csv.gz", valid),
        "test": write_gz(d / f"{BEAUTY}.test.csv.gz", test),
        "meta": write_gz(d / f"meta_{BEAUTY}.jsonl.gz", jsonl(*records)),
    }


# ------------------------------------------------------------------------------------------------
# normalisation


def test_normalise_attribute_rules() -> None:
    assert normalise_attribute("  L'Oreal \t Paris\r\n") == "l'oreal paris"
    assert normalise_attribute("Ｃｅｒａｖｅ\u00a0Ｘ") == "cerave x"  # NFKC + no-break space
    assert normalise_attribute("STRASSE") == normalise_attribute("straße")  # casefold, not lower
    assert normalise_attribute(" \t ") == ""
    failures, attempted = doctest.testmod(interim, verbose=False)
    assert failures == 0 and attempted > 0


@settings(max_examples=examples(300), deadline=None)
@given(st.text())
def test_normalise_attribute_is_idempotent_and_tidy(text: str) -> None:
    once = normalise_attribute(text)
    assert normalise_attribute(once) == once
    assert once == once.strip() and "  " not in once
    assert not any(c.isspace() and c != " " for c in once)


# ------------------------------------------------------------------------------------------------
# amazon2023


def test_amazon_benchmark_and_meta(amazon: dict[str, Path], out: tuple[Path, Path]) -> None:
    report = ingest("amazon2023", amazon, *out, attributes=ALL_SPECS)
    inter = frame(out[0])
    assert list(inter.columns) == ["user_id", "item_id", "rating", "timestamp", "split"]
    assert pq.read_schema(out[0]).field("user_id").type == pa.string()
    assert inter["item_id"].tolist() == ["B0ITEM0001", "0123456789", "B0ITEM0001", "B0ITEM0002",
                                         "B0ITEM0003"]  # leading zero kept: ids are text
    # milliseconds floored to seconds
    assert inter["timestamp"].tolist() == [1588615855, 1588615856, 1000000000, 1600000000,
                                           1600000001]
    assert inter["split"].tolist() == ["train", "train", "train", "valid", "test"]
    assert inter["rating"].tolist() == [5.0, 4.0, 3.0, 2.0, 1.0]
    assert report.n_interactions == 5 and report.bad_lines == 0

    assert pairs(out[1]) == [
        ("0123456789", "details.brand=cerave"),
        ("0123456789", "main_category=premium beauty"),
        ("B0ITEM0001", "categories=beauty & personal care"),
        ("B0ITEM0001", "categories=skin care"),
        ("B0ITEM0001", "details.brand=l'oreal paris"),
        ("B0ITEM0001", "main_category=all beauty"),
        ("B0ITEM0001", "store=l'oreal paris"),  # same text as the brand, kept apart by the field
        ("B0ITEM0002", "categories=hair care"),
        ("B0ITEM0002", "details.brand=acme"),
        ("B0ITEM0002", "main_category=all beauty"),
        ("B0ITEM0002", "store=acme"),  # "Acme" and "acme" from two records: one row
        ("B0ITEM0003", "main_category=all beauty"),
    ]
    assert report.n_attribute_rows == 12
    meta_ = pq.read_schema(out[0]).metadata
    assert meta_[b"tieaudit.source"] == b"amazon2023"
    assert meta_[b"tieaudit.timestamp"] == b"unix-seconds"


def test_amazon_details_key_with_space_and_numbers(amazon: dict[str, Path],
                                                    out: tuple[Path, Path]) -> None:
    ingest("amazon2023", amazon, *out, attributes=["details.Item Form", "details.Unit Count"])
    assert pairs(out[1]) == [("B0ITEM0001", "details.item form=cream"),
                             ("B0ITEM0001", "details.unit count=2")]


def test_amazon_split_details_values(tmp_path: Path, amazon: dict[str, Path],
                                     out: tuple[Path, Path]) -> None:
    """A multi-valued details field is one comma-joined string in the real files: a spec with
    ``split`` makes one attribute of each part; without it the string stays whole."""
    records = [meta("A1", details={"Item Form": "Cream,Gel", "Scent": "Rose, Vanilla"}),
               meta("A2", details={"Item Form": "Stick, Pencil,  ,Powder", "Scent": ["Rose"]}),
               meta("A3", details={"Item Form": "cream", "Scent": 7})]  # fmt: skip
    write_gz(amazon["meta"], jsonl(*records))
    ingest("amazon2023", amazon, *out, attributes=[{"details.Item Form": {"split": ","}},
                                                   "details.Scent"])  # fmt: skip
    assert pairs(out[1]) == [
        ("A1", "details.item form=cream"), ("A1", "details.item form=gel"),
        ("A1", "details.scent=rose, vanilla"),  # not split: one attribute
        ("A2", "details.item form=pencil"), ("A2", "details.item form=powder"),
        ("A2", "details.item form=stick"), ("A2", "details.scent=rose"),
        ("A3", "details.item form=cream"), ("A3", "details.scent=7"),
    ]  # fmt: skip
    ingest("amazon2023", amazon, *out, attributes=[{"details.Scent": {"split": ","}}])
    assert [a for _, a in pairs(out[1])] == ["details.scent=rose", "details.scent=vanilla",
                                             "details.scent=rose", "details.scent=7"]  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"details.Item Form": {"split": ""}}, "split must be a separator string"),
        ({"details.Item Form": {"split": " "}}, "split must be a separator string"),
        ({"details.Item Form": {"spilt": ","}}, "unknown setting 'spilt'; known: split"),
        ({"details.Item Form": ","}, "settings must be a mapping of split"),
        ({"details.Brand": {"split": ","}, "store": {"split": ","}}, "a mapping names one field"),
        ({"title": {"split": ","}}, "unknown attribute field 'title'"),
    ],
)  # fmt: skip
def test_amazon_split_settings_are_checked(amazon: dict[str, Path], out: tuple[Path, Path],
                                           spec: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        ingest("amazon2023", amazon, *out, attributes=["store", spec])
    with pytest.raises(ValueError, match="given twice with different settings"):
        ingest("amazon2023", amazon, *out, attributes=[
            "details.Brand", {"details.Brand": {"split": ","}}])  # fmt: skip
    assert not out[0].exists()


def test_amazon_fields_without_values_are_named(amazon: dict[str, Path], out: tuple[Path, Path],
                                                caplog: pytest.LogCaptureFixture) -> None:
    records = [meta("C1", store="S", details={"Number Of Discs": "2", "Label": "x"}),
               meta("C2", details={"Number of Discs": 1, "Brand Name": "y"})]  # fmt: skip
    write_gz(amazon["meta"], jsonl(*records))
    caplog.set_level("INFO", logger="tieaudit")
    ingest("amazon2023", amazon, *out,
           attributes=["store", "details.Brand", "details.number of discs", "details.Item Form"])
    text = caplog.text
    assert "attribute field 'store': a value in 1 of 2 records" in text
    assert "attribute field 'details.Brand': a value in 0 of 2 records" in text
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 3, warned
    assert ("attribute field 'details.number of discs' (nearest details keys: 'Number Of Discs', "
            "'Number of Discs') gives no value in any of the 2 records") in warned[1]
    assert "'details.Brand' (nearest details keys: 'Brand Name')" in warned[0]
    assert "'details.Item Form' (no details key is close" in warned[2]
    # every field misses: an error naming each, nothing written
    records = [dict(r, main_category=None) for r in records]
    write_gz(amazon["meta"], jsonl(*records))
    with pytest.raises(IngestError, match=r"no attribute field gives a value in any of the 2 "
                       r"records: 'details\.Brand' \(nearest details keys: 'Brand Name'\); "
                       r"'main_category'"):  # fmt: skip
        ingest("amazon2023", amazon, *out, attributes=["details.Brand", "main_category"])
    assert not out[0].exists() and not out[1].exists()


@pytest.mark.parametrize("asin", [" ", "\t \u00a0"])
def test_amazon_whitespace_parent_asin_is_refused(amazon: dict[str, Path], out: tuple[Path, Path],
                                                  asin: str) -> None:
    good = json.dumps(meta("B0ITEM0001", store="S"))
    write_gz(amazon["meta"], jsonl(good, meta(asin, store="T")))
    with pytest.raises(IngestError, match=r"jsonl\.gz, line 2: field 'parent_asin' is "
                       "whitespace only"):  # fmt: skip
        ingest("amazon2023", amazon, *out, attributes=["store"])
    write_gz(amazon["train"], AMAZON_HEADER + f"\nAUSER1,{asin},5.0,1588615855070,\n")
    write_gz(amazon["meta"], jsonl(good))
    with pytest.raises(IngestError, match=r"train\.csv\.gz, line 2: column 'parent_asin' is "
                       "whitespace only"):  # fmt: skip
        ingest("amazon2023", amazon, *out, attributes=["store"])


@pytest.mark.parametrize("spec", ["brand", "details.", "Store", "details", "title", "categories.x"])
def test_unknown_attribute_field_lists_valid_forms(amazon: dict[str, Path], out: tuple[Path, Path],
                                                   spec: str) -> None:
    out[0].parent.mkdir()
    out[0].write_bytes(b"stale")  # an earlier output does not survive a failed run
    with pytest.raises(ValueError, match="details.<Key>") as err:
        ingest("amazon2023", amazon, *out, attributes=["store", spec])
    assert repr(spec) in str(err.value)
    assert not out[0].exists() and not out[1].exists()


def test_amazon_needs_attributes(amazon: dict[str, Path], out: tuple[Path, Path]) -> None:
    with pytest.raises(ValueError, match="needs attributes"):
        ingest("amazon2023", amazon, *out)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"parent_asin": "B1", "store": "x"', "invalid JSON"),
        ('{"store": "x"}', "missing field 'parent_asin'"),
        ('{"parent_asin": 7}', "'parent_asin' must be a string"),
        ('{"parent_asin": "B1", "categories": "Skin Care"}', "'categories' must be a list"),
        ('{"parent_asin": "B1", "details": {"Brand": {"a": 1}}}', "details['Brand'] must be"),
        ('["B1"]', "expected a JSON object"),
    ],
)
def test_amazon_meta_bad_record_names_file_and_line(amazon: dict[str, Path],
                                                    out: tuple[Path, Path], line: str,
                                                    reason: str) -> None:
    good = json.dumps(meta("B0ITEM0001", store="S"))
    write_gz(amazon["meta"], "\r\n".join([good, "", good, line, good]) + "\r\n")
    with pytest.raises(IngestError, match=re.escape(reason)) as err:
        ingest("amazon2023", amazon, *out, attributes=ALL_SPECS)
    assert f"meta_{BEAUTY}.jsonl.gz, line 4:" in str(err.value)  # the blank line 2 still counts
    assert err.value.line == 4
    assert not out[0].exists() and not out[1].exists()
    # One bad record allowed: skipped, counted and reported.
    report = ingest("amazon2023", amazon, *out, attributes=ALL_SPECS, max_bad_lines=1)
    assert report.bad_lines == 1
    assert report.bad_line_messages[0].endswith(str(err.value).split(", line 4: ")[1])
    assert pairs(out[1]) == [("B0ITEM0001", "main_category=all beauty"), ("B0ITEM0001", "store=s")]


def test_max_bad_lines_counts_over_all_files(amazon: dict[str, Path], out: tuple[Path, Path]) -> None:
    write_gz(amazon["valid"], AMAZON_HEADER + "\nAUSER1,B0ITEM0002,2.0,1600000000500\n")  # 4 columns
    write_gz(amazon["test"], AMAZON_HEADER + "\nAUSER1,B0ITEM0003,high,1600000001000,\n"
             "AUSER1,B0ITEM0003,1.0,,\n")
    with pytest.raises(IngestError, match=r"test\.csv\.gz, line 3: column 'timestamp': missing value"
                       r" \(bad record 3, max_bad_lines=2\)"):
        ingest("amazon2023", amazon, *out, attributes=["store"], max_bad_lines=2)
    report = ingest("amazon2023", amazon, *out, attributes=["store"], max_bad_lines=3)
    assert report.bad_lines == 3
    assert [m.split(f"{BEAUTY}.")[1] for m in report.bad_line_messages] == [
        "valid.csv.gz, line 2: expected 5 columns, found 4",
        "test.csv.gz, line 2: column 'rating': 'high' is not a finite number",
        "test.csv.gz, line 3: column 'timestamp': missing value",
    ]
    assert frame(out[0])["split"].tolist() == ["train"] * 3


def test_amazon_error_in_a_later_file_leaves_nothing(amazon: dict[str, Path],
                                                     out: tuple[Path, Path]) -> None:
    write_gz(amazon["test"], AMAZON_HEADER + "\nAUSER1,B0ITEM0003,1.0,1600000001000,,extra\n")
    with pytest.raises(IngestError, match=r"test\.csv\.gz, line 2: expected 5 columns, found 6"):
        ingest("amazon2023", amazon, *out, attributes=["store"])
    assert list(out[0].parent.iterdir()) == []  # no final files, no temporary files


def test_empty_files_are_clear_errors(amazon: dict[str, Path], out: tuple[Path, Path]) -> None:
    write_gz(amazon["valid"], "")
    with pytest.raises(IngestError, match=r"valid\.csv\.gz: empty file \(no header line\)"):
        ingest("amazon2023", amazon, *out, attributes=["store"])
    write_gz(amazon["valid"], "\ufeff" + AMAZON_HEADER + "\r\n")
    with pytest.raises(IngestError, match=r"valid\.csv\.gz: empty file \(a header but no records\)"):
        ingest("amazon2023", amazon, *out, attributes=["store"])
    write_gz(amazon["valid"], AMAZON_HEADER + "\nAUSER1,B0ITEM0002,2.0,1600000000500,\n")
    write_gz(amazon["meta"], "\n\r\n")
    with pytest.raises(IngestError, match=r"jsonl\.gz: empty file \(no records\)"):
        ingest("amazon2023", amazon, *out, attributes=["store"])
    assert not out[0].exists()


def test_csv_header_must_have_the_columns(amazon: dict[str, Path], out: tuple[Path, Path]) -> None:
    write_gz(amazon["train"], "user_id,asin,rating,timestamp\nA,B,1.0,1\n")
    with pytest.raises(IngestError, match=r"line 1: header lacks column\(s\) \['parent_asin'\]"):
        ingest("amazon2023", amazon, *out, attributes=["store"])


def test_amazon_reviews_dedup_and_k_core(tmp_path: Path, out: tuple[Path, Path]) -> None:
    def review(user: str, item: str, ts: int, rating: float = 5.0) -> dict[str, Any]:
        return {"rating": rating, "title": "t", "text": "x", "images": [], "asin": item + "X",
                "parent_asin": item, "user_id": user, "timestamp": ts, "helpful_vote": 0,
                "verified_purchase": True}

    rows = [review(u, i, 1_500_000_000_000 + 1000 * (10 * k + j))
            for k, u in enumerate(["u1", "u2"]) for j, i in enumerate(["a", "b"])]
    rows.append(review("u1", "a", 1_400_000_000_000, rating=1.0))  # earlier duplicate: kept
    rows.append(review("u1", "b", 1_600_000_000_000, rating=2.0))  # later duplicate: dropped
    rows.append(review("u3", "a", 1_500_000_000_000))  # u3 has 1 item -> gone at k=2
    rows.append(review("u3", "c", 1_500_000_000_000))  # c: only u3 -> gone, then u3 too
    paths = {"meta": write_gz(tmp_path / "meta.jsonl.gz", jsonl(meta("a", store="S"))),
             "reviews": write_gz(tmp_path / "reviews.jsonl.gz", jsonl(*rows, crlf=True))}
    report = ingest("amazon2023", paths, *out, attributes=["store"], k_core=2)
    inter = frame(out[0])
    assert "split" not in inter.columns
    got = sorted(zip(inter.user_id, inter.item_id, inter.rating, inter.timestamp, strict=True))
    assert got == [("u1", "a", 1.0, 1_400_000_000), ("u1", "b", 5.0, 1_500_000_001),
                   ("u2", "a", 5.0, 1_500_000_010), ("u2", "b", 5.0, 1_500_000_011)]
    assert report.dropped == {"duplicate_reviews": 2, "k_core": 2}
    # k_core=3 empties the data: a clear error, no output.
    with pytest.raises(IngestError, match="3-core"):
        ingest("amazon2023", paths, *out, attributes=["store"], k_core=3)
    assert not out[0].exists()


def test_amazon_reviews_or_benchmark_not_both(amazon: dict[str, Path], out: tuple[Path, Path]) -> None:
    paths = {**amazon, "reviews": amazon["meta"]}
    with pytest.raises(ValueError, match="not both"):
        ingest("amazon2023", paths, *out, attributes=["store"])


# ------------------------------------------------------------------------------------------------
# movielens


def ml_zip(tmp_path: Path, scores: str, tags: str | None = None, ratings: str | None = None) -> Path:
    tags = tags or "tagId,tag\n1,Action\n2,  dark   comedy\n3,ACTION \n4,zombies\n"
    ratings = ratings or "userId,movieId,rating,timestamp\r\n1,10,4.0,1100000000\r\n2,20,3.5,1200000000\r\n"
    return write_zip(tmp_path / "ml-25m.zip", {
        "ml-25m/": "",
        "ml-25m/ratings.csv": "\ufeff" + ratings,
        "ml-25m/genome-tags.csv": tags,
        "ml-25m/genome-scores.csv": scores,
        "ml-25m/movies.csv": "movieId,title,genres\n10,A (1995),Comedy\n",
    })


ML_SCORES = ("movieId,tagId,relevance\n"
             "10,1,0.92\n10,2,0.90\n10,3,0.95\n10,4,0.50\n"  # tags 1 and 3 are both "tag=action"
             "20,1,0.10\n20,2,0.70\n20,4,0.70\n")


def test_movielens_threshold_and_top_n_ties(tmp_path: Path, out: tuple[Path, Path]) -> None:
    paths = {"zip": ml_zip(tmp_path, ML_SCORES)}
    report = ingest("movielens", paths, *out, threshold=0.5)
    assert pairs(out[1]) == [("10", "tag=action"), ("10", "tag=dark comedy"), ("10", "tag=zombies"),
                             ("20", "tag=dark comedy"), ("20", "tag=zombies")]
    inter = frame(out[0])
    assert inter.to_dict("list") == {"user_id": ["1", "2"], "item_id": ["10", "20"],
                                     "rating": [4.0, 3.5], "timestamp": [1100000000, 1200000000]}
    assert report.n_attribute_rows == 5

    # top_n=1: movie 20 has a tie at 0.70 -> the smaller attribute string wins.
    ingest("movielens", paths, *out, top_n=1)
    assert pairs(out[1]) == [("10", "tag=action"), ("20", "tag=dark comedy")]
    # top_n=2: "action" (tags 3 and 1, 0.95 and 0.92, merged into one attribute) and "dark comedy"
    # (0.90); "zombies" (0.50) is out. Movie 20: the tie fills both places.
    ingest("movielens", paths, *out, top_n=2)
    assert pairs(out[1]) == [("10", "tag=action"), ("10", "tag=dark comedy"),
                             ("20", "tag=dark comedy"), ("20", "tag=zombies")]
    # Both: top 2 among the tags with relevance >= 0.75.
    ingest("movielens", paths, *out, top_n=2, threshold=0.75)
    assert pairs(out[1]) == [("10", "tag=action"), ("10", "tag=dark comedy")]


def test_movielens_top_n_does_not_depend_on_row_order(tmp_path: Path, out: tuple[Path, Path],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    rows = [(m, t, float(rng.choice([0.1, 0.5, 0.9]))) for m in range(1, 30) for t in range(1, 5)]
    tags = "tagId,tag\n1,a\n2,b\n3,c\n4,d\n"
    results = []
    monkeypatch.setattr(tables, "_CSV_BLOCK_BYTES", 64)  # many small batches
    monkeypatch.setattr(_genome_tags, "_REDUCE_ROWS", 10)  # and many reductions
    for perm in (np.arange(len(rows)), rng.permutation(len(rows))):
        body = "".join(f"{rows[k][0]},{rows[k][1]},{rows[k][2]}\n" for k in perm)
        paths = {"zip": ml_zip(tmp_path, "movieId,tagId,relevance\n" + body, tags=tags)}
        ingest("movielens", paths, *out, top_n=2)
        results.append(out[1].read_bytes())
    assert results[0] == results[1]
    # brute force: sort by (relevance desc, attribute asc) and take two per movie
    df = pd.DataFrame(rows, columns=["m", "t", "r"]).assign(a=lambda d: "tag=" + d.t.map(dict(
        zip([1, 2, 3, 4], "abcd", strict=True))))
    top = df.sort_values(["m", "r", "a"], ascending=[True, False, True]).groupby("m").head(2)
    expected = sorted((str(m), a) for m, a in zip(top.m, top.a, strict=True))
    assert pairs(out[1]) == expected


def test_movielens_bad_records(tmp_path: Path, out: tuple[Path, Path]) -> None:
    paths = {"zip": ml_zip(tmp_path, ML_SCORES + "20,99,0.5\n")}
    with pytest.raises(IngestError, match=r"genome-scores\.csv\], line 9: tagId '99' is not in the tag list"):
        ingest("movielens", paths, *out, threshold=0.5)
    report = ingest("movielens", paths, *out, threshold=0.5, max_bad_lines=1)
    assert report.bad_lines == 1
    paths = {"zip": ml_zip(tmp_path, ML_SCORES, ratings="userId,movieId,rating,timestamp\n"
                           "1,10,4.0,1100000000\n1,11,4.0,1100000000000\n")}
    with pytest.raises(IngestError, match=r"ratings\.csv\], line 3: timestamp 1100000000000 s is "
                       r"after 2200-01-01 \(wrong unit\?\)"):
        ingest("movielens", paths, *out, threshold=0.5)


def test_movielens_option_errors(tmp_path: Path, out: tuple[Path, Path]) -> None:
    paths = {"zip": ml_zip(tmp_path, ML_SCORES)}
    with pytest.raises(ValueError, match="threshold=... and/or top_n"):
        ingest("movielens", paths, *out)
    with pytest.raises(ValueError, match="top_n must be an integer >= 1"):
        ingest("movielens", paths, *out, top_n=0)
    with pytest.raises(ValueError, match=r"\['attributes'\] do not apply to source 'movielens'"):
        ingest("movielens", paths, *out, attributes=["store"], top_n=1)
    with pytest.raises(IngestError, match="no member 'ml-25m/genome-tags.csv'"):
        ingest("movielens", {"zip": write_zip(tmp_path / "x.zip", {"ml-25m/ratings.csv": "a"})},
               *out, top_n=1)


# ------------------------------------------------------------------------------------------------
# genome2021


def genome_zip(tmp_path: Path, ratings: str) -> Path:
    top = "movie_dataset_public_final/"
    return write_zip(tmp_path / "genome_2021.zip", {
        top + "raw/ratings.json": ratings,
        top + "raw/tags.json": jsonl({"tag": "Feel-Good", "id": 5}, {"tag": "dark", "id": 9},
                                     {"tag": "unscored", "id": 11}),
        top + "scores/glmer.csv": "tag,item_id,score\nFeel-Good,1,0.8\nFeel-Good,2,0.2\n"
                                  "dark,1,0.1\ndark,2,0.6\n",
    })


def test_genome2021_file_order_timestamps(tmp_path: Path, out: tuple[Path, Path]) -> None:
    ratings = jsonl({"item_id": 1, "user_id": 7, "rating": 4.5}, {"item_id": 1, "user_id": 8, "rating": 3},
                    "", {"item_id": 2, "user_id": "7", "rating": 5.0}, crlf=True)
    paths = {"zip": genome_zip(tmp_path, "\ufeff" + ratings)}
    ingest("genome2021", paths, *out, threshold=0.5)
    inter = frame(out[0])
    assert inter.to_dict("list") == {"user_id": ["7", "8", "7"], "item_id": ["1", "1", "2"],
                                     "rating": [4.5, 3.0, 5.0], "timestamp": [0, 1, 3]}
    assert pq.read_schema(out[0]).metadata[b"tieaudit.timestamp"] == b"file-order"
    assert pairs(out[1]) == [("1", "tag=feel-good"), ("2", "tag=dark")]


@pytest.mark.parametrize(("record", "reason"), [
    ('{"item_id": 1, "user_id": 7}', "missing field 'rating'"),
    ('{"item_id": 1.5, "user_id": 7, "rating": 3}', "'item_id' must be a string or integer"),
    ('{"item_id": 1, "user_id": true, "rating": 3}', "'user_id' must be a string or integer"),
    ('{"item_id": 1, "user_id": 7, "rating": "3"}', "'rating' must be a number"),
])
def test_genome2021_bad_rating_records(tmp_path: Path, out: tuple[Path, Path], record: str,
                                       reason: str) -> None:
    ratings = jsonl({"item_id": 1, "user_id": 7, "rating": 4.5}, record)
    paths = {"zip": genome_zip(tmp_path, ratings)}
    with pytest.raises(IngestError, match=rf"ratings\.json\], line 2: .*{reason}"):
        ingest("genome2021", paths, *out, top_n=1)


# ------------------------------------------------------------------------------------------------
# generic


def test_generic_csv_without_timestamp(tmp_path: Path, out: tuple[Path, Path]) -> None:
    inter = write_gz(tmp_path / "inter.csv.gz", "item_id,user_id,extra\r\n007,u1,x\r\n8,u2,y\r\n\r\n9,u1,z\r\n")
    attrs = tmp_path / "attrs.csv"
    attrs.write_text('item_id,attribute\n007,"Brand:  ACME"\n007,brand:acme\n8,Kind: Oil\n')
    report = ingest("generic", {"interactions": inter, "item_attributes": attrs}, *out)
    got = frame(out[0])
    assert got["user_id"].tolist() == ["u1", "u2", "u1"]
    assert got["item_id"].tolist() == ["007", "8", "9"]
    assert got["rating"].isna().all()
    assert got["timestamp"].tolist() == [0, 1, 3]  # line - 2: the blank line keeps its place
    assert pq.read_schema(out[0]).metadata[b"tieaudit.timestamp"] == b"file-order"
    assert pairs(out[1]) == [("007", "brand: acme"), ("007", "brand:acme"), ("8", "kind: oil")]
    assert report.n_interactions == 3


def test_generic_parquet_with_int_ids_and_ms(tmp_path: Path, out: tuple[Path, Path]) -> None:
    inter = tmp_path / "inter.data"  # recognised by content, not by name
    pq.write_table(pa.table({"user_id": [1, 2], "item_id": [10, 20], "rating": [None, 2.5],
                             "timestamp": [1_600_000_000_999, 1_600_000_001_000]}), inter)
    attrs = tmp_path / "attrs.parquet"
    pq.write_table(pa.table({"item_id": ["10", "20"], "attribute": ["A", "B"]}), attrs)
    paths = {"interactions": inter, "item_attributes": attrs}
    with pytest.raises(IngestError, match=r"inter\.data, row 1: timestamp 1600000000999 s is after"):
        ingest("generic", paths, *out)
    ingest("generic", paths, *out, timestamp_unit="ms")
    got = frame(out[0])
    assert got["user_id"].tolist() == ["1", "2"] and got["item_id"].tolist() == ["10", "20"]
    assert np.isnan(got["rating"][0]) and got["rating"][1] == 2.5
    assert got["timestamp"].tolist() == [1_600_000_000, 1_600_000_001]
    # A timestamp[ms] column carries its own unit.
    pq.write_table(pa.table({"user_id": ["a"], "item_id": ["10"],
                             "timestamp": pa.array([1_600_000_000_999], pa.timestamp("ms"))}), inter)
    ingest("generic", paths, *out)
    assert frame(out[0])["timestamp"].tolist() == [1_600_000_000]
    pq.write_table(pa.table({"user_id": ["a", None], "item_id": ["10", "20"]}), inter)
    with pytest.raises(IngestError, match=r"row 2: missing or invalid value for column 'user_id'"):
        ingest("generic", paths, *out)


def test_generic_option_and_path_errors(tmp_path: Path, out: tuple[Path, Path]) -> None:
    inter = tmp_path / "i.csv"
    inter.write_text("user_id,item_id\nu,i\n")
    attrs = tmp_path / "a.csv"
    attrs.write_text("item_id,attribute\ni,   \n")
    with pytest.raises(IngestError, match=r"a\.csv, line 2: attribute is empty after normalisation"):
        ingest("generic", {"interactions": inter, "item_attributes": attrs}, *out)
    with pytest.raises(ValueError, match=r"missing \['item_attributes'\]; unknown \['attrs'\]"):
        ingest("generic", {"interactions": inter, "attrs": attrs}, *out)
    with pytest.raises(ValueError, match="timestamp_unit must be"):
        ingest("generic", {"interactions": inter, "item_attributes": attrs}, *out,
               timestamp_unit="seconds")
    with pytest.raises(ValueError, match="unknown source 'amazon'"):
        ingest("amazon", {}, *out)
    with pytest.raises(ValueError, match="is also an input"):
        ingest("generic", {"interactions": inter, "item_attributes": attrs}, inter, out[1])
    assert inter.read_text() == "user_id,item_id\nu,i\n"


# ------------------------------------------------------------------------------------------------
# line numbers, determinism, row groups


@st.composite
def csv_with_bad_lines(draw: st.DrawFn) -> tuple[str, dict[int, str]]:
    """A generic interactions CSV and the expected {line: reason fragment} of its bad lines."""
    lines, bad, good = ["user_id,item_id,rating,timestamp"], {}, False
    for _ in range(draw(st.integers(1, 40))):
        kind = draw(st.sampled_from(["ok", "ok", "ok", "blank", "columns", "rating", "id"]))
        n = len(lines) + 1
        if kind == "ok":
            lines.append(f"u{n},i{n},{draw(st.sampled_from(['', '1.5', '3']))},{n}")
            good = True
        elif kind == "blank":
            lines.append(draw(st.sampled_from(["", ",,,"])))
        elif kind == "columns":
            lines.append(f"u{n},i{n},1")
            bad[n] = "expected 4 columns, found 3"
        elif kind == "rating":
            lines.append(f"u{n},i{n},x{n},{n}")
            bad[n] = f"'x{n}' is not a finite number"
        else:
            lines.append(f",i{n},1,{n}")
            bad[n] = "missing value for column 'user_id'"
    if not good:  # at least one record, or the file is "empty"
        lines.append(f"u{len(lines) + 1},i,1,{len(lines) + 1}")
    return draw(st.sampled_from(["\n", "\r\n"])).join(lines) + "\n", bad


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=csv_with_bad_lines(), block=st.sampled_from([40, 64, 1 << 20]))
def test_csv_bad_line_numbers_are_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        data: tuple[str, dict[int, str]], block: int) -> None:
    text, bad = data
    monkeypatch.setattr(tables, "_CSV_BLOCK_BYTES", block)
    inter = tmp_path / "i.csv"
    inter.write_text(text, newline="")
    attrs = tmp_path / "a.csv"
    attrs.write_text("item_id,attribute\ni,x\n")
    out = tmp_path / "i.parquet", tmp_path / "a.parquet"
    report = ingest("generic", {"interactions": inter, "item_attributes": attrs}, *out,
                    max_bad_lines=len(bad))
    assert report.bad_lines == len(bad)
    got = {int(m.split(", line ")[1].split(":")[0]): m for m in report.bad_line_messages}
    assert sorted(got) == sorted(bad)[: len(got)]
    for line, message in got.items():
        assert bad[line] in message
    # exactly the good records are kept (their timestamp is their line number)
    rows = frame(out[0])
    expected = [n for n, ln in enumerate(text.splitlines(), 1)
                if n > 1 and n not in bad and ln.strip(",")]
    assert rows["timestamp"].tolist() == expected
    if bad:
        with pytest.raises(IngestError, match=f", line {min(bad)}: "):
            ingest("generic", {"interactions": inter, "item_attributes": attrs}, *out)


def test_output_is_byte_identical_and_row_groups_fixed(amazon: dict[str, Path], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interim, "ROW_GROUP_ROWS", 2)
    outputs = []
    # Different CSV batch sizes, and attribute pairs sorted in memory or through run files
    # merged in small chunks: the same bytes.
    for k, (block, run, chunk) in enumerate([(80, 3, 2), (1 << 20, 1 << 20, 1 << 16)]):
        monkeypatch.setattr(tables, "_CSV_BLOCK_BYTES", block)
        monkeypatch.setattr(interim, "_RUN_ROWS", run)
        monkeypatch.setattr(interim, "_MERGE_CHUNK_ROWS", chunk)
        o = tmp_path / f"run{k}" / "i.parquet", tmp_path / f"run{k}" / "a.parquet"
        ingest("amazon2023", amazon, *o, attributes=ALL_SPECS)
        outputs.append(tuple(p.read_bytes() for p in o))
        assert sorted(p.name for p in o[0].parent.iterdir()) == ["a.parquet", "i.parquet"]
    assert outputs[0] == outputs[1]
    md = pq.ParquetFile(tmp_path / "run0" / "i.parquet").metadata
    assert [md.row_group(i).num_rows for i in range(md.num_row_groups)] == [2, 2, 1]
    md = pq.ParquetFile(tmp_path / "run0" / "a.parquet").metadata
    assert [md.row_group(i).num_rows for i in range(md.num_row_groups)] == [2] * 6


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pairs_=st.lists(st.tuples(st.sampled_from(["a", "ab", "b", "é", "B0", ""]),
                              st.sampled_from(["x", "x y", "ß", "z", "tag=a"])), max_size=60),
    run=st.integers(1, 12),
    chunk=st.integers(1, 5),
    batch=st.integers(1, 7),
)
def test_pair_sorter_merges_runs_into_distinct_sorted_pairs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pairs_: list[tuple[str, str]], run: int,
    chunk: int, batch: int,
) -> None:
    monkeypatch.setattr(interim, "_RUN_ROWS", run)
    monkeypatch.setattr(interim, "_MERGE_CHUNK_ROWS", chunk)
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    sorter = interim._PairSorter(lambda: scratch)
    for start in range(0, len(pairs_), batch):
        part = pairs_[start:start + batch]
        sorter.add(pa.array([p[0] for p in part], pa.string()),
                   pa.array([p[1] for p in part], pa.string()))
    sink = interim._ParquetSink(tmp_path / "pairs.parquet", interim.ATTRIBUTES_SCHEMA)
    sorter.write(sink)
    sink.close()
    assert pairs(tmp_path / "pairs.parquet") == sorted(set(pairs_))


def test_atomic_output_on_write_failure(amazon: dict[str, Path], out: tuple[Path, Path],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    ingest("amazon2023", amazon, *out, attributes=["store"])  # a good earlier result

    def boom(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(interim, "_distinct_sorted", boom)
    with pytest.raises(OSError, match="disk full"):
        ingest("amazon2023", amazon, *out, attributes=["store"])
    assert list(out[0].parent.iterdir()) == []


# ------------------------------------------------------------------------------------------------
# the synthetic generator's files


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    from tieaudit.sources import synthetic  # imported here so the tests above never depend on it

    root = tmp_path_factory.mktemp("synthetic")
    return {
        "amazon2023": synthetic.generate("amazon2023", root / "amazon", scale=120, seed=3,
                                         with_reviews=True),
        "movielens": synthetic.generate("movielens", root / "ml", scale=60, seed=3),
        "genome2021": synthetic.generate("genome2021", root / "genome", scale=60, seed=3),
        "generic": synthetic.generate("generic", root / "generic", scale=60, seed=3),
    }


def test_synthetic_amazon_benchmark(generated: dict[str, dict[str, Path]],
                                    out: tuple[Path, Path]) -> None:
    paths = {k: v for k, v in generated["amazon2023"].items() if k != "reviews"}
    report = ingest("amazon2023", paths, *out, attributes=ALL_SPECS + ["details.Item Form"])
    got = frame(out[0])
    raw = pd.concat([pd.read_csv(paths[s], dtype=str, keep_default_na=False).assign(split=s)
                     for s in ("train", "valid", "test")], ignore_index=True)
    assert len(got) == len(raw) == report.n_interactions
    assert got["user_id"].tolist() == raw["user_id"].tolist()
    assert got["item_id"].tolist() == raw["parent_asin"].tolist()
    assert got["split"].tolist() == raw["split"].tolist()
    assert (got["timestamp"] == raw["timestamp"].astype(np.int64) // 1000).all()
    assert got["rating"].tolist() == raw["rating"].astype(float).tolist()
    attrs = frame(out[1])
    prefixes = attrs["attribute"].str.split("=").str[0]
    assert set(prefixes) == {"store", "categories", "details.brand", "main_category",
                             "details.item form"}
    assert set(got["item_id"]) <= set(attrs["item_id"])  # every benchmark item has metadata
    assert attrs.equals(attrs.sort_values(["item_id", "attribute"]).reset_index(drop=True))
    assert not attrs.duplicated().any()
    assert all(a.split("=", 1)[1] == normalise_attribute(a.split("=", 1)[1]) for a in attrs.attribute)


def test_synthetic_amazon_reviews_5_core_is_the_benchmark(generated: dict[str, dict[str, Path]],
                                                          tmp_path: Path) -> None:
    files = generated["amazon2023"]
    bench = tmp_path / "b.parquet", tmp_path / "ba.parquet"
    ingest("amazon2023", {k: files[k] for k in ("train", "valid", "test", "meta")}, *bench,
           attributes=["store"])
    reviews = tmp_path / "r.parquet", tmp_path / "ra.parquet"
    report = ingest("amazon2023", {k: files[k] for k in ("reviews", "meta")}, *reviews,
                    attributes=["store"])
    key = ["user_id", "item_id", "rating", "timestamp"]
    a = frame(bench[0])[key].sort_values(key).reset_index(drop=True)
    b = frame(reviews[0])[key].sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    assert report.dropped["k_core"] > 0
    assert bench[1].read_bytes() == reviews[1].read_bytes()  # same metadata, same attributes


def test_synthetic_movielens_top_n_matches_brute_force(generated: dict[str, dict[str, Path]],
                                                       out: tuple[Path, Path]) -> None:
    zpath = generated["movielens"]["zip"]
    ingest("movielens", {"zip": zpath}, *out, top_n=3, threshold=0.2)
    with zipfile.ZipFile(zpath) as zf:
        scores = pd.read_csv(zf.open("ml-25m/genome-scores.csv"), dtype={"movieId": str})
        tags = pd.read_csv(zf.open("ml-25m/genome-tags.csv"))
        ratings = pd.read_csv(zf.open("ml-25m/ratings.csv"), dtype={"userId": str, "movieId": str})
    tags["a"] = "tag=" + tags["tag"].map(normalise_attribute)
    df = scores.merge(tags, on="tagId")
    df = df[df.relevance >= 0.2].groupby(["movieId", "a"], as_index=False).relevance.max()
    top = df.sort_values(["movieId", "relevance", "a"], ascending=[True, False, True])
    top = top.groupby("movieId").head(3)
    assert pairs(out[1]) == sorted(zip(top.movieId, top.a, strict=True))
    got = frame(out[0])
    assert got["user_id"].tolist() == ratings["userId"].tolist()
    assert got["timestamp"].tolist() == ratings["timestamp"].tolist()  # already seconds


def test_synthetic_genome2021_and_generic(generated: dict[str, dict[str, Path]],
                                          out: tuple[Path, Path], tmp_path: Path) -> None:
    zpath = generated["genome2021"]["zip"]
    report = ingest("genome2021", {"zip": zpath}, *out, threshold=0.5)
    with zipfile.ZipFile(zpath) as zf:
        raw = pd.read_json(zf.open("movie_dataset_public_final/raw/ratings.json"), lines=True)
        glmer = pd.read_csv(zf.open("movie_dataset_public_final/scores/glmer.csv"))
    got = frame(out[0])
    assert got["user_id"].tolist() == raw["user_id"].astype(str).tolist()
    assert got["timestamp"].tolist() == list(range(len(raw)))
    assert report.n_attribute_rows == int((glmer.score >= 0.5).sum())

    files = generated["generic"]
    first = ingest("generic", files, *out)
    again = tmp_path / "i2.parquet", tmp_path / "a2.parquet"
    ingest("generic", files, *again)
    assert out[0].read_bytes() == again[0].read_bytes()
    assert out[1].read_bytes() == again[1].read_bytes()
    raw = pd.read_csv(files["interactions"], dtype=str)
    got = frame(out[0])
    assert got["item_id"].tolist() == raw["item_id"].tolist()
    assert got["timestamp"].tolist() == raw["timestamp"].astype(np.int64).tolist()
    assert first.n_attribute_rows == len(pd.read_csv(files["item_attributes"]).drop_duplicates())


# ------------------------------------------------------------------------------------------------
# numbers: one ASCII grammar (tieaudit.common.numbers) for ratings and timestamps


@pytest.mark.parametrize(
    ("rating", "timestamp", "reason"),
    [
        ("1_5", "5", "column 'rating': '1_5' is not a finite number"),
        ("\uff14", "5", "column 'rating': '\uff14' is not a finite number"),
        ("nan", "5", "column 'rating': 'nan' is not a finite number"),
        ("inf", "5", "column 'rating': 'inf' is not a finite number"),
        ("4", "0x10", "column 'timestamp': '0x10' is not an integer"),  # Arrow's cast read 16
        ("4", "\u0661\u0665", "column 'timestamp': '\u0661\u0665' is not an integer"),
        ("4", "1_5", "column 'timestamp': '1_5' is not an integer"),
        ("4", "15.0", "column 'timestamp': '15.0' is not an integer"),
    ],
)
def test_generic_numbers_follow_the_ascii_grammar(tmp_path: Path, out: tuple[Path, Path],
                                                  rating: str, timestamp: str, reason: str) -> None:
    inter = tmp_path / "i.csv"
    inter.write_text(f"user_id,item_id,rating,timestamp\nu,a,4,1\nu,b,{rating},{timestamp}\n",
                     encoding="utf-8")
    attrs = tmp_path / "a.csv"
    attrs.write_text("item_id,attribute\na,x\n")
    with pytest.raises(IngestError) as info:
        ingest("generic", {"interactions": inter, "item_attributes": attrs}, *out)
    assert str(info.value).endswith(f"i.csv, line 3: {reason}")


def test_generic_numbers_of_the_grammar_are_read(tmp_path: Path, out: tuple[Path, Path]) -> None:
    inter = tmp_path / "i.csv"
    inter.write_text("user_id,item_id,rating,timestamp\nu,a,+4.5,+7\nu,b,.5e1,-0\nu,c,,007\n")
    attrs = tmp_path / "a.csv"
    attrs.write_text("item_id,attribute\na,x\n")
    ingest("generic", {"interactions": inter, "item_attributes": attrs}, *out)
    got = frame(out[0])
    assert got["rating"].tolist()[:2] == [4.5, 5.0] and np.isnan(got["rating"][2])
    assert got["timestamp"].tolist() == [7, 0, 7]
