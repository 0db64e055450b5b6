"""The ``tieaudit`` command: evaluate and audit a candidates file under every tie rule."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from . import __version__
from .common.memory import keep_freed_memory
from .common.numbers import parse_integer
from .analyses.audit import AUDIT_FILES, DEFAULT_PERMUTATIONS, audit
from .tables.inputs import PathInput
from .tables.candidates import (
    COUNT_COLUMNS,
    REQUIRED_COLUMNS,
    CandidateError,
    CandidateTable,
)
from .tables.columns import COLUMN_PARTS, Columns
from .analyses.compare import compare, flips_markdown
from .evaluation.evaluate import DEFAULT_SEEDS
from .common.io import atomic_write_many, frame_to_text
from .ties.measures import DEFAULT_MEASURES, Measure, parse_measure, parse_measures
from .analyses.casting import cast_effect
from .tables.precision import PRECISIONS, parse_precision
from .ties.rules import DEFAULT_RULES, help_text, parse_rule, parse_rules
from .evaluation.stream import DEFAULT_MEMORY, evaluate_stream, parse_memory
from .tables.trec import read_trec

_DEFAULT_METRICS = [str(m) for m in DEFAULT_MEASURES]
_DEFAULT_RULES = [str(r) for r in DEFAULT_RULES]

_INPUT_HELP = f"""\
FILE is a candidates table, CSV (.csv, .csv.gz), tab-separated (.tsv, .tsv.gz) or Parquet
(.parquet, .pq), one line per candidate, with columns {", ".join(REQUIRED_COLUMNS)}: `row`
names the evaluation row (one user and their held-out items; without a `row` column each user
is one row, its lines contiguous as a row's must be), `label` is 1 (or True) for a relevant
item (a row has one or several) and 0 (or False) for the others, or a grade >= 0 (relevant
above 0; nDCG's gain is the grade, its ideal DCG from the row's grades), `score` is a number
(higher ranks first; inf and -inf are allowed, NaN is not; ASCII digits only). A table naming
these columns its own way, as pandas' `user,item,score,label`, is read with --user-col user
--item-col item (see --row-col .. --score-col). The file's line order is the stored order that
`input_order` keeps among equal scores. Optional per-row counts, repeated on every line of a
row: {", ".join(COUNT_COLUMNS)} (the row's total number of relevant items, stored or not;
candidates left unstored that score strictly above / below every relevant item of the row).

A summary table (full-catalog evaluation, `tieaudit.analyses.fullcatalog`) has one line per row, its
relevant item, with n_tied (candidates tied with it, none stored) and before:RULE columns (the
tied candidates RULE puts first, e.g. before:input_order, before:item_id, before:hash:0); rules
without their before: column cannot be evaluated on it (see `tieaudit.tables.candidates`).

Instead of FILE, --run RUN --qrels QRELS reads a TREC run (`qid Q0 docno rank score tag`, its
line order is the stored order) and qrels (`qid 0 docno rel`, rel > 0 relevant); queries without
a relevant document in the qrels are skipped and counted on standard error. trec_eval breaks
ties by docno descending: the rule docno_desc reproduces its P_k, recall_k, ndcg_cut_k (the
qrels' rel values as gains) and recip_rank per query (docno_desc is added to the default rules
for a run).
"""

_RULES_HELP = help_text()
#: The measure ``tieaudit probe`` asks a function for, and the cutoff of an adapter's measures.
_PROBE_DEFAULT = parse_measure("nDCG@10")


def _count(text: str) -> int:
    """An integer option in ASCII digits (``int()`` would take ``1_0`` and other scripts' digits)."""
    try:
        return parse_integer(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _rule_options(sp: argparse.ArgumentParser, rules_help: str) -> None:
    """The --rules and --seeds options of a subcommand."""
    sp.add_argument("-r", "--rules", nargs="+", metavar="RULE", default=None, help=rules_help)
    sp.add_argument(
        "--seeds", type=_count, default=DEFAULT_SEEDS, metavar="N",
        help=f"number of hash seeds for hash_mean (default: {DEFAULT_SEEDS}; unused "
        "without hash_mean)",
    )  # fmt: skip


def _precision(text: str) -> str:
    try:
        return parse_precision(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _memory(text: str) -> int:
    try:
        return parse_memory(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _column_options(sp: argparse.ArgumentParser) -> None:
    """--row-col .. --score-col: the input's own names of the columns of a candidates table."""
    group = sp.add_argument_group(
        "columns", "the input's own column names, when they are not the format's "
        "(e.g. --user-col user --item-col item for pandas' user,item,score,label)")  # fmt: skip
    for part, what in COLUMN_PARTS.items():
        option = Columns(flags=True).option(part)
        extra = (" (default: row if the table has it, else each user is one row and a user's "
                 "lines must be contiguous)") if part == "row" else f" (default: {part})"
        group.add_argument(option, metavar="NAME", default=None, help=f"the column naming "
                           f"{what}{extra}")  # fmt: skip


def _columns(args: argparse.Namespace) -> Columns:
    """The input's own column names given by --row-col .. --score-col."""
    return Columns.of(args.row_col, args.user_col, args.item_col, args.label_col,
                      args.score_col, flags=True)  # fmt: skip


def _chunk_options(sp: argparse.ArgumentParser) -> None:
    """How a large input is read: --chunk-rows, --memory, --jobs."""
    sp.add_argument(
        "--memory", type=_memory, default=DEFAULT_MEMORY, metavar="SIZE",
        help="memory budget of each process, e.g. 500MB or 2GB: FILE is read and evaluated in "
        "chunks of whole rows that fit it (default: 1GB)",
    )  # fmt: skip
    sp.add_argument("--chunk-rows", type=_count, default=None, metavar="N",
                    help="rows per chunk instead of the size --memory gives")  # fmt: skip
    sp.add_argument(
        "-j", "--jobs", type=_count, default=1, metavar="N",
        help="processes evaluating chunks (default: 1); the result does not depend on N",
    )  # fmt: skip


#: Examples of each command, on the files of ``examples/`` (run from a checkout's root): shown
#: at the end of its ``--help`` and in the command-line reference; the tests run every one.
EXAMPLES: dict[str, tuple[tuple[str, str], ...]] = {
    "evaluate": (
        ("tieaudit evaluate examples/candidates.csv --metrics nDCG@10 HR@5",
         "two measures under the default rules, as a table"),
        ("tieaudit evaluate examples/candidates.csv -m nDCG@10 --rules input_order expected "
         "hash_mean --out metrics.csv", "three rules, the tidy table written to metrics.csv"),
        ("tieaudit evaluate examples/candidates.csv -m nDCG@10 --score-precision round:0",
         "what rounding the scores to integers would do"),
    ),
    "audit": (
        ("tieaudit audit examples/candidates.csv --out-dir audit",
         "which rules are row-order invariant: audit/invariance.csv, diagnostics.csv, "
         "checklist.md"),
    ),
    "compare": (
        ("tieaudit compare examples/candidates.csv examples/continuous.csv --names coarse "
         "continuous -m nDCG@10", "coarse integer scores against continuous ones: the "
         "order flips with the rule"),
    ),
    "probe": (
        ("tieaudit probe numpy-stable -m HR@10 --out probe-numpy",
         "the rule of a built-in adapter (numpy's stable argsort): input_order"),
        ("tieaudit probe sklearn -m nDCG@10 --out probe-sklearn",
         "scikit-learn's ndcg_score (the probe extra): the exact expectation"),
    ),
}  # fmt: skip


def _examples_text(command: str) -> str:
    """The examples of ``command`` as the end of its ``--help``."""
    return "\n\nexamples:\n" + "\n".join(f"  {line}\n      {what}"
                                          for line, what in EXAMPLES[command])  # fmt: skip


def _parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    p = argparse.ArgumentParser(
        prog="tieaudit",
        description="Evaluate top-k recommendation metrics under explicit tie rules and audit "
        "whether an evaluation depends on the order in which candidates were stored.",
        epilog="examples:\n"
        "  tieaudit evaluate candidates.csv --metrics nDCG@10 HR@10 --format table\n"
        "  tieaudit evaluate candidates.parquet --rules input_order expected hash_mean "
        "--out metrics.csv\n"
        "  tieaudit audit candidates.csv --out-dir audit/\n"
        "  tieaudit compare modelA.parquet modelB.parquet --out flips.csv\n"
        "  tieaudit evaluate --run run.txt --qrels qrels.txt -m P@5 Recall@1000 nDCG@10\n\n"
        "Run `tieaudit evaluate --help` or `tieaudit audit --help` for details.",
        formatter_class=fmt,
    )
    p.add_argument("--version", action="version", version=f"tieaudit {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("file", metavar="FILE", nargs="?",
                        help="candidates table (CSV, TSV or Parquet), a folder of them (a data lake: "
                        "hive key=value folders; names starting with . or _ skipped) or a glob "
                        "of files or folders; or give --run and --qrels")
        sp.add_argument("--run", metavar="RUN", help="TREC run file, instead of FILE")
        sp.add_argument("--qrels", metavar="QRELS", help="TREC qrels file for --run")
        sp.add_argument(
            "-m", "--metrics", nargs="+", metavar="M", default=_DEFAULT_METRICS,
            help="measures as NAME@K, NAME in HR, nDCG, MRR, Recall, P (default: HR, nDCG and "
            "MRR at 1, 5, 10, 20)",
        )  # fmt: skip
        _rule_options(sp, f"tie rules (default: {' '.join(_DEFAULT_RULES)}; and docno_desc with "
                      "--run)")  # fmt: skip
        sp.add_argument("--score-precision", type=_precision, default=None, metavar="P",
                        help=f"cast the scores before ranking: {', '.join(PRECISIONS)} (D "
                        "decimals), as a model served in that type or an evaluator that casts "
                        "sees them; more rows tie (default: the scores as stored)")  # fmt: skip
        _column_options(sp)

    ev = sub.add_parser(
        "evaluate",
        help="metrics under each tie rule",
        description="Evaluate FILE (or a TREC run) under each tie rule and write a tidy table "
        "with columns rule, metric, value, sd, min, max, se, n_rows, n_seeds, z.\n\n"
        + _INPUT_HELP,
        epilog=_RULES_HELP + "\ncolumns: value is the mean over rows; for hash_mean sd/min/max "
        "are over seeds and z compares the seed mean with the exact expectation; for expected "
        "sd is the exact sd of the mean under random tie-breaking and min/max are the "
        "pessimistic/optimistic bounds; se is the standard error over rows.",
        formatter_class=fmt,
    )
    common(ev)
    ev.add_argument("-o", "--out", metavar="PATH", help="write here instead of standard output")
    ev.add_argument(
        "--format", choices=("csv", "json", "table"), default=None,
        help="output format (default: from --out's extension, csv; table when printing)",
    )  # fmt: skip
    ev.add_argument("--per-row", metavar="PATH", help="also write every row's value per rule")
    ev.add_argument(
        "--engine", choices=("numpy", "duckdb"), default="numpy",
        help="numpy (default): every rule, streamed in chunks of rows; duckdb: the rules SQL "
        "computes (input_order, reversed_input, optimistic, pessimistic, expected, item_id, "
        "docno_desc; by default those of the default rules) as one query in DuckDB, memory "
        "bounded by --memory (needs tieaudit[duckdb])",
    )  # fmt: skip
    _chunk_options(ev)

    au = sub.add_parser(
        "audit",
        help="row-order invariance, tie diagnostics and a reporting checklist",
        description="Audit FILE (or a TREC run): re-evaluate each rule after permuting the "
        "stored candidates inside every row (relevant items last, reversed, and seeded "
        "shuffles), describe the "
        "ties, and fill in a reporting checklist. Writes invariance.csv, diagnostics.csv and "
        "checklist.md into --out-dir.\n\n" + _INPUT_HELP,
        epilog=_RULES_HELP,
        formatter_class=fmt,
    )
    common(au)
    au.add_argument("-o", "--out-dir", metavar="DIR", default="tieaudit-audit",
                    help="output folder (default: ./tieaudit-audit)")  # fmt: skip
    au.add_argument(
        "--permutations", type=_count, default=DEFAULT_PERMUTATIONS, metavar="P",
        help=f"seeded random shuffles per row, besides positive-last and reversed "
        f"(default: {DEFAULT_PERMUTATIONS})",
    )  # fmt: skip
    au.add_argument("--permutation-seed", type=_count, default=0, metavar="S",
                    help="seed of the shuffles (default: 0)")  # fmt: skip
    au.add_argument("--headline", nargs="+", default=None, metavar="M",
                    help="measures shown in the checklist, each one of --metrics (default: "
                    "those of nDCG@10 HR@10 evaluated, else the first two metrics)")  # fmt: skip
    au.add_argument("--reported-rule", default=None, metavar="RULE",
                    help="the rule your reported numbers use, one of --rules (default: "
                    "expected)")  # fmt: skip
    _chunk_options(au)
    cmp = sub.add_parser(
        "compare",
        help="does the tie rule change which model wins? (ranking flips)",
        description="Compare two or more models evaluated on the same rows: FILE... are their "
        "scored candidates tables (CSV, TSV or Parquet, the format of `tieaudit evaluate`), holding "
        "the same rows (rows of one id pair when their user and relevant items agree; the "
        "output says when their negatives differ). For each measure: the order of the models under each rule, and for "
        "each pair the paired difference under `expected` (mean over rows of the per-row "
        "difference of exact expectations) with its standard error over rows and the exact sd "
        "from tie-breaking (each model's ties broken independently), marking the pairs whose "
        "order under a rule differs from their order under `expected`.",
        epilog=_RULES_HELP + "\nflip: under RULE the pair is ordered by the sign of the "
        "difference of its means (within 1e-12: level); it flips when that sign differs from "
        "the sign under expected. Prints Markdown; --out writes the tidy CSV (one line per "
        "measure, pair and rule).",
        formatter_class=fmt,
    )
    cmp.add_argument("files", metavar="FILE", nargs="+",
                     help="scored candidates tables, one per model (two or more)")  # fmt: skip
    cmp.add_argument("--names", nargs="+", metavar="NAME",
                     help="a name per FILE (default: the file names without extension)")  # fmt: skip
    cmp.add_argument("-m", "--metrics", nargs="+", metavar="M", default=["nDCG@10", "HR@10"],
                     help="measures (default: nDCG@10 HR@10)")  # fmt: skip
    _rule_options(cmp, f"rules set against expected (default: {' '.join(_DEFAULT_RULES)})")
    cmp.add_argument("-o", "--out", metavar="PATH", help="also write the tidy CSV here")
    _column_options(cmp)
    _chunk_options(cmp)
    _probe_parser(sub, fmt)
    for name, command in sub.choices.items():
        command.epilog = (command.epilog or "") + _examples_text(name)
    return p


def _compare(args: argparse.Namespace) -> int:
    _check_out(args.out, "--out")
    _check_targets({}, {f"--out {args.out}": args.out}, {f"FILE {f}": f for f in args.files})
    if len(args.files) < 2:
        raise ValueError(f"compare needs two or more FILEs, got {len(args.files)}")
    names = args.names or [Path(f).name.split(".")[0] for f in args.files]
    if len(names) != len(args.files):
        raise ValueError(f"--names gives {len(names)} name(s) for {len(args.files)} FILEs")
    if len(set(names)) != len(names):
        names = list(args.files)
    rules = [str(r) for r in parse_rules(args.rules or _DEFAULT_RULES)]
    res = compare(
        dict(zip(names, args.files, strict=True)), args.metrics, rules,
        n_seeds=_n_seeds(args.seeds, rules),
        chunk_rows=args.chunk_rows, memory=args.memory, jobs=args.jobs, progress=True,
        columns=_columns(args),
    )  # fmt: skip
    _chunks_note("compared", res.n_chunks, args)
    if args.out:
        atomic_write_many({args.out: frame_to_text(res.flips, "csv")})
        print(f"wrote {args.out} ({_plural(len(res.flips), 'line')})", file=sys.stderr)
    sys.stdout.write(flips_markdown(res.flips, res.orderings, "Ranking flips", level=1,
                                    note=res.note))  # fmt: skip
    return 0


def _chunks_note(verb: str, n_chunks: int, args: argparse.Namespace,
                 max_lines: int | None = None) -> None:  # fmt: skip
    """Say on standard error how the input was cut, when in several chunks."""
    if n_chunks > 1:
        size = f"{args.chunk_rows} rows" if args.chunk_rows else (
            f"{max_lines} lines" if max_lines else "the lines --memory allows")  # fmt: skip
        print(f"{verb} {n_chunks} chunks of at most {size} (--memory {args.memory / 1e9:g} GB, "
              f"--jobs {args.jobs})", file=sys.stderr)  # fmt: skip


def _probe_parser(sub, fmt) -> None:
    """``tieaudit probe REF``: which tie rule an evaluator uses (:mod:`tieaudit.probe`)."""
    import textwrap

    from .probe.adapters import adapters
    from .probe.behaviours import behaviours
    from .probe.infer import DEFAULT_TIMEOUT, candidate_rules

    names = ", ".join(a.name for a in adapters())

    def wrap(text: str) -> str:
        return "\n\n".join(textwrap.fill(p, 96, break_on_hyphens=False) for p in text.split("\n\n"))

    pr = sub.add_parser(
        "probe",
        help="which tie rule does an evaluator use? (a black-box test)",
        description=wrap("Feed an evaluator crafted tie cases (the relevant item tied with m others, "
        "stored first, in the middle or last, ids ascending or descending, the table permuted, "
        "each run twice) and infer from its values alone its tie rule, whether it is row-order "
        "invariant, and its inflation on a standard tie-heavy table. Prints a summary and "
        "writes probe.json and probe.md into --out.\n\n"
        "REF is a function fn(candidates, k) -> one value per row: candidates is a pandas "
        "DataFrame with columns row, user_id, item_id, label, score in stored order, and the "
        "values are each row's measure in order of first appearance. Give it as "
        "package.module:function or path/to/file.py:function, or name a built-in adapter: "
        f"{names}."),
        epilog=wrap("the rule is printed as one word: a registered rule ("
        f"{', '.join(str(r) for r in candidate_rules())}), "
        "a behaviour of the evaluator's internals that is no tie rule, with its parameters ("
        f"{', '.join(b.name for b in behaviours())}), "
        "unstable (the values change between runs, or with the stored order in a way no rule "
        "explains) or unknown (with the evidence). With several measures probe.json holds "
        "one result per measure."),
        formatter_class=fmt,
    )
    pr.add_argument("ref", metavar="REF", help="the evaluator: module:function, file.py:function "
                    "or an adapter name")  # fmt: skip
    pr.add_argument("-m", "--metric", action="append", metavar="M",
                    help="a measure REF computes, e.g. HR@10; repeat it for several, each "
                    "probed on its own (default: every measure an adapter offers, at cutoff "
                    f"{_PROBE_DEFAULT.k}; {_PROBE_DEFAULT} for a function)")  # fmt: skip
    pr.add_argument("-o", "--out", metavar="DIR", default="tieaudit-probe",
                    help="output folder (default: ./tieaudit-probe)")  # fmt: skip
    pr.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                    help="seconds one call of REF may take; the calls run in a child process, "
                    f"stopped after that (default: {DEFAULT_TIMEOUT:g}; 0: no limit, in this "
                    "process)")  # fmt: skip


def _probe(args: argparse.Namespace) -> int:
    from .probe import load_evaluator, probe
    from .probe.report import summary, write

    _check_out(args.out, "--out", folder=True)
    if not args.timeout >= 0:  # NaN too
        raise ValueError(f"--timeout {args.timeout:g}: give seconds above 0, or 0 for no limit")
    results = []
    metrics = _probe_metrics(args.ref, args.metric)
    for i, metric in enumerate(metrics, 1):
        fn = load_evaluator(args.ref, metric)
        doing = f"probing {args.ref} for {metric} ({i} of {len(metrics)})"
        results.append(probe(fn, metric, name=args.ref, timeout=args.timeout or None,
                             progress=functools.partial(_progress, doing)))  # fmt: skip
        sys.stdout.write(summary(results[-1]))
        sys.stdout.flush()
    write(results, args.out)
    print(f"wrote {args.out}/probe.json, probe.md", file=sys.stderr)
    return 0


def _progress(doing: str, line: str) -> None:
    print(f"{doing}: {line}", file=sys.stderr, flush=True)


def _probe_metrics(ref: str, given: list[str] | None) -> list[Measure]:
    """The measures ``tieaudit probe`` asks for: those given (once each), else every measure
    an adapter offers at the default cutoff (the default measure first), else the default."""
    from .probe.adapters import adapter_names, get_adapter

    if given:
        return parse_measures(given)
    if ":" in ref or ref not in adapter_names():
        return [_PROBE_DEFAULT]
    names = get_adapter(ref).measures
    first = [_PROBE_DEFAULT] if _PROBE_DEFAULT.name in names else []
    return first + [Measure(n, _PROBE_DEFAULT.k) for n in names if n != _PROBE_DEFAULT.name]


def _input(args: argparse.Namespace) -> tuple[str | CandidateTable, list[str], str]:
    """FILE (a path, not yet read) or the table of --run/--qrels, the rules and a title."""
    rules = _rules(args)
    if args.run is None and args.qrels is None:
        if args.file is None:
            raise ValueError("give a candidates FILE, or a TREC run with --run RUN --qrels QRELS")
        return args.file, rules, Path(args.file).name
    if args.file is not None:
        raise ValueError(f"give either FILE ({args.file}) or --run/--qrels, not both")
    if args.run is None or args.qrels is None:
        raise ValueError("--run and --qrels go together")
    if not _columns(args).is_default:
        raise ValueError("--row-col .. --score-col name the columns of a candidates FILE; a TREC "
                         "run's columns are fixed")  # fmt: skip
    trec = read_trec(args.run, args.qrels)
    print(trec.message(), file=sys.stderr)
    return trec.table, rules, Path(args.run).name


def _rules(args: argparse.Namespace) -> list[str]:
    """--rules, or the default rules (and docno_desc for a TREC run)."""
    if args.rules:
        return args.rules
    return [*_DEFAULT_RULES, "docno_desc"] if args.run is not None else _DEFAULT_RULES


def _n_seeds(seeds: int, rules: list[str]) -> int:
    """``--seeds``, checked only when a rule averages over hash seeds (``hash_mean``)."""
    if any(r.kind == "hash_mean" for r in parse_rules(rules)):
        if seeds < 1:
            raise ValueError(f"--seeds {seeds}: hash_mean needs at least 1 seed")
        return seeds
    return seeds if seeds >= 1 else DEFAULT_SEEDS  # unused: no rule averages over seeds


def _check_out(path: str | None, option: str, folder: bool = False) -> None:
    """An output option names a file (``folder``: a folder) that may not exist yet; say so
    before any work is done rather than when the result is written."""
    if path is None or not Path(path).exists() or Path(path).is_dir() == folder:
        return
    is_, want = ("a file", "a folder") if folder else ("a folder", "a file name")
    raise ValueError(f"{option} {path} is {is_}; give {want}")


def _identity(path: str | Path) -> tuple:
    """What a path names: the file itself when it exists (a symlink or hard link to an input is
    that input), else its absolute path with symlinks resolved."""
    try:
        st = Path(path).stat()
    except OSError:
        return ("path", os.path.realpath(path))
    return ("file", st.st_dev, st.st_ino)


def _check_targets(inputs: dict[str, str | None], outputs: dict[str, str | Path | None],
                   candidates: dict[str, str | None] | None = None) -> None:  # fmt: skip
    """No output may be an input (writing it would replace the input) or another output (one
    would replace the other); both are named, before any work is done. ``candidates``: inputs
    read as candidates tables, a file, folder or glob (:class:`tieaudit.tables.inputs.PathInput`): no
    output may be one of the files they read, nor lie inside a folder they read or match
    their glob (the next run would read it as candidates)."""
    seen = {_identity(path): what for what, path in reversed(inputs.items()) if path is not None}
    read = [(what, PathInput.of(path)) for what, path in (candidates or {}).items()
            if path is not None]  # fmt: skip
    for what, given in reversed(read):
        for f, _ in given.files:
            seen[_identity(f)] = what if str(f) == given.name else f"{f}, read by {what}"
    for what, path in outputs.items():
        if path is None:
            continue
        for by, given in read:
            why = given.covers(path)
            if why is not None:
                raise ValueError(f"{what} is {why} of {by}: it would be read as candidates (now "
                                 "or at the next run); give a path outside it")  # fmt: skip
        key = _identity(path)
        if key in seen:
            raise ValueError(f"{what} is {seen[key]}; give another path")
        seen[key] = what


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _inputs(args: argparse.Namespace) -> dict[str, str | None]:
    """The TREC input files of evaluate and audit, by what they are, for
    :func:`_check_targets`."""
    return {f"the --run file {args.run}": args.run, f"the --qrels file {args.qrels}": args.qrels}


def _candidates(args: argparse.Namespace) -> dict[str, str | None]:
    """The candidates input of evaluate and audit (a file, folder or glob), for
    :func:`_check_targets`."""
    return {f"the input FILE {args.file}": args.file}


def _evaluate(args: argparse.Namespace) -> int:
    _check_out(args.out, "--out")
    _check_out(args.per_row, "--per-row")
    _check_targets(_inputs(args), {f"--out {args.out}": args.out,
                                   f"--per-row {args.per_row}": args.per_row},
                   _candidates(args))  # fmt: skip
    data, rules, _ = _input(args)
    if args.engine == "duckdb":
        return _evaluate_sql(args, data)
    ev = evaluate_stream(
        data, args.metrics, rules, n_seeds=_n_seeds(args.seeds, rules),
        chunk_rows=args.chunk_rows, memory=args.memory, jobs=args.jobs, progress=True,
        per_row=args.per_row is not None, score_precision=args.score_precision,
        columns=_columns(args),
    )  # fmt: skip
    _chunks_note("evaluated", ev.n_chunks, args, ev.max_lines)
    summary = ev.summary()
    fmt = args.format
    if fmt is None:
        fmt = "json" if args.out and args.out.endswith(".json") else ("csv" if args.out else "table")
    text = frame_to_text(summary, fmt)
    per_row = frame_to_text(ev.per_row(), "csv") if args.per_row else None
    files = {}
    if args.out:
        files[args.out] = text
    if per_row is not None:
        files[args.per_row] = per_row
    atomic_write_many(files)
    if args.out:
        counts = f"{_plural(len(summary), 'line')}, {_plural(ev.n_rows, 'row')}"
        print(f"wrote {args.out} ({counts})", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _evaluate_sql(args: argparse.Namespace, data: str | CandidateTable) -> int:
    """``evaluate --engine duckdb``: a candidates FILE, folder or glob, the summary only."""
    if not _columns(args).is_default:  # checked first: it needs no engine to say so
        raise ValueError("--row-col .. --score-col: not with --engine duckdb, which reads the "
                         "format's column names (use the default engine)")  # fmt: skip
    try:
        from . import duckdb as engine  # optional: imported when asked for
        engine._connect(None, None).close()
    except ImportError as exc:
        raise ValueError(str(exc)) from None
    if not isinstance(data, str):
        raise ValueError("--engine duckdb reads candidates files; evaluate a TREC run with the "
                         "default engine")  # fmt: skip
    unused = [flag for flag, given in (("--per-row", args.per_row), ("--chunk-rows",
              args.chunk_rows), ("--score-precision", args.score_precision)) if given]  # fmt: skip
    if unused:
        raise ValueError(f"{', '.join(unused)}: not with --engine duckdb (use the default engine)")
    summary = engine.evaluate(data, args.metrics, args.rules, memory=args.memory,
                              threads=args.jobs)  # fmt: skip
    fmt = args.format or ("json" if args.out and args.out.endswith(".json")
                          else ("csv" if args.out else "table"))  # fmt: skip
    text = frame_to_text(summary, fmt)
    if args.out:
        atomic_write_many({args.out: text})
        n_rows = int(summary["n_rows"].iloc[0])
        print(f"wrote {args.out} ({_plural(len(summary), 'line')}, {_plural(n_rows, 'row')})",
              file=sys.stderr)  # fmt: skip
    else:
        sys.stdout.write(text)
    return 0


def _audit_choices(args: argparse.Namespace) -> tuple[list[str] | None, str]:
    """--headline and --reported-rule checked as the pipeline checks its configuration: a
    headline measure must be one of --metrics, the reported rule a rule among --rules; when not
    given, the checklist picks the headline among the metrics and reports ``expected``."""
    metrics = parse_measures(args.metrics)
    headline = None
    if args.headline is not None:
        headline = [str(m) for m in parse_measures(args.headline)]
        for m in headline:
            if parse_measure(m) not in metrics:
                raise ValueError(f"--headline {m} is not one of --metrics "
                                 f"({' '.join(map(str, metrics))})")  # fmt: skip
    if args.reported_rule is None:
        return headline, "expected"
    try:
        reported = parse_rule(args.reported_rule)
    except ValueError as exc:
        raise ValueError(f"--reported-rule {args.reported_rule!r}: {exc}") from None
    rules = parse_rules(_rules(args))
    if reported not in rules:
        raise ValueError(f"--reported-rule {reported} is not one of the rules evaluated "
                         f"({' '.join(map(str, rules))}); add it to --rules")  # fmt: skip
    return headline, str(reported)


def _audit(args: argparse.Namespace) -> int:
    headline, reported = _audit_choices(args)
    _check_out(args.out_dir, "--out-dir", folder=True)
    out = Path(args.out_dir)
    targets = [out / name for name in AUDIT_FILES]
    _check_targets(_inputs(args), {f"--out-dir {args.out_dir} ({p.name})": p for p in targets},
                   _candidates(args))  # fmt: skip
    data, rules, title = _input(args)
    if args.score_precision is not None:  # the cast's effect, streamed through the rows
        metrics = parse_measures(args.metrics)
        shown = parse_measure(headline[0]) if headline else next(
            (m for m in metrics if str(m) == "nDCG@10"), metrics[0])  # fmt: skip
        print(cast_effect(data, args.score_precision, shown, memory=args.memory or DEFAULT_MEMORY,
                          chunk_rows=args.chunk_rows, columns=_columns(args)),
              file=sys.stderr)  # fmt: skip
    res = audit(
        data, args.metrics, rules, n_seeds=_n_seeds(args.seeds, rules),
        n_permutations=args.permutations, seed=args.permutation_seed,
        reported_rule=reported, title=title, chunk_rows=args.chunk_rows, memory=args.memory,
        jobs=args.jobs, progress=True, score_precision=args.score_precision,
        columns=_columns(args), **({"headline": headline} if headline is not None else {}),
    )  # fmt: skip
    _chunks_note("audited", res.n_chunks, args)
    atomic_write_many({out / name: text for name, text in res.files().items()})
    verdicts = res.invariance.drop_duplicates("rule")
    for rec in verdicts.itertuples(index=False):
        mark = "invariant" if rec.invariant == "yes" else "NOT invariant"
        print(f"{rec.rule:>12}  {mark:<14} rows moved: {100 * rec.share_rows_moved:5.1f}%")
    print(f"wrote {out}/{', '.join(AUDIT_FILES)}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tieaudit`` command; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.command in ("evaluate", "compare", "audit"):  # chunk after chunk, in this process
        keep_freed_memory()
    try:
        if args.command == "evaluate":
            return _evaluate(args)
        if args.command == "probe":
            return _probe(args)
        if args.command == "compare":
            return _compare(args)
        return _audit(args)
    except (CandidateError, ValueError, OSError) as exc:
        print(f"tieaudit: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
