"""The ``recbole`` source: RecBole atomic files, hand-written and generated.

The generated files are read back with the standard library (``csv`` with a tab delimiter), as
RecBole reads them, and the same data written as ``generic`` files must give the same interim
tables and the same metrics.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from tieaudit import evaluate
from tieaudit.sources.ingest import IngestError, ingest
from tieaudit.sources.synthetic import generate
from tieaudit.pipeline.sampling import build_candidates, sample_rows
from tieaudit.scorers import get_scorer, score_candidates
from tieaudit.pipeline.split import leave_last_out

INTER = "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
ITEM = "item_id:token\tmovie_title:token_seq\trelease_year:token\tgenre:token_seq\n"


def atomic(tmp_path: Path, inter: str, item: str) -> dict[str, Path]:
    paths = {"inter": tmp_path / "d.inter", "item": tmp_path / "d.item"}
    paths["inter"].write_text(inter, encoding="utf-8")
    paths["item"].write_text(item, encoding="utf-8")
    return paths


@pytest.fixture
def out(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "out" / "i.parquet", tmp_path / "out" / "a.parquet"


def pairs(path: Path) -> list[tuple[str, str]]:
    table = pd.read_parquet(path)
    return list(zip(table["item_id"], table["attribute"], strict=True))


def test_fields_types_tokens_and_time(tmp_path: Path, out: tuple[Path, Path]) -> None:
    paths = atomic(
        tmp_path,
        INTER + "7\t10\t4\t978300760.9\n7\t20\t\t978300760\n8\t10\t2.5\t1.0e9\n",
        ITEM + '10\tToy Story\t1995\tAnimation  Children\'s Comedy\n20\t"A\tB"\t\t\n'
        "10\tToy Story\t1995\tCOMEDY\n",
    )
    report = ingest("recbole", paths, *out, attributes=["genre", "release_year"])
    inter = pd.read_parquet(out[0])
    assert inter["user_id"].tolist() == ["7", "7", "8"]
    assert inter["item_id"].tolist() == ["10", "20", "10"]
    assert inter["rating"].tolist()[::2] == [4.0, 2.5] and np.isnan(inter["rating"][1])
    assert inter["timestamp"].tolist() == [978300760, 978300760, 1_000_000_000]  # floored
    meta = pq.read_schema(out[0]).metadata
    assert meta[b"tieaudit.source"] == b"recbole" and meta[b"tieaudit.timestamp"] == b"unix-seconds"
    # token_seq splits on single spaces (empty tokens dropped); an item on two lines gets both
    assert pairs(out[1]) == [("10", "genre=animation"), ("10", "genre=children's"),
                             ("10", "genre=comedy"), ("10", "release_year=1995")]
    assert report.n_attribute_rows == 4

    ingest("recbole", paths, *out, attributes=["movie_title"])
    assert pairs(out[1]) == [("10", "movie_title=story"), ("10", "movie_title=toy"),
                             ("20", "movie_title=a b")]  # quoted: one token, tab and all


def test_without_timestamp_and_rating_the_file_order_is_the_time(
    tmp_path: Path, out: tuple[Path, Path]
) -> None:
    paths = atomic(tmp_path, "item_id:token\tuser_id:token\treview:token_seq\n"
                             "1\tu\tgood one\n\n2\tu\tmeh\n", ITEM + "1\tX\t2000\tDrama\n")
    ingest("recbole", paths, *out, attributes=["genre"])
    inter = pd.read_parquet(out[0])
    assert inter["timestamp"].tolist() == [0, 2]  # line number - first record line
    assert inter["rating"].isna().all()
    assert pq.read_schema(out[0]).metadata[b"tieaudit.timestamp"] == b"file-order"


@pytest.mark.parametrize(
    ("inter", "item", "attributes", "where", "message"),
    [
        ("user_id\titem_id:token\n", None, ["genre"], "d.inter", "header field 'user_id' is not "
         "name:type with a type of token, token_seq, float, float_seq"),
        ("user_id:token\titem_id:id\n", None, ["genre"], "d.inter", "'item_id:id' is not name:type"),
        ("user_id:float\titem_id:token\n", None, ["genre"], "d.inter",
         "field 'user_id' has type float, not token"),
        ("user_id:token\titem:token\n", None, ["genre"], "d.inter",
         "no field 'item_id' (found user_id:token, item:token)"),
        ("user_id:token\titem_id:token\tuser_id:token\n", None, ["genre"], "d.inter",
         "field 'user_id' appears twice"),
        (None, None, ["title"], "d.item", "no field 'title'"),
        (None, "item_id:token\tprice:float\n1\t2.5\n", ["price"], "d.item",
         "field 'price' has type float, not token or token_seq"),
    ],
)
def test_a_bad_header_names_the_file_and_line_1(
    tmp_path: Path, out: tuple[Path, Path], inter: str | None, item: str | None,
    attributes: list[str], where: str, message: str,
) -> None:
    paths = atomic(tmp_path, (inter or INTER) + "1\t2\t3\t4\n", item or ITEM + "2\tX\t2000\tDrama\n")
    with pytest.raises(IngestError, match="line 1: .*" + message.replace("(", r"\(")
                       .replace(")", r"\)").replace(".", r"\.")) as info:
        ingest("recbole", paths, *out, attributes=attributes)
    assert info.value.file == str(tmp_path / where) and info.value.line == 1
    assert not out[0].exists() and not out[1].exists()


def test_bad_records_name_file_and_line(tmp_path: Path, out: tuple[Path, Path]) -> None:
    body = "1\t2\t3\t4\n1\t3\t5\n1\t4\tx\t6\n1\t5\t4\t1700000000000\n1\t6\t4\t7\n"
    paths = atomic(tmp_path, INTER + body, ITEM + "2\tX\t2000\tDrama\n")
    with pytest.raises(IngestError, match=r"d\.inter, line 3: expected 4 columns, found 3"):
        ingest("recbole", paths, *out, attributes=["genre"])
    report = ingest("recbole", paths, *out, attributes=["genre"], max_bad_lines=3)
    assert [m.split(": ", 1)[0] for m in report.bad_line_messages] == [
        f"{paths['inter']}, line {n}" for n in (3, 4, 5)]
    assert "1700000000000.0 s is after 2200-01-01" in report.bad_line_messages[2]
    assert pd.read_parquet(out[0])["item_id"].tolist() == ["2", "6"]


def test_options_are_checked_before_anything_is_read(tmp_path: Path,
                                                     out: tuple[Path, Path]) -> None:
    paths = atomic(tmp_path, INTER, ITEM)
    for bad in (None, [], "genre", ["genre", "genre"], ["genre:token"]):
        with pytest.raises(ValueError, match="attributes"):
            ingest("recbole", paths, *out, attributes=bad)
    with pytest.raises(ValueError, match=r"missing \['item'\]; unknown \['items'\]"):
        ingest("recbole", {"inter": paths["inter"], "items": paths["item"]}, *out,
               attributes=["genre"])


# ------------------------------------------------------------------------------------------------
# generated files


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return generate("recbole", tmp_path_factory.mktemp("recbole"), scale=300, seed=4)


def read_atomic(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh, delimiter="\t"))
    return rows[0], rows[1:]


def test_generated_files_are_in_the_ml_1m_layout(generated: dict[str, Path],
                                                 tmp_path: Path) -> None:
    assert {k: p.name for k, p in generated.items()} == {"inter": "synthetic.inter",
                                                         "item": "synthetic.item"}
    header, rows = read_atomic(generated["inter"])
    assert header == ["user_id:token", "item_id:token", "rating:float", "timestamp:float"]
    item_header, items = read_atomic(generated["item"])
    assert item_header == ["item_id:token", "movie_title:token_seq", "release_year:token",
                           "genre:token_seq"]
    item_ids = {r[0] for r in items}
    by_user: dict[str, list[tuple[int, int]]] = {}
    for user, item, rating, ts in rows:
        assert item in item_ids and rating in {"1", "2", "3", "4", "5"}
        assert 956_703_932 <= int(ts) <= 1_046_454_590  # ml-1m's span, whole seconds
        by_user.setdefault(user, []).append((int(item), int(ts)))
    assert len(by_user) == 300 and min(len(v) for v in by_user.values()) >= 20
    assert all([i for i, _ in v] == sorted(i for i, _ in v) for v in by_user.values())
    assert any([t for _, t in v] != sorted(t for _, t in v) for v in by_user.values())
    assert all(r[3] and all(r[3].split(" ")) for r in items)  # every item has a genre
    again = generate("recbole", tmp_path, scale=300, seed=4)
    assert all(again[k].read_bytes() == generated[k].read_bytes() for k in generated)


def as_generic(paths: dict[str, Path], folder: Path, fields: list[str]) -> dict[str, Path]:
    """The same data as generic CSV files, written with the csv module: attributes
    ``<field>=<token>`` as the recbole source spells them (before normalisation)."""
    folder.mkdir()
    _, rows = read_atomic(paths["inter"])
    header, items = read_atomic(paths["item"])
    names = [h.split(":")[0] for h in header]
    out = {"interactions": folder / "interactions.csv",
           "item_attributes": folder / "item_attributes.csv"}
    with open(out["interactions"], "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["user_id", "item_id", "rating", "timestamp"], *rows])
    with open(out["item_attributes"], "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["item_id", "attribute"])
        for row in items:
            for field in fields:
                for token in row[names.index(field)].split(" "):
                    w.writerow([row[0], f"{field}={token}"])
    return out


def metrics(interactions: Path, attributes: Path) -> pd.DataFrame:
    inter, attrs = pd.read_parquet(interactions), pd.read_parquet(attributes)
    split = leave_last_out(inter)
    catalog = np.union1d(split.history["item_id"].astype(str), split.heldout["item_id"].astype(str))
    rows = sample_rows(split.heldout, 200, seed=0)
    cands = build_candidates(rows, split.history, catalog, 19, seed=0)
    scorer = get_scorer("attribute_overlap", weight="rating").fit(split.history, attrs)
    rules = ["input_order", "optimistic", "pessimistic", "expected"]
    return evaluate(score_candidates(cands, scorer), ["HR@10", "nDCG@10"], rules).summary()


def test_generic_files_and_recbole_files_give_the_same_metrics(
    generated: dict[str, Path], tmp_path: Path
) -> None:
    fields = ["genre", "release_year"]
    generic = as_generic(generated, tmp_path / "generic", fields)
    rb = tmp_path / "rb.i.parquet", tmp_path / "rb.a.parquet"
    gn = tmp_path / "gn.i.parquet", tmp_path / "gn.a.parquet"
    ingest("recbole", generated, *rb, attributes=fields)
    ingest("generic", generic, *gn)
    for a, b in zip(rb, gn, strict=True):  # the same tables; only the metadata names the source
        assert pq.read_table(a).replace_schema_metadata().equals(
            pq.read_table(b).replace_schema_metadata())
    ours, theirs = metrics(*rb), metrics(*gn)
    pd.testing.assert_frame_equal(ours, theirs)
    by_rule = ours.set_index(["metric", "rule"])["value"]
    assert by_rule["HR@10", "optimistic"] > by_rule["HR@10", "pessimistic"]  # ties to break
