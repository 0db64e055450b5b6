"""``genome2021``: the Tag Genome 2021 movie dataset (Kotkov, Maslov & Neovius, SIGIR 2021,
doi:10.1145/3404835.3463019; tag genome of Vig, Sen & Riedl 2012).

The parser reads ``movie_dataset_public_final/raw/ratings.json`` (no time: file-order
timestamps), ``raw/tags.json`` (the tag list) and ``scores/glmer.csv`` (``tag,item_id,score``)
straight from ``genome_2021.zip``; the selected genome tags (:mod:`tieaudit.sources._genome_tags`)
are the attributes, ``tag=<normalised tag>``.

The generator writes ``genome_2021.zip`` in the released layout. Scale: movies = max(400,
ceil(0.342 * scale)) (84,661 movies / 247,383 users); 40% carry scores (real: 9,734); 100 scored
tags + 2 unscored ones (real: 1,084 of 1,094); ratings as for ``movielens``; override with
``n_items=`` and ``n_tags=``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from tieaudit.data.gen import _check_scale, _csv_row, _Lines, _zip_file
from tieaudit.data.interim import (
    INTERACTIONS_SCHEMA,
    IngestReport,
    _Outputs,
    _ParquetSink,
    _require_paths,
    _strings,
)
from tieaudit.data.streams import (
    MAX_LINE_BYTES,
    _BadLines,
    _BadRecord,
    _json_batches,
    _json_lines,
    _line_limit,
    _req_int,
    _req_number,
    _req_str,
    _Source,
    _zip_sources,
)
from tieaudit.data.tables import _CsvReader
from tieaudit.common.seeds import make_rng
from tieaudit.sources._genome_tags import (
    TAG_OPTIONS,
    _check_tag_options,
    _tag_batches,
    _tag_vocabulary,
    _TagSelector,
)
from tieaudit.sources._movies import _movie_world
from tieaudit.sources._movies import _tag_vocabulary as _movie_tags
from tieaudit.sources._text import _pool
from tieaudit.sources.base import DatasetSource, FileKey, register

GENOME_2021_ZIP = "genome_2021.zip"
GENOME_2021_DIR = "movie_dataset_public_final"
#: Members written for Tag Genome 2021: the ``raw/`` and ``scores/`` files of the real archive
#: (names from its README). The real archive also has ``processed/`` (features_r.csv, 10folds/)
#: and ``predictions/``; those are derived experiment files and are not generated.
GENOME_2021_MEMBERS = (
    f"{GENOME_2021_DIR}/",
    f"{GENOME_2021_DIR}/README.txt",
    f"{GENOME_2021_DIR}/raw/",
    f"{GENOME_2021_DIR}/raw/metadata.json",
    f"{GENOME_2021_DIR}/raw/ratings.json",
    f"{GENOME_2021_DIR}/raw/reviews.json",
    f"{GENOME_2021_DIR}/raw/survey_answers.json",
    f"{GENOME_2021_DIR}/raw/tag_count.json",
    f"{GENOME_2021_DIR}/raw/tags.json",
    f"{GENOME_2021_DIR}/scores/",
    f"{GENOME_2021_DIR}/scores/glmer.csv",
    f"{GENOME_2021_DIR}/scores/tagdl.csv",
)

GENOME21_MOVIES_PER_USER = 0.342
_ZIP_DATE_GENOME = (2021, 6, 28, 12, 0, 0)

# fmt: off
_FIRST_NAMES = (
    "John", "Mary", "Akira", "Sofia", "Pedro", "Ingrid", "Wei", "Amélie", "Kwame", "Olga", "Raj",
    "Chloé", "Hiro", "Fatima", "Lars", "Nadia",
)
_LAST_NAMES = (
    "Lasseter", "Berg", "Kurosawa", "Coppola", "Almodóvar", "Nakamura", "Okafor", "Ivanova",
    "Kapoor", "Dubois", "Smith", "Lindqvist", "Haddad", "Zhang",
)
# fmt: on


def ingest_genome2021(
    paths: Mapping[str, str | os.PathLike[str]],
    out_interactions: str | os.PathLike[str],
    out_attributes: str | os.PathLike[str],
    *,
    threshold: float | None = None,
    top_n: int | None = None,
    max_bad_lines: int = 0,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> IngestReport:
    """Tag Genome 2021: ``paths={"zip": "genome_2021.zip"}``; reads
    ``movie_dataset_public_final/raw/ratings.json`` (no time: file-order timestamps),
    ``raw/tags.json`` (the tag list) and ``scores/glmer.csv`` (``tag,item_id,score``)."""
    with _Outputs("genome2021", paths, out_interactions, out_attributes) as out:
        _TagSelector.check(threshold, top_n)
        bad = _BadLines(max_bad_lines)
        limit = _line_limit(max_line_bytes)
        files = _require_paths("genome2021", paths, ["zip"])
        top = "movie_dataset_public_final/"
        ratings, tags, scores = _zip_sources(
            files["zip"], [top + "raw/ratings.json", top + "raw/tags.json", top + "scores/glmer.csv"],
            limit,
        )
        out.start(INTERACTIONS_SCHEMA, "file-order")
        vocab = _tag_vocabulary(_genome2021_tags(tags, bad), tags.label, bad)
        selector = _TagSelector(list(vocab.values()), threshold, top_n)
        reader = _CsvReader(scores, {"tag": "str", "item_id": "str", "score": "float"}, bad)
        _tag_batches(reader, "item_id", "tag", "score", vocab, selector, bad)
        _genome2021_ratings(ratings, out.interactions, bad)
        selector.write(out.pairs)
    return out.report(bad)


def _genome2021_tags(src: _Source, bad: _BadLines) -> Iterator[tuple[int, str, str]]:
    """``(line, tag, tag)`` from ``tags.json`` lines ``{"tag": ..., "id": ...}`` (glmer.csv names
    tags by their text, so the text is the key)."""
    for line, rec in _json_lines(src, bad):
        try:
            text = _req_str(rec, "tag")
            _req_int(rec, "id")
        except _BadRecord as exc:
            bad(src.label, line, str(exc))
            continue
        yield line, text, text


def _genome2021_ratings(src: _Source, sink: _ParquetSink, bad: _BadLines) -> None:
    """genome2021 ``ratings.json`` lines ``{"item_id", "user_id", "rating"}`` without time; ids may
    be strings or integers; timestamp = line number - 1 (file order)."""

    def parse(line: int, rec: dict[str, Any]) -> tuple[str, str, float, int]:
        return (_req_str(rec, "user_id", allow_int=True), _req_str(rec, "item_id", allow_int=True),
                _req_number(rec, "rating"), line - 1)

    for rows in _json_batches(src, bad, parse):
        u, i, r, t = zip(*rows, strict=True)
        sink.write({"user_id": _strings(u), "item_id": _strings(i),
                    "rating": np.asarray(r, np.float64), "timestamp": np.asarray(t, np.int64)})


_GENOME21_README = """Summary
=======
SYNTHETIC DATA generated by tieaudit.sources.synthetic in the layout of the Tag Genome 2021 movie
dataset (Kotkov, D., Maslov, A., and Neovius, M. (2021). Revisiting the tag relevance prediction
problem. SIGIR 2021. https://doi.org/10.1145/3404835.3463019; Vig, J., Sen, S., and Riedl, J.
(2012). The tag genome. ACM TiiS 2(3)). Every number is invented.

