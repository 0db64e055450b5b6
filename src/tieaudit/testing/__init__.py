"""Hypothesis strategies and helpers for testing code that reads or evaluates candidates tables.

The strategies generate *valid* candidates tables (see :mod:`tieaudit.tables.candidates`) that are hard
for an evaluator: scores are drawn from a few integer levels so ties are everywhere, the single
positive of a row sits at any stored position, rows have different lengths, item and user ids
are shared between rows and include multi-byte and astral-plane characters, and rows may be
interleaved in the stored order.

>>> from hypothesis import given
>>> from tieaudit.testing import candidate_frames
>>> @given(candidate_frames(max_rows=5, max_len=4))
... def test_something(frame): ...

Hypothesis is only a test dependency: importing this module works without it (the helpers
:func:`permute_within_rows` and :func:`permute_lines` need only numpy and pandas), and calling a
strategy without hypothesis installed raises an :class:`ImportError` that says what to install.
No other tieaudit module imports this one.

:func:`check_tie_rule` (from :mod:`tieaudit.testing.rules`) is the conformance check any tie
rule kind can run, as the built-ins do in the test suite; :func:`check_evaluator` (from
:mod:`tieaudit.testing.evaluators`) the tie battery an evaluator's own tests run on each measure
it computes, with the rule it declares.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .evaluators import check_evaluator
from .rules import check_tie_rule

try:  # hypothesis is a test-only dependency
    from hypothesis import strategies as st

    HAVE_HYPOTHESIS = True
except ImportError:  # pragma: no cover - exercised only without hypothesis
    st = None
    HAVE_HYPOTHESIS = False

__all__ = [
    "HAVE_HYPOTHESIS",
    "ID_ALPHABET",
    "candidate_frames",
    "measures",
    "tie_rules",
    "permute_within_rows",
    "permute_lines",
    "cut_points",
    "check_tie_rule",
    "check_evaluator",
    "full_catalog_cases",
    "FullCatalogCase",
    "candidate_lakes",
    "CandidateLake",
    "LakeFile",
    "LAKE_USER_ALPHABET",
    "LAKE_JUNK",
]

#: Characters ids are built from: ASCII letters and digits (so ids like "007" occur), Latin-1,
#: CJK, a BMP character above the surrogate range (U+FF21) and an astral one (U+1F600). The last
#: two sort differently by code point than by UTF-16 code unit, which catches the wrong ordering.
#: No separators, quotes, whitespace or control characters: frames survive a CSV round trip.
ID_ALPHABET = "ab07Zé日\uff21\U0001f600"

_COLUMNS = ("row", "user_id", "item_id", "label", "score")


def _require() -> None:
    if not HAVE_HYPOTHESIS:
        raise ImportError(
            "tieaudit.testing strategies need hypothesis: pip install 'tieaudit[test]'"
        )


def _ids(alphabet: str, max_size: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=1, max_size=max_size)


def _rows_and_users(draw, min_rows: int, max_rows: int, alphabet: str, id_size: int):
    """Distinct row ids (``min_rows .. max_rows`` of them) and one to three user ids."""
    n_rows = draw(st.integers(min_rows, max_rows))
    row_ids = draw(st.lists(_ids(alphabet, id_size), min_size=n_rows, max_size=n_rows, unique=True))
    users = draw(st.lists(_ids(alphabet, id_size), min_size=1, max_size=3))
    return row_ids, users


def candidate_frames(
    *,
    min_rows: int = 1,
    max_rows: int = 8,
    min_len: int = 1,
    max_len: int = 6,
    score_levels: int = 3,
    alphabet: str = ID_ALPHABET,
    id_size: int = 3,
    interleave: bool = True,
) -> st.SearchStrategy[pd.DataFrame]:
    """Valid candidates DataFrames (columns ``row, user_id, item_id, label, score``).

    Each of ``min_rows .. max_rows`` rows has ``min_len .. max_len`` candidates with unique item
    ids, one positive (label 1) at any position, one user id, and scores drawn from the
    ``score_levels`` values ``0.0, 1.0, ...`` (``score_levels=1``: everything ties). Row ids are
    unique; user and item ids repeat across rows. With ``interleave`` the lines of all rows are
    stored in a drawn order (rows not contiguous); otherwise row by row. ``label`` is int64 and
    ``score`` float64; ids are Python strings.
    """
    _require()
    if not 1 <= min_len <= max_len:
        raise ValueError("need 1 <= min_len <= max_len")
    if not 1 <= min_rows <= max_rows:
        raise ValueError("need 1 <= min_rows <= max_rows")
    if score_levels < 1:
        raise ValueError("score_levels must be >= 1")
    # Enough distinct ids to fill the longest row.
    if len(alphabet) ** id_size < max_len:
        raise ValueError("alphabet and id_size give fewer distinct ids than max_len")

    @st.composite
    def frames(draw: st.DrawFn) -> pd.DataFrame:
        row_ids, users = _rows_and_users(draw, min_rows, max_rows, alphabet, id_size)
        lines: list[tuple[str, str, str, int, float]] = []
        for rid in row_ids:
            length = draw(st.integers(min_len, max_len))
            items = draw(
                st.lists(_ids(alphabet, id_size), min_size=length, max_size=length, unique=True)
            )
            scores = draw(
                st.lists(st.integers(0, score_levels - 1), min_size=length, max_size=length)
            )
            positive = draw(st.integers(0, length - 1))
            user = draw(st.sampled_from(users))
            for j, (item, s) in enumerate(zip(items, scores, strict=True)):
                lines.append((rid, user, item, int(j == positive), float(s)))
        if interleave and len(lines) > 1:
            order = draw(st.permutations(range(len(lines))))
            lines = [lines[i] for i in order]
        return _frame(lines)

    return frames()


def _frame(lines: Sequence[tuple[str, str, str, int, float]]) -> pd.DataFrame:
    cols = list(zip(*lines, strict=True)) if lines else [()] * len(_COLUMNS)
    return pd.DataFrame(
        {
            "row": pd.Series(cols[0], dtype=object),
            "user_id": pd.Series(cols[1], dtype=object),
            "item_id": pd.Series(cols[2], dtype=object),
            "label": np.asarray(cols[3], dtype=np.int64),
            "score": np.asarray(cols[4], dtype=np.float64),
        }
    )


def measures(max_k: int = 10) -> st.SearchStrategy:
    """:class:`tieaudit.ties.measures.Measure` values with cutoffs ``1 .. max_k``."""
    _require()
    from ..ties.measures import MEASURE_NAMES, Measure

    return st.builds(Measure, st.sampled_from(MEASURE_NAMES), st.integers(1, max_k))


def tie_rules(*, invariant_only: bool = False, max_seed: int = 2**32) -> st.SearchStrategy:
    """:class:`tieaudit.ties.rules.TieRule` values (only the row-order-invariant ones if asked)."""
    _require()
    from ..ties.rules import TieRule, rule_kinds

    kinds = [k for k in rule_kinds() if k.invariant or not invariant_only]

    def build(kind, seed: int) -> TieRule:
        return TieRule(kind.name, seed if kind.seeded else None)

    return st.builds(build, st.sampled_from(kinds), st.integers(0, max_seed))


def cut_points(n_lines: int, max_cuts: int = 6) -> st.SearchStrategy[list[int]]:
    """Where a table of ``n_lines`` lines is cut into record batches: sorted distinct positions
    in ``1 .. n_lines - 1`` (none for a table of one line), anywhere, inside rows too."""
    _require()
    if n_lines < 2:
        return st.just([])
    return st.lists(st.integers(1, n_lines - 1), max_size=max_cuts, unique=True).map(sorted)


def _generator(rng: np.random.Generator | int) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def permute_within_rows(frame: pd.DataFrame, rng: np.random.Generator | int) -> pd.DataFrame:
    """The same candidates with each row's lines shuffled among the slots that row occupies.

    The set of stored positions of every row (its interleaving with other rows) is kept; only
    which of its candidates sits in which of those positions changes. ``rng`` is a numpy
    Generator or a seed. The index is reset.
    """
    gen = _generator(rng)
    rows = frame["row"].astype(str).to_numpy()
    order = np.arange(len(frame))
    for rid in pd.unique(rows):
        slots = np.flatnonzero(rows == rid)
        order[slots] = slots[gen.permutation(len(slots))]
    return frame.iloc[order].reset_index(drop=True)


def permute_lines(frame: pd.DataFrame, rng: np.random.Generator | int) -> pd.DataFrame:
    """The same candidates stored in a uniformly random order (within and across rows)."""
    gen = _generator(rng)
    return frame.iloc[gen.permutation(len(frame))].reset_index(drop=True)


def summary_frames(
    *,
    min_rows: int = 1,
    max_rows: int = 8,
    max_count: int = 6,
    score_levels: int = 3,
    key_rules: Sequence[str] = ("input_order", "item_id", "docno_desc"),
    seeds: Sequence[int] = (0,),
    modal: bool = True,
    alphabet: str = ID_ALPHABET,
    id_size: int = 3,
) -> st.SearchStrategy[pd.DataFrame]:
    """Valid summary tables (:mod:`tieaudit.tables.candidates`): one line per row, its relevant item.

    Each row draws ``n_higher``, ``n_tied`` and ``n_lower`` from ``0 .. max_count``, a score from
    ``0.0 .. score_levels - 1``, ``before:RULE`` for each of ``key_rules`` and ``before:hash:S``
    for each of ``seeds`` from ``0 .. n_tied`` (``before:docno_desc`` is ``n_tied -
    before:item_id`` when both are asked for, as on a table with distinct item ids) and, with
    ``modal``, an ``n_modal`` that some stored table could have: ``1 + n_tied``, or a group among
    the higher or lower candidates when one is larger. Row ids are unique, user and item ids
    repeat across rows. ``label`` and the counts are int64, ``score`` float64.
    """
    _require()
    if not 1 <= min_rows <= max_rows:
        raise ValueError("need 1 <= min_rows <= max_rows")
    if max_count < 0 or score_levels < 1:
        raise ValueError("need max_count >= 0 and score_levels >= 1")
    rules = list(key_rules) + [f"hash:{int(s)}" for s in seeds]

    @st.composite
    def frames(draw: st.DrawFn) -> pd.DataFrame:
        row_ids, users = _rows_and_users(draw, min_rows, max_rows, alphabet, id_size)
        items = draw(st.lists(_ids(alphabet, id_size), min_size=1, max_size=4))
        counts = st.integers(0, max_count)
        records = []
        for rid in row_ids:
            higher, tied, lower = draw(counts), draw(counts), draw(counts)
            rec: dict[str, object] = {
                "row": rid,
                "user_id": draw(st.sampled_from(users)),
                "item_id": draw(st.sampled_from(items)),
                "label": 1,
                "score": float(draw(st.integers(0, score_levels - 1))),
                "n_higher": higher,
                "n_tied": tied,
                "n_lower": lower,
            }
            if modal:
                rec["n_modal"] = draw(st.integers(1 + tied, max(1 + tied, higher, lower)))
            for rule in rules:
                if rule != "docno_desc" or "item_id" not in rules:
                    rec[f"before:{rule}"] = draw(st.integers(0, tied))
            if "docno_desc" in rules and "item_id" in rules:
                rec["before:docno_desc"] = tied - int(rec["before:item_id"])
            records.append(rec)
        frame = pd.DataFrame.from_records(records)
        for c in frame.columns:
            if c not in ("row", "user_id", "item_id", "score"):
                frame[c] = frame[c].astype(np.int64)
        frame["score"] = frame["score"].astype(np.float64)
        return frame

    return frames()


@dataclass(frozen=True)
class FullCatalogCase:
    """Inputs of a full-catalog reduction: ``rows`` (``user_id``, ``item_id``), ``history``,
    ``catalog`` and the ``users x catalog`` ``scores`` (float64) of a matrix scorer."""

    rows: pd.DataFrame
    history: pd.DataFrame
    catalog: np.ndarray
    users: np.ndarray
    scores: np.ndarray

    def scorer(self):
        """A :class:`tieaudit.scorers.MatrixScorer` of :attr:`scores`."""
        from ..scorers import MatrixScorer

        return MatrixScorer(self.scores, self.users, self.catalog)


def full_catalog_cases(
    *, max_users: int = 8, max_items: int = 3000, max_levels: int = 4
) -> st.SearchStrategy[FullCatalogCase]:
    """Full-catalog inputs with tie groups of every size, up to the whole catalogue.

    Draws ``1 .. max_users`` users and ``2 .. max_items`` items and a seed; the scores are then
    integers from ``0 .. levels - 1`` (``levels`` from ``1``, everything tied, to
    ``max_levels``), with one level taking a drawn share of each row (so a held-out item may tie
    with most of the catalogue, or with nothing), each user's held-out item drawn uniformly, and
    a history of up to 20 items a user (some of them the held-out item). Large arrays come from
    ``numpy.random.default_rng(seed)``, so an example is its few drawn numbers.
    """
    _require()
    if max_users < 1 or max_items < 2 or max_levels < 1:
        raise ValueError("need max_users >= 1, max_items >= 2 and max_levels >= 1")

    @st.composite
    def cases(draw: st.DrawFn) -> FullCatalogCase:
        n_users = draw(st.integers(1, max_users))
        n_items = draw(st.integers(2, max_items))
        levels = draw(st.integers(1, max_levels))
        share = draw(st.floats(0.0, 1.0))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        scores = rng.integers(0, levels, (n_users, n_items)).astype(np.float64)
        scores[rng.random((n_users, n_items)) < share] = 0.0
        users = np.array([f"u{u}" for u in range(n_users)], dtype=object)
        catalog = np.array([f"i{i:05d}" for i in range(n_items)], dtype=object)
        held = catalog[rng.integers(0, n_items, n_users)]
        seen = rng.integers(0, n_items, (n_users, min(20, n_items)))
        history = pd.DataFrame(
            {"user_id": np.repeat(users, seen.shape[1]), "item_id": catalog[seen.ravel()]}
        )
        rows = pd.DataFrame({"user_id": users, "item_id": held})
        return FullCatalogCase(rows, history, catalog, users, scores)

    return cases()


#: Characters of user ids in :func:`candidate_lakes`: what hive folder names percent-encode
#: (space, ``%``, ``/``, ``=``, ``#``, ``+``, ``?``), CSV quoting (``,``, ``"``), and non-ASCII.
LAKE_USER_ALPHABET = 'a b%/=#+?,"é日'
#: Files of a data lake a folder reader must skip: what Spark and Hadoop leave beside the data
#: and mid-write. Each would change the result, or fail, if it were read.
LAKE_JUNK = ("_temporary/0/part-00000.parquet", ".snapshot/s1/part-00000.parquet", "_SUCCESS",
             ".part-00000.parquet.crc", "_metadata", "_temporary/0/_temporary/x.csv")  # fmt: skip


@dataclass(frozen=True)
class LakeFile:
    """One file of a :class:`CandidateLake`: its ``folder`` below the lake (``""`` or a hive
    ``user_id=…`` folder), its ``name``, the ``lines`` it holds (as one DataFrame would hold
    them after reading it), and how it is written: ``writer`` (``pyarrow``, ``pandas``,
    ``csv``, ``csv.gz``), ``ids`` (``string``, ``large_string``, ``dictionary``; integer ids
    are int64 for ``string``, else int32), ``label`` (``int8``, ``int64``, ``bool``), ``score`` (``float32``,
    ``float64``), ``row_groups`` (pyarrow: the row group sizes, 0 for an empty group),
    ``csv_style`` (``plain``, ``crlf``, ``bom``; ``empty``: a 0-byte file when it holds no
    lines) and whether the hive column is left out of the file (``drop_user``)."""

    folder: str
    name: str
    lines: pd.DataFrame
    writer: str
    ids: str
    label: str
    score: str
    row_groups: tuple[int, ...]
    csv_style: str
    drop_user: bool

    def write(self, root) -> None:
        """Write the file below the lake folder ``root``."""
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        folder = root / self.folder
        folder.mkdir(parents=True, exist_ok=True)
        lines = self.lines.drop(columns="user_id") if self.drop_user else self.lines
        path = folder / self.name
        if self.writer.startswith("csv"):
            if self.csv_style == "empty" and not len(lines):
                path.write_bytes(b"")
                return
            text = lines.to_csv(index=False, lineterminator="\r\n" if self.csv_style == "crlf"
                                else "\n")  # fmt: skip
            data = (b"\xef\xbb\xbf" if self.csv_style == "bom" else b"") + text.encode()
            if self.writer == "csv.gz":
                import gzip

                data = gzip.compress(data, mtime=0)
            path.write_bytes(data)
            return
        lines = lines.astype({"label": {"bool": bool}.get(self.label, self.label),
                              "score": self.score})  # fmt: skip
        if self.writer == "pandas":  # pandas 3 writes text as large_string
            text = [c for c in ("row", "user_id", "item_id") if c in lines and lines[c].dtype == object]
            lines.astype(dict.fromkeys(text, "str")).to_parquet(path, index=False)
            return
        table = pa.Table.from_pandas(lines, preserve_index=False)
        for c in ("row", "user_id", "item_id"):
            if c not in table.column_names:
                continue
            i = table.schema.get_field_index(c)
            if pa.types.is_integer(table.schema.field(c).type):
                if self.ids != "string":
                    table = table.set_column(i, c, pc.cast(table.column(c), pa.int32()))
            elif self.ids == "large_string":
                table = table.set_column(i, c, pc.cast(table.column(c), pa.large_string()))
            elif self.ids == "dictionary":
                table = table.set_column(i, c, pc.dictionary_encode(table.column(c)))
        with pq.ParquetWriter(path, table.schema) as writer:
            start = 0
            for size in self.row_groups:
                writer.write_table(table.slice(start, size))
                start += size


@dataclass(frozen=True)
class CandidateLake:
    """A folder of candidates files as data lakes and mixed writers leave them
    (:func:`candidate_lakes`): :attr:`frame` is what a folder reader must read."""

    files: tuple[LakeFile, ...]
    junk: tuple[str, ...]

    @property
    def frame(self) -> pd.DataFrame:
        """The lines of every file in name order (as :func:`tieaudit.evaluate` would read them
        from one DataFrame)."""
        from pathlib import PurePosixPath

        ordered = sorted(self.files, key=lambda f: PurePosixPath(f.folder, f.name))
        return pd.concat([f.lines for f in ordered], ignore_index=True)

    def write(self, root) -> None:
        """Write the lake into the folder ``root`` (a :class:`pathlib.Path`), with its junk:
        files that must not be read (each would change the result or fail)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        root.mkdir(parents=True, exist_ok=True)
        for f in self.files:
            f.write(root)
        folders = sorted({f.folder for f in self.files})
        for i, junk in enumerate(self.junk):
            path = root / folders[i % len(folders)] / junk
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.suffix == ".parquet":  # every line again: duplicates if read
                pq.write_table(pa.Table.from_pandas(self.frame, preserve_index=False), path)
            elif path.suffix == ".csv":
                path.write_text("row,user_id,item_id,label,score\nx,u,i,2,nan\n")
            elif junk != "_SUCCESS":
                path.write_bytes(b"PAR1 not data")
            else:
                path.write_bytes(b"")


