"""``python -m tests.mutations [NAME ...]`` (``make test-mutations``): the mutation check.

Each defect of :mod:`tests.mutations.defects` is applied alone to a scratch copy of the checkout
and the tests of ``make test`` are run there; the defect is caught when they fail. Prints one
line per defect and ``mutations: N caught, M survived of T``; exits 1 if any survived, 2 if the
check cannot run (a rotted defect, an unknown name, first tests ``make test`` does not select).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from .defects import DEFECTS
from .runner import (
    ROOT,
    MutationSetupError,
    Outcome,
    RottedDefect,
    make_test_args,
    occurrences,
    run_defect,
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tests.mutations",
        description="Apply each deliberate defect to a scratch copy; the test suite must fail.",
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="only these defects")
    parser.add_argument("--list", action="store_true", help="list the defects and stop")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds one pytest run may take (default 3600)")  # fmt: skip
    parser.add_argument("--log-dir", type=Path,
                        help="write each defect's last pytest output to DIR/NAME.log")  # fmt: skip
    parser.add_argument("--keep", action="store_true", help="keep the scratch copies")
    parser.add_argument("--first-only", action="store_true",
                        help="run only each defect's first tests (a quick look, not the check)")
    return parser


def _row(cells: tuple[str, ...], widths: tuple[int, ...]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # stopped with SIGTERM: unwind, so that the running pytest is killed and the copy removed
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    by_name = {d.name: d for d in DEFECTS}
    unknown = [n for n in args.names if n not in by_name]
    if unknown:
        print(f"mutations: error: unknown defect(s) {', '.join(unknown)}; known: "
              f"{', '.join(by_name)}", file=sys.stderr)  # fmt: skip
        return 2
    chosen = [by_name[n] for n in args.names] or list(DEFECTS)
    if args.list:
        for d in chosen:
            print(f"{d.name}: {d.path}: {d.means}")
        return 0
    rotted = [d.name for d in chosen if occurrences(d) != 1]
    if rotted:
        print(f"mutations: error: rotted defect(s) {', '.join(rotted)}: their old text does not "
              "occur exactly once; update tests/mutations/defects.py", file=sys.stderr)  # fmt: skip
        return 2
    try:
        pytest_args = make_test_args()
    except MutationSetupError as exc:
        print(f"mutations: error: {exc}", file=sys.stderr)
        return 2
    print(f"mutations: {len(chosen)} defect(s), tests: pytest {' '.join(pytest_args)} -x "
          f"(in a scratch copy of {ROOT})", flush=True)  # fmt: skip
    widths = (max(len(d.name) for d in chosen), 8, 7, 0)
    print(_row(("defect", "result", "seconds", "caught by"), widths), flush=True)
    outcomes: list[Outcome] = []
    start = time.monotonic()
    for defect in chosen:
        try:
            outcome = run_defect(defect, pytest_args, timeout=args.timeout, keep=args.keep,
                                 first_only=args.first_only)  # fmt: skip
        except (MutationSetupError, RottedDefect) as exc:
            print(f"mutations: error: {exc}", file=sys.stderr)
            return 2
        outcomes.append(outcome)
        if args.log_dir is not None:
            args.log_dir.mkdir(parents=True, exist_ok=True)
            (args.log_dir / f"{defect.name}.log").write_text(outcome.output, encoding="utf-8")
        verdict = "caught" if outcome.caught else "missed" if args.first_only else "SURVIVED"
        print(_row((defect.name, verdict, f"{outcome.seconds:.0f}", outcome.by or "-"), widths),
              flush=True)  # fmt: skip
    caught = sum(o.caught for o in outcomes)
    survived = [o.defect.name for o in outcomes if not o.caught]
    if survived:
        print(f"{'missed' if args.first_only else 'survived'}: {', '.join(survived)}")
    print(f"time: {time.monotonic() - start:.0f} s")
    if args.first_only:
        print(f"mutations: {caught} caught by their first tests, {len(survived)} not "
              f"(the whole suite was not run) of {len(outcomes)}")  # fmt: skip
        return 1 if survived else 0
    print(f"mutations: {caught} caught, {len(survived)} survived of {len(outcomes)}")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