The dataset files contain json objects (one line per object). The files are encoded as UTF-8. User
ids (user_id), tag ids (tag_id) and movie ids (item_id) are consistent across all files.

raw/metadata.json: title, directedBy, starring, dateAdded, avgRating, imdbId, item_id
raw/reviews.json: item_id, txt
raw/tags.json: tag, id
raw/tag_count.json: item_id, tag_id, num
raw/ratings.json: item_id, user_id, rating
raw/survey_answers.json: user_id, item_id, tag_id, score
scores/glmer.csv: tag,item_id,score
scores/tagdl.csv: tag,item_id,score

The processed/ and predictions/ folders of the real dataset are not generated.
"""


def generate_genome2021(
    out_dir: Path | str, *, scale: int, seed: int, n_items: int | None = None, n_tags: int = 100
) -> dict[str, Path]:
    """Tag Genome 2021 movie dataset (Kotkov, Maslov & Neovius, SIGIR 2021,
    doi:10.1145/3404835.3463019; tag genome of Vig, Sen & Riedl 2012) in the released layout.

    Writes ``genome_2021.zip`` with the folder ``movie_dataset_public_final/`` holding (field
    names, types and formats from the dataset's README):

    * ``raw/metadata.json``: JSON lines ``{"title": str, "directedBy": str, "starring": str,
      "dateAdded": null, "avgRating": float, "imdbId": str, "item_id": int}`` (directors and
      actors comma-separated; imdbId 7 digits zero-padded), one per movie.
    * ``raw/ratings.json``: ``{"item_id": int, "user_id": int, "rating": float}`` (half stars
      0.5..5.0; no timestamps), grouped by item_id; user ids are large sparse integers.
    * ``raw/tags.json``: ``{"tag": str, "id": int}``, sparse ids; two tags have no scores (as
      1,094 tags vs 1,084 scored in the real data).
    * ``raw/tag_count.json``: ``{"item_id": int, "tag_id": int, "num": int}``.
    * ``raw/reviews.json``: ``{"item_id": int, "txt": str}``.
    * ``raw/survey_answers.json``: ``{"user_id": int, "item_id": int, "tag_id": int,
      "score": int}`` with score in 1..5 or -1 ("not sure").
    * ``scores/glmer.csv``: header ``tag,item_id,score``; every scored movie x every scored tag,
      ordered by tag then item_id; score in (0, 1) with 15 significant digits.
    * ``scores/tagdl.csv``: same header; float32-precision scores in [-0.07, 1.13].
    * ``README.txt``: a short synthetic README (its location in the real archive is not
      confirmed).

    Scored movies (40% of the movies) are a subset of metadata.json. ``n_items`` sets the number
    of movies (default ``max(400, ceil(0.342 * scale))``, at least 40), ``n_tags`` the number of
    scored tags (default 100, at most 2,000). Returns ``{"zip": path}``.
    """
    _check_scale(scale, minimum=1)
    n_movies = (
        n_items if n_items is not None else max(400, math.ceil(GENOME21_MOVIES_PER_USER * scale))
    )
    world = _movie_world(seed, "genome2021", scale, n_movies, n_tags, min_ratings=20)
    rng = make_rng(seed, "genome2021", "files")
    mids = world.movie_ids.tolist()
    n_tags_all = len(world.tags) + 2
    in_use = set(world.tags)
    spare = [t for t in _movie_tags() if t not in in_use][:2]
    all_tags = world.tags + spare
    tag_ids = (rng.choice(59_999, size=n_tags_all, replace=False) + 1).tolist()
    user_ids = np.sort(rng.choice(1_099_000, size=scale, replace=False) + 1_000)
    imdb = (rng.choice(9_989_999, size=len(mids), replace=False) + 10_000).tolist()
    path = Path(out_dir) / GENOME_2021_ZIP
    d = GENOME_2021_DIR

    # per movie ratings (grouped by item, as the real file)
    by_movie: list[list[tuple[int, float]]] = [[] for _ in mids]
    for u in range(scale):
        for m, r in zip(world.user_movies[u].tolist(), world.user_ratings[u].tolist(), strict=True):
            by_movie[m].append((int(user_ids[u]), r))

    with _zip_file(path, _ZIP_DATE_GENOME) as z:
        z.folder(f"{d}/")
        z.text(f"{d}/README.txt", _GENOME21_README)
        z.folder(f"{d}/raw/")
        meta_lines = []
        for m, mid in enumerate(mids):
            rs = [r for _, r in by_movie[m]]
            avg = round(float(np.mean(rs)), 5) if rs else round(float(rng.uniform(2, 4.5)), 5)
            directors = ", ".join(
                f"{_FIRST_NAMES[int(a)]} {_LAST_NAMES[int(b)]}"
                for a, b in rng.integers(0, 14, (int(rng.choice([1, 1, 1, 2])), 2))
            )
            actors = ", ".join(
                f"{_FIRST_NAMES[int(a) % 16]} {_LAST_NAMES[int(b)]}"
                for a, b in rng.integers(0, 14, (int(rng.integers(2, 11)), 2))
            )
            meta_lines.append(
                json.dumps(
                    {
                        "title": world.titles[m],
                        "directedBy": directors,
                        "starring": actors,
                        "dateAdded": None,
                        "avgRating": avg,
                        "imdbId": f"{imdb[m]:07d}",
                        "item_id": mid,
                    }
                )
                + "\n"
            )
        z.text(f"{d}/raw/metadata.json", "".join(meta_lines))
        with z.stream(f"{d}/raw/ratings.json") as fh:
            lines = _Lines(fh)
            for m, mid in enumerate(mids):
                for uid, r in sorted(by_movie[m]):
                    lines.add(json.dumps({"item_id": mid, "user_id": uid, "rating": r}) + "\n")
            lines.flush()
        review_lines = []
        pool = _pool()
        for mid in mids:
            for _ in range(int(rng.integers(0, 4))):
                txt = " \r ".join(pool[int(i)] for i in rng.integers(0, len(pool), 3))
                review_lines.append(json.dumps({"item_id": mid, "txt": txt}) + "\n")
        z.text(f"{d}/raw/reviews.json", "".join(review_lines))
        survey = []
        survey_users = user_ids[: max(1, scale // 20)].tolist()
        for row, m in enumerate(world.scored.tolist()):
            for _ in range(int(rng.integers(0, 3))):
                t = int(rng.integers(len(world.tags)))
                rel = float(world.relevance[row, t])
                score = (
                    -1
                    if rng.random() < 0.08
                    else int(np.clip(round(1 + 4 * rel + rng.normal(0, 0.6)), 1, 5))
                )
                survey.append(
                    json.dumps(
                        {
                            "user_id": survey_users[int(rng.integers(len(survey_users)))],
                            "item_id": mids[m],
                            "tag_id": tag_ids[t],
                            "score": score,
                        }
                    )
                    + "\n"
                )
        z.text(f"{d}/raw/survey_answers.json", "".join(survey))
        counts = []
        for row, m in enumerate(world.scored.tolist()):
            for t in np.flatnonzero(world.relevance[row] > 0.5).tolist():
                if rng.random() < 0.7:
                    counts.append(
                        json.dumps(
                            {
                                "item_id": mids[m],
                                "tag_id": tag_ids[t],
                                "num": int(rng.geometric(0.3)),
                            }
                        )
                        + "\n"
                    )
        z.text(f"{d}/raw/tag_count.json", "".join(counts))
        z.text(
            f"{d}/raw/tags.json",
            "".join(
                json.dumps({"tag": t, "id": i}) + "\n"
                for t, i in zip(all_tags, tag_ids, strict=True)
            ),
        )
        z.folder(f"{d}/scores/")
        scored_ids = [mids[m] for m in world.scored.tolist()]
        noise = rng.normal(0.0, 0.03, world.relevance.shape)
        tagdl = np.clip(world.relevance + noise, -0.07, 1.13).astype(np.float32)
        for member, fmt in (("glmer.csv", "glmer"), ("tagdl.csv", "tagdl")):
            with z.stream(f"{d}/scores/{member}") as fh:
                lines = _Lines(fh)
                lines.add("tag,item_id,score\n")
                for t, tag in enumerate(world.tags):
                    tag_cell = _csv_row([tag])[:-1]
                    if fmt == "glmer":
                        vals = [f"{v:.15g}" for v in world.relevance[:, t].tolist()]
                    else:
                        vals = [str(v) for v in tagdl[:, t]]
                    for mid, v in zip(scored_ids, vals, strict=True):
                        lines.add(f"{tag_cell},{mid},{v}\n")
                lines.flush()
    return {"zip": path}


SOURCE = register(DatasetSource(
    name="genome2021",
    description="Tag Genome 2021: ratings without time (file order); genome tags as attributes",
    files=(FileKey("zip", "the release archive (`genome_2021.zip`)", format="zip"),),
    parser=ingest_genome2021,
    generator=generate_genome2021,
    options=TAG_OPTIONS,
    example_options={"top_n": 10},
    check_options=_check_tag_options,
))