def candidate_lakes(*, max_rows: int = 6, max_len: int = 4,
                    max_files: int = 3) -> st.SearchStrategy[CandidateLake]:  # fmt: skip
    """:class:`CandidateLake` values: the rows of :func:`candidate_frames` (contiguous) written
    to a folder, flat or hive-partitioned by user (``user_id=`` folders, their values
    percent-encoded as pyarrow or Spark encode them, users from :data:`LAKE_USER_ALPHABET`),
    each folder's lines cut anywhere (a row may go on in the next file, a file may be empty)
    into up to ``max_files`` files, each written by its own writer with its own types
    (:class:`LakeFile`); text or integer row and item ids; scores that float32 rounds; and
    hidden and ``_`` junk (:data:`LAKE_JUNK`)."""
    _require()
    from urllib.parse import quote

    @st.composite
    def lakes(draw: st.DrawFn) -> CandidateLake:
        frame = draw(candidate_frames(max_rows=max_rows, max_len=max_len, interleave=False))
        users = sorted(set(frame["user_id"]))
        names = draw(st.lists(st.text(LAKE_USER_ALPHABET, min_size=1, max_size=4),
                              min_size=len(users), max_size=len(users), unique=True))  # fmt: skip
        frame["user_id"] = frame["user_id"].map(dict(zip(users, names, strict=True)))
        frame["score"] = frame["score"] * draw(st.sampled_from([1.0, 0.1, 1 / 3]))
        numbers = draw(st.booleans())
        if numbers:  # integer row and item ids (their text is what ranks them)
            for c in ("row", "item_id"):
                codes = {v: i for i, v in enumerate(pd.unique(frame[c]))}
                base = draw(st.sampled_from([0, 7, 10**6]))
                frame[c] = frame[c].map(codes).astype(np.int64) + base
        partitioned = draw(st.booleans())
        keep_space = draw(st.booleans())  # Spark leaves spaces as they are, pyarrow encodes them
        groups = ([(f"user_id={quote(u, safe=' ' if keep_space else '')}", frame[frame["user_id"] == u])
                   for u in pd.unique(frame["user_id"])] if partitioned else [("", frame)])  # fmt: skip
        files = []
        for folder, lines in groups:
            n_files = draw(st.integers(1, max_files))
            cuts = sorted(draw(st.lists(st.integers(0, len(lines)), min_size=n_files - 1,
                                        max_size=n_files - 1)))  # fmt: skip
            bounds = [0, *cuts, len(lines)]
            for i in range(n_files):
                part = lines.iloc[bounds[i] : bounds[i + 1]].reset_index(drop=True)
                files.append(_lake_file(draw, folder, i, part, partitioned))
        junk = draw(st.lists(st.sampled_from(LAKE_JUNK), unique=True, max_size=3))
        return CandidateLake(tuple(files), tuple(junk))

    return lakes()


