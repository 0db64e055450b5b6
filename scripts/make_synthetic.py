#!/usr/bin/env python3
"""Write a synthetic dataset in the real file layout (see ``tieaudit.data.synthetic``).

Examples::

    python scripts/make_synthetic.py --dataset amazon2023 --scale 2000 --seed 1 --out data/demo/amazon
    python scripts/make_synthetic.py --dataset movielens --scale 500 --seed 1 --out data/demo/ml
    # metadata-heavy benchmark input: 1,000,000 Amazon metadata records (~2.8 GB uncompressed);
    # write it outside the repository
    python scripts/make_synthetic.py --dataset amazon2023 --scale 1000 --items 1000000 \\
        --seed 1 --out /tmp/amazon-1m --compresslevel 1

Prints one line per written file (logical name, path, bytes) and the elapsed time to stderr.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

try:
    from tieaudit.data.synthetic import DATASETS, generate
except ImportError:  # running from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from tieaudit.data.synthetic import DATASETS, generate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, choices=DATASETS)
    parser.add_argument("--scale", required=True, type=int, help="number of users")
    parser.add_argument("--seed", required=True, type=int)
    parser.add_argument("--out", required=True, type=Path, help="output folder")
    parser.add_argument(
        "--items",
        type=int,
        default=None,
        help="number of items (amazon2023: metadata records; movielens/genome2021: movies; "
        "generic: items); default scales with --scale",
    )
    parser.add_argument(
        "--bench-items", type=int, default=None, help="amazon2023: items in the benchmark split"
    )
    parser.add_argument(
        "--with-reviews", action="store_true", help="amazon2023: also write the raw reviews file"
    )
    parser.add_argument(
        "--compresslevel",
        type=int,
        default=6,
        choices=range(0, 10),
        metavar="0-9",
        help="amazon2023: gzip level (default 6; 1 is about twice as fast for big metadata)",
    )
    parser.add_argument(
        "--tags", type=int, default=None, help="movielens/genome2021: number of genome tags"
    )
    parser.add_argument("--progress", action="store_true", help="report metadata progress")
    args = parser.parse_args(argv)

    options: dict[str, object] = {}
    if args.items is not None:
        options["n_items"] = args.items
    if args.dataset == "amazon2023":
        options["compresslevel"] = args.compresslevel
        if args.bench_items is not None:
            options["n_bench_items"] = args.bench_items
        if args.with_reviews:
            options["with_reviews"] = True
        if args.progress:
            options["progress"] = _progress
    elif args.bench_items is not None or args.with_reviews:
        parser.error("--bench-items and --with-reviews apply to amazon2023 only")
    if args.tags is not None:
        if args.dataset not in ("movielens", "genome2021"):
            parser.error("--tags applies to movielens and genome2021 only")
        options["n_tags"] = args.tags

    start = time.perf_counter()
    try:
        paths = generate(args.dataset, args.out, scale=args.scale, seed=args.seed, **options)
    except ValueError as err:
        print(f"make_synthetic: {err}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - start
    for name, path in paths.items():
        print(f"{name}\t{path}\t{path.stat().st_size}")
    print(f"make_synthetic: {args.dataset} written in {elapsed:.1f} s", file=sys.stderr)
    return 0


def _progress(done: int, total: int) -> None:
    if done == total or done % (64 * 4096) < 4096:
        print(f"  metadata {done:,}/{total:,}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
