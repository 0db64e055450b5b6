"""Tests for the format-faithful synthetic generators (tieaudit.sources.synthetic).

The files are read back with the standard library only (gzip, zipfile, csv, json), as a parser of
the real files would, and checked against the real layouts: names, headers, field names, field
order and value types, timestamp units, referential integrity and the tie structure.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import subprocess
import sys
import zipfile
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from tieaudit.sources import synthetic as syn
from tieaudit.sources import genome2021, movielens

SEED = 7
SCALES = {"amazon2023": 200, "movielens": 150, "genome2021": 150, "generic": 200}
OPTIONS = {"amazon2023": {"with_reviews": True}}
REPO = Path(__file__).resolve().parents[2]

META_KEYS = [
    "main_category", "title", "average_rating", "rating_number", "features", "description",
    "price", "images", "videos", "store", "categories", "details", "parent_asin",
    "bought_together",
]  # fmt: skip
REVIEW_KEYS = [
    "rating", "title", "text", "images", "asin", "parent_asin", "user_id", "timestamp",
    "helpful_vote", "verified_purchase",
]  # fmt: skip
USER_RE = re.compile(r"A[EFGH][A-Z2-7]{26}")
ASIN_RE = re.compile(r"B0[0-9A-Z]{8}")


def _generate(root: Path, dataset: str, seed: int = SEED) -> dict[str, Path]:
    return syn.generate(
        dataset, root / dataset, scale=SCALES.get(dataset, 150), seed=seed,  # 150: other sources
        **OPTIONS.get(dataset, {}),
    )


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    root = tmp_path_factory.mktemp("synthetic")
    return {dataset: _generate(root, dataset) for dataset in syn.DATASETS}


def _gz_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    with gzip.open(path, "rt", encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


def _gz_jsonl(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _zip_csv(zf: zipfile.ZipFile, name: str) -> tuple[list[str], list[list[str]]]:
    rows = list(csv.reader(io.TextIOWrapper(zf.open(name), encoding="utf-8", newline="")))
    return rows[0], rows[1:]


def _zip_jsonl(zf: zipfile.ZipFile, name: str) -> list[dict]:
    return [json.loads(line) for line in zf.read(name).decode("utf-8").splitlines()]


# ---------------------------------------------------------------------------------------------
# determinism, containers, API
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dataset", syn.DATASETS)
def test_same_seed_same_bytes_other_seed_other_bytes(
    dataset: str, out: dict, tmp_path: Path
) -> None:
    again = _generate(tmp_path / "again", dataset)
    other = _generate(tmp_path / "other", dataset, seed=SEED + 1)
    assert again.keys() == out[dataset].keys() == other.keys()
    for name, path in out[dataset].items():
        assert again[name].read_bytes() == path.read_bytes(), name
        assert again[name].name == path.name
    assert any(other[n].read_bytes() != p.read_bytes() for n, p in out[dataset].items())
    leftovers = [p for p in (tmp_path / "again" / dataset).iterdir() if p.name.endswith(".part")]
    assert leftovers == []


def test_return_values_and_file_names(out: dict) -> None:
    a = out["amazon2023"]
    assert {k: p.name for k, p in a.items()} == {
        "train": "Beauty_and_Personal_Care.train.csv.gz",
        "valid": "Beauty_and_Personal_Care.valid.csv.gz",
        "test": "Beauty_and_Personal_Care.test.csv.gz",
        "meta": "meta_Beauty_and_Personal_Care.jsonl.gz",
        "reviews": "Beauty_and_Personal_Care.jsonl.gz",
    }
    assert {k: p.name for k, p in out["movielens"].items()} == {"zip": "ml-25m.zip"}
    assert {k: p.name for k, p in out["genome2021"].items()} == {"zip": "genome_2021.zip"}
    assert {k: p.name for k, p in out["generic"].items()} == {
        "interactions": "interactions.csv",
        "item_attributes": "item_attributes.csv",
    }


def test_gzip_headers_have_no_mtime_and_no_name(out: dict) -> None:
    for path in out["amazon2023"].values():
        head = path.read_bytes()[:10]
        assert head[:3] == b"\x1f\x8b\x08"
        assert head[3] & 0x08 == 0, f"{path.name}: FNAME flag set"
        assert head[4:8] == b"\0\0\0\0", f"{path.name}: mtime not 0"


def test_zip_entries_are_fixed(out: dict) -> None:
    cases = (
        ("movielens", movielens.ML_25M_MEMBERS, (2019, 11, 21, 10, 55, 0)),
        ("genome2021", genome2021.GENOME_2021_MEMBERS, (2021, 6, 28, 12, 0, 0)),
    )
    for key, members, when in cases:
        with zipfile.ZipFile(out[key]["zip"]) as zf:
            infos = zf.infolist()
            assert [i.filename for i in infos] == list(members)
            assert {i.date_time for i in infos} == {when}
            assert all(i.create_system == 3 for i in infos)
            for i in infos:
                mode = 0o40755 if i.is_dir() else 0o100644
                assert i.external_attr >> 16 == mode
                assert i.compress_type == (
                    zipfile.ZIP_STORED if i.is_dir() else zipfile.ZIP_DEFLATED
                )
            assert zf.testzip() is None


def test_generate_rejects_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown dataset"):
        syn.generate("netflix", tmp_path, scale=10, seed=1)
    with pytest.raises(ValueError, match="scale"):
        syn.generate("generic", tmp_path, scale=0, seed=1)
    with pytest.raises(TypeError):
        syn.generate("generic", tmp_path, scale=10, seed=1, no_such_option=True)
    assert not any(tmp_path.iterdir())


def test_n_items_sets_the_catalogue_size(tmp_path: Path) -> None:
    paths = syn.generate("amazon2023", tmp_path, scale=60, seed=3, n_items=5000)
    again = syn.generate("amazon2023", tmp_path / "again", scale=60, seed=3, n_items=5000)
    assert paths["meta"].read_bytes() == again["meta"].read_bytes()  # several metadata blocks
    meta = _gz_jsonl(paths["meta"])
    assert len(meta) == 5000
    assert len({m["parent_asin"] for m in meta}) == 5000
    _, test = _gz_csv(paths["test"])
    assert len(test) == 60
    ml = syn.generate("movielens", tmp_path / "ml", scale=30, seed=3, n_items=90, n_tags=300)
    with zipfile.ZipFile(ml["zip"]) as zf:
        assert len(_zip_csv(zf, "ml-25m/movies.csv")[1]) == 90
        tags = [t[1] for t in _zip_csv(zf, "ml-25m/genome-tags.csv")[1]]
    assert len(set(tags)) == len(tags) == 300


def test_cli_writes_and_reports(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "make_synthetic.py"), "--dataset", "generic",
         "--scale", "30", "--seed", "5", "--out", str(tmp_path)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    lines = [line.split("\t") for line in proc.stdout.splitlines()]
    assert [line[0] for line in lines] == ["interactions", "item_attributes"]
    direct = syn.generate("generic", tmp_path / "direct", scale=30, seed=5)
    assert Path(lines[0][1]).read_bytes() == direct["interactions"].read_bytes()
    assert int(lines[0][2]) == direct["interactions"].stat().st_size


# ---------------------------------------------------------------------------------------------
# Amazon Reviews 2023
# ---------------------------------------------------------------------------------------------


def _amazon_split(out: dict) -> dict[str, list[list[str]]]:
    split = {}
    for key in ("train", "valid", "test"):
        header, rows = _gz_csv(out["amazon2023"][key])
        assert header == ["user_id", "parent_asin", "rating", "timestamp", "history"]
        split[key] = rows
    return split


def test_amazon_benchmark_fields(out: dict) -> None:
    split = _amazon_split(out)
    raw = gzip.decompress(out["amazon2023"]["train"].read_bytes()).decode("ascii")
    assert raw.startswith("user_id,parent_asin,rating,timestamp,history\n")
    assert '"' not in raw and "\r" not in raw
    for rows in split.values():
        for user, item, rating, ts, history in rows:
            assert USER_RE.fullmatch(user) and len(user) == 28
            assert ASIN_RE.fullmatch(item)
            assert rating in {"1.0", "2.0", "3.0", "4.0", "5.0"}
            assert re.fullmatch(r"1[0-9]{12}", ts), "timestamps are Unix milliseconds"
            assert history == "" or all(ASIN_RE.fullmatch(h) for h in history.split(" "))
    assert len(split["valid"]) == len(split["test"]) == SCALES["amazon2023"]
    # the 2023 data has millisecond timestamps; most older reviews carry whole seconds only
    whole_seconds = np.mean([int(r[3]) % 1000 == 0 for rows in split.values() for r in rows])
    assert 0.05 < whole_seconds < 0.95


def test_amazon_leave_last_out_with_history(out: dict) -> None:
    split = _amazon_split(out)
    train = defaultdict(list)
    for row in split["train"]:
        train[row[0]].append(row)
    valid = {r[0]: r for r in split["valid"]}
    test = {r[0]: r for r in split["test"]}
    assert valid.keys() == test.keys() == train.keys()
    users_per_item: Counter[str] = Counter()
    for user, rows in train.items():
        items = [r[1] for r in rows]
        for i, row in enumerate(rows):  # train row i: the user's first i train items
            assert row[4] == " ".join(items[:i])
        assert valid[user][4] == " ".join(items)
        assert test[user][4] == " ".join(items + [valid[user][1]])
        seq = [int(r[3]) for r in rows] + [int(valid[user][3]), int(test[user][3])]
        assert seq == sorted(seq) and len(set(seq)) == len(seq)
        every = items + [valid[user][1], test[user][1]]
        assert len(every) >= 5 and len(set(every)) == len(every)
        users_per_item.update(every)
    assert min(users_per_item.values()) >= 5, "5-core: every item has >= 5 users"


def test_amazon_meta_fields_and_types(out: dict) -> None:
    meta = _gz_jsonl(out["amazon2023"]["meta"])
    assert len(meta) > 4 * len({r[1] for rows in _amazon_split(out).values() for r in rows})
    for m in meta:
        assert list(m) == META_KEYS
        assert isinstance(m["main_category"], str) and isinstance(m["title"], str)
        assert isinstance(m["average_rating"], float) and isinstance(m["rating_number"], int)
        assert all(isinstance(x, str) for x in m["features"] + m["description"])
        assert m["price"] is None or isinstance(m["price"], float)
        assert m["images"] and m["images"][0]["variant"] == "MAIN"
        for img in m["images"]:
            assert list(img) == ["thumb", "large", "variant", "hi_res"]
            assert img["hi_res"] is None or img["hi_res"].startswith("https://")
        for vid in m["videos"]:
            assert list(vid) == ["title", "url", "user_id"]
        assert m["store"] is None or isinstance(m["store"], str)
        assert all(isinstance(c, str) for c in m["categories"])
        assert m["categories"] == [] or m["categories"][0] == "Beauty & Personal Care"
        assert isinstance(m["details"], dict) and m["details"]
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in m["details"].items())
        assert ASIN_RE.fullmatch(m["parent_asin"])
        assert m["bought_together"] is None
    # every optional shape occurs somewhere
    assert {m["price"] is None for m in meta} == {True, False}
    assert {m["store"] is None for m in meta} == {True, False}
    assert {m["description"] == [] for m in meta} == {True, False}
    assert {m["categories"] == [] for m in meta} == {True, False}
    assert any(img["hi_res"] is None for m in meta for img in m["images"])
    assert any(m["videos"] for m in meta)
    # real records average ~2.8 KB (2.84 GB / 1.03 M)
    raw = gzip.decompress(out["amazon2023"]["meta"].read_bytes())
    assert 2200 < len(raw) / len(meta) < 3400
    assert b"\\u" in raw  # non-ASCII text is escaped, as json.dumps writes it


def test_amazon_benchmark_items_are_in_meta(out: dict) -> None:
    asins = {m["parent_asin"] for m in _gz_jsonl(out["amazon2023"]["meta"])}
    split = _amazon_split(out)
    bench = {r[1] for rows in split.values() for r in rows}
    bench |= {h for rows in split.values() for r in rows for h in r[4].split()}
    assert bench <= asins and len(bench) < len(asins)


def test_amazon_reviews_match_the_benchmark(out: dict) -> None:
    reviews = _gz_jsonl(out["amazon2023"]["reviews"])
    for r in reviews:
        assert list(r) == REVIEW_KEYS
        assert isinstance(r["rating"], float) and isinstance(r["timestamp"], int)
        assert 10**12 < r["timestamp"] < 2 * 10**12, "timestamps are Unix milliseconds"
        assert isinstance(r["helpful_vote"], int) and isinstance(r["verified_purchase"], bool)
        for img in r["images"]:
            assert list(img) == [
                "small_image_url", "medium_image_url", "large_image_url", "attachment_type"
            ]  # fmt: skip
    # the 5-core of the raw reviews is exactly the benchmark
    edges = {(r["user_id"], r["parent_asin"]): (r["rating"], r["timestamp"]) for r in reviews}
    while True:
        users = Counter(u for u, _ in edges)
        items = Counter(i for _, i in edges)
        kept = {e: v for e, v in edges.items() if users[e[0]] >= 5 and items[e[1]] >= 5}
        if len(kept) == len(edges):
            break
        edges = kept
    bench = {
        (r[0], r[1]): (float(r[2]), int(r[3])) for rows in _amazon_split(out).values() for r in rows
    }
    assert edges == bench
    assert len(reviews) > len(bench)


def _amazon_attributes(m: dict) -> set[tuple]:
    attrs: set[tuple] = set()
    if m["store"]:
        attrs.add(("store", m["store"]))
    if m["categories"]:
        attrs.add(("categories", tuple(m["categories"])))
    for key in ("Brand", "Item Form"):
        if key in m["details"]:
            attrs.add((key, m["details"][key]))
    return attrs


def _tie_stats(
    positives: list[tuple[set, set, set]], catalogue: dict, rng: np.random.Generator
) -> tuple[float, float, float]:
    """(share of users whose held-out item ties a sampled negative, share of negatives scoring
    0, share of held-out items scoring > 0) for a binary attribute-overlap score."""
    keys = sorted(catalogue)
    tied = zero = nonzero = 0.0
    for pos_attrs, profile, exclude in positives:
        pool = [k for k in keys if k not in exclude]
        negs = rng.choice(len(pool), size=min(99, len(pool)), replace=False)
        s_pos = len(pos_attrs & profile)
        s_neg = np.array([len(catalogue[pool[j]] & profile) for j in negs])
        tied += bool((s_neg == s_pos).any())
        zero += float((s_neg == 0).mean())
        nonzero += s_pos > 0
    n = len(positives)
    return tied / n, zero / n, nonzero / n


def test_amazon_attribute_overlap_ties(out: dict) -> None:
    attrs = {m["parent_asin"]: _amazon_attributes(m) for m in _gz_jsonl(out["amazon2023"]["meta"])}
    split = _amazon_split(out)
    bench = {r[1] for rows in split.values() for r in rows}
    catalogue = {a: attrs[a] for a in bench}
    cases = []
    for _, item, _, _, history in split["test"]:
        hist = history.split()
        profile = set().union(*(attrs[h] for h in hist))
        cases.append((attrs[item], profile, set(hist) | {item}))
    tied, zero, nonzero = _tie_stats(cases, catalogue, np.random.default_rng(0))
    assert tied > 0.6, f"held-out item tied with a negative for only {tied:.0%} of users"
    assert zero > 0.4, f"only {zero:.0%} of negatives share no attribute with the history"
    assert nonzero > 0.8, f"held-out item shares an attribute for only {nonzero:.0%}"


# ---------------------------------------------------------------------------------------------
# MovieLens ml-25m
# ---------------------------------------------------------------------------------------------


def test_movielens_files(out: dict) -> None:
    with zipfile.ZipFile(out["movielens"]["zip"]) as zf:
        h, ratings = _zip_csv(zf, "ml-25m/ratings.csv")
        assert h == ["userId", "movieId", "rating", "timestamp"]
        h, movies = _zip_csv(zf, "ml-25m/movies.csv")
        assert h == ["movieId", "title", "genres"]
        h, tags = _zip_csv(zf, "ml-25m/tags.csv")
        assert h == ["userId", "movieId", "tag", "timestamp"]
        h, links = _zip_csv(zf, "ml-25m/links.csv")
        assert h == ["movieId", "imdbId", "tmdbId"]
        h, gtags = _zip_csv(zf, "ml-25m/genome-tags.csv")
        assert h == ["tagId", "tag"]
        h, scores = _zip_csv(zf, "ml-25m/genome-scores.csv")
        assert h == ["movieId", "tagId", "relevance"]
        movies_raw = zf.read("ml-25m/movies.csv").decode("utf-8")
        assert "Summary" in zf.read("ml-25m/README.txt").decode("utf-8")
    assert "\r" not in movies_raw and re.search(r'^\d+,".*, The \(\d{4}\)",', movies_raw, re.M)
    movie_ids = [int(m[0]) for m in movies]
    assert movie_ids == sorted(set(movie_ids))
    assert all(re.fullmatch(r".+ \(\d{4}\)", m[1]) for m in movies)
    assert any("," in m[1] for m in movies) and any('"' in m[1] for m in movies)
    assert all(
        re.fullmatch(r"[A-Za-z-]+(\|[A-Za-z-]+)*|\(no genres listed\)", m[2]) for m in movies
    )

    keys = [(int(r[0]), int(r[1])) for r in ratings]
    assert keys == sorted(set(keys)), "ordered by userId, then movieId; no duplicates"
    assert {r[2] for r in ratings} <= {f"{x / 2:.1f}" for x in range(1, 11)}
    assert all(re.fullmatch(r"[0-9]{9,10}", r[3]) for r in ratings), "Unix seconds"
    assert all(789_000_000 < int(r[3]) <= 1_574_327_703 for r in ratings)
    assert min(Counter(u for u, _ in keys).values()) >= 20
    assert {m for _, m in keys} <= set(movie_ids)
    assert len({u for u, _ in keys}) == SCALES["movielens"]

    assert [(int(t[0]), int(t[1])) for t in tags] == sorted((int(t[0]), int(t[1])) for t in tags)
    assert {int(t[1]) for t in tags} <= set(movie_ids)
    assert [int(lk[0]) for lk in links] == movie_ids
    assert all(re.fullmatch(r"\d{7}", lk[1]) and re.fullmatch(r"\d*", lk[2]) for lk in links)

    tag_ids = [int(t[0]) for t in gtags]
    assert tag_ids == list(range(1, len(tag_ids) + 1))
    genome_movies = sorted({int(s[0]) for s in scores})
    assert set(genome_movies) <= set(movie_ids) and len(genome_movies) < len(movie_ids)
    pairs = [(int(s[0]), int(s[1])) for s in scores]
    assert pairs == [(m, t) for m in genome_movies for t in tag_ids], "every movie x every tag"
    rel = np.array([float(s[2]) for s in scores])
    assert rel.min() > 0 and rel.max() < 1
    assert np.median(rel) < 0.2, "most relevances are low"
    assert any(len(s[2]) > 15 for s in scores), "reprs with double-precision noise"


def test_movielens_genome_overlap_ties(out: dict) -> None:
    with zipfile.ZipFile(out["movielens"]["zip"]) as zf:
        _, ratings = _zip_csv(zf, "ml-25m/ratings.csv")
        _, scores = _zip_csv(zf, "ml-25m/genome-scores.csv")
    tags: dict[int, set] = defaultdict(set)
    for movie, tag, rel in scores:
        tags[int(movie)]  # every genome movie, even one without a tag over the threshold
        if float(rel) >= 0.5:
            tags[int(movie)].add(int(tag))
    counts = [len(t) for t in tags.values()]
    assert 1 <= np.mean(counts) <= 8, "thresholding keeps a few tags per movie"
    by_user: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for user, movie, _, ts in ratings:
        if int(movie) in tags:
            by_user[int(user)].append((int(ts), int(movie)))
    cases = []
    for seq in by_user.values():
        seq.sort()
        *hist, (_, held_out) = seq
        profile = set().union(*(tags[m] for _, m in hist))
        cases.append((tags[held_out], profile, {m for _, m in seq}))
    tied, zero, nonzero = _tie_stats(cases, dict(tags), np.random.default_rng(0))
    assert tied > 0.6, f"held-out movie tied with a negative for only {tied:.0%} of users"
    assert zero > 0.3, f"only {zero:.0%} of negatives share no tag with the history"
    assert nonzero > 0.8, f"held-out movie shares a tag for only {nonzero:.0%}"


# ---------------------------------------------------------------------------------------------
# Tag Genome 2021
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("source, folder", [("movielens", "ml-25m"),
                                             ("genome2021", genome2021.GENOME_2021_DIR)])  # fmt: skip
def test_readmes_name_the_module_that_generated_them(out: dict, source: str, folder: str) -> None:
    import importlib

    with zipfile.ZipFile(out[source]["zip"]) as zf:
        text = zf.read(f"{folder}/README.txt").decode("utf-8")
    named = re.search(r"SYNTHETIC DATA generated by ([\w.]+)", text)
    assert named, text[:300]
    assert importlib.import_module(named.group(1)).generate is syn.generate


def test_genome2021_files(out: dict) -> None:
    d = genome2021.GENOME_2021_DIR
    with zipfile.ZipFile(out["genome2021"]["zip"]) as zf:
        meta = _zip_jsonl(zf, f"{d}/raw/metadata.json")
        ratings = _zip_jsonl(zf, f"{d}/raw/ratings.json")
        tags = _zip_jsonl(zf, f"{d}/raw/tags.json")
        counts = _zip_jsonl(zf, f"{d}/raw/tag_count.json")
        reviews = _zip_jsonl(zf, f"{d}/raw/reviews.json")
        survey = _zip_jsonl(zf, f"{d}/raw/survey_answers.json")
        h, glmer = _zip_csv(zf, f"{d}/scores/glmer.csv")
        assert h == ["tag", "item_id", "score"]
        h, tagdl = _zip_csv(zf, f"{d}/scores/tagdl.csv")
        assert h == ["tag", "item_id", "score"]
    for m in meta:
        assert list(m) == [
            "title", "directedBy", "starring", "dateAdded", "avgRating", "imdbId", "item_id"
        ]  # fmt: skip
        assert isinstance(m["title"], str) and isinstance(m["starring"], str)
        assert m["dateAdded"] is None and isinstance(m["avgRating"], float)
        assert re.fullmatch(r"\d{7}", m["imdbId"]) and isinstance(m["item_id"], int)
    item_ids = {m["item_id"] for m in meta}
    assert len(item_ids) == len(meta)
    for r in ratings:
        assert list(r) == ["item_id", "user_id", "rating"]
        assert isinstance(r["user_id"], int) and r["rating"] in {x / 2 for x in range(1, 11)}
        assert isinstance(r["rating"], float)
    assert {r["item_id"] for r in ratings} <= item_ids
    assert all(list(t) == ["tag", "id"] and isinstance(t["id"], int) for t in tags)
    tag_ids = {t["id"] for t in tags}
    assert all(list(c) == ["item_id", "tag_id", "num"] for c in counts)
    assert {c["tag_id"] for c in counts} <= tag_ids and {c["item_id"] for c in counts} <= item_ids
    assert all(list(r) == ["item_id", "txt"] and isinstance(r["txt"], str) for r in reviews)
    assert all(list(s) == ["user_id", "item_id", "tag_id", "score"] for s in survey)
    assert {s["score"] for s in survey} <= {-1, 1, 2, 3, 4, 5}

    scored_tags = sorted({g[0] for g in glmer})
    scored_items = sorted({int(g[1]) for g in glmer})
    assert set(scored_tags) < {t["tag"] for t in tags}, "a few tags carry no scores"
    assert set(scored_items) < item_ids
    assert len(glmer) == len(scored_tags) * len(scored_items), "every tag x every movie"
    glmer_scores = np.array([float(g[2]) for g in glmer])
    assert 0 < glmer_scores.min() and glmer_scores.max() < 1 and np.median(glmer_scores) < 0.2
    assert [g[:2] for g in tagdl] == [g[:2] for g in glmer]
    assert all(-0.07 <= float(g[2]) <= 1.13 for g in tagdl)


# ---------------------------------------------------------------------------------------------
# generic
# ---------------------------------------------------------------------------------------------


def test_generic_files_and_ties(out: dict) -> None:
    with open(out["generic"]["interactions"], newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    with open(out["generic"]["item_attributes"], newline="", encoding="utf-8") as fh:
        attrs_rows = list(csv.reader(fh))
    assert rows[0] == ["user_id", "item_id", "rating", "timestamp"]
    assert attrs_rows[0] == ["item_id", "attribute"]
    attrs: dict[str, set] = defaultdict(set)
    for item, attribute in attrs_rows[1:]:
        assert re.fullmatch(r"[a-z]+:[a-z-]+", attribute)
        attrs[item].add(attribute)
    assert len(attrs_rows) - 1 == sum(len(a) for a in attrs.values()), "one line per pair"
    by_user: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for user, item, rating, ts in rows[1:]:
        assert rating in {"1", "2", "3", "4", "5"} and re.fullmatch(r"1[0-9]{9}", ts)
        assert item in attrs
        by_user[user].append((int(ts), item))
    assert len(by_user) == SCALES["generic"]
    cases = []
    for seq in by_user.values():
        assert len(seq) >= 5 and seq == sorted(seq) and len({i for _, i in seq}) == len(seq)
        *hist, (_, held_out) = seq
        profile = set().union(*(attrs[i] for _, i in hist))
        cases.append((attrs[held_out], profile, {i for _, i in seq}))
    tied, zero, nonzero = _tie_stats(cases, dict(attrs), np.random.default_rng(0))
    assert tied > 0.6 and zero > 0.3 and nonzero > 0.8, (tied, zero, nonzero)