def _lake_file(draw, folder: str, i: int, lines: pd.DataFrame, partitioned: bool) -> LakeFile:
    """One file of a lake: its writer and types drawn; ``lines`` as reading it gives them."""
    writer = draw(st.sampled_from(["pyarrow", "pandas", "csv", "csv.gz"]))
    score = "float64" if writer.startswith("csv") else draw(st.sampled_from(["float32", "float64"]))
    if score == "float32":
        lines = lines.assign(score=lines["score"].astype(np.float32).astype(np.float64))
    sizes: list[int] = []
    if writer == "pyarrow":  # row groups of drawn sizes, empty ones among them
        bounds = [0, *draw(cut_points(len(lines), max_cuts=3)), len(lines)]
        sizes = [b - a for a, b in zip(bounds, bounds[1:], strict=False)]
        for _ in range(draw(st.integers(0, 2))):
            sizes.insert(draw(st.integers(0, len(sizes))), 0)
    ext = {"pyarrow": "parquet", "pandas": "parquet"}.get(writer, writer)
    return LakeFile(
        folder, f"part-{i:05d}.{ext}", lines, writer,
        ids=draw(st.sampled_from(["string", "large_string", "dictionary"])),
        label=draw(st.sampled_from(["int8", "int64", "bool"])), score=score,
        row_groups=tuple(sizes), csv_style=draw(st.sampled_from(["plain", "crlf", "bom", "empty"])),
        drop_user=partitioned and draw(st.booleans()),
    )  # fmt: skip
