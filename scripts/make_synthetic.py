#!/usr/bin/env python3
"""Write a synthetic dataset in the real file layout (see ``tieaudit.sources.synthetic``).

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
    from tieaudit.sources.synthetic import DATASETS, generate
    from tieaudit.sources import get_source
except ImportError:  # running from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from tieaudit.sources.synthetic import DATASETS, generate
    from tieaudit.sources import get_source

#: Command-line flag -> generator keyword; a flag applies to the generators that take it.
FLAGS = {
    "items": "n_items",
    "bench_items": "n_bench_items",
    "with_reviews": "with_reviews",
    "compresslevel": "compresslevel",
    "tags": "n_tags",
    "progress": "progress",
}


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
        help="n_items: number of items (movies, metadata records); default scales with --scale",
    )
    parser.add_argument(
        "--bench-items", type=int, default=None, help="n_bench_items: items in a benchmark split"
    )
    parser.add_argument(
        "--with-reviews", action="store_true", help="with_reviews: also write the raw reviews file"
    )
    parser.add_argument(
        "--compresslevel",
        type=int,
        default=None,
        choices=range(0, 10),
        metavar="0-9",
        help="compresslevel: gzip level (default 6; 1 is about twice as fast for big metadata)",
    )
    parser.add_argument("--tags", type=int, default=None, help="n_tags: number of genome tags")
    parser.add_argument("--progress", action="store_true", help="report metadata progress")
    args = parser.parse_args(argv)

    takes = get_source(args.dataset).generator_options
    options: dict[str, object] = {}
    for flag, keyword in FLAGS.items():
        value = getattr(args, flag)
        if value is None or value is False:
            continue
        if keyword not in takes:
            parser.error(f"--{flag.replace('_', '-')} does not apply to {args.dataset} "
                         f"(its generator takes: {', '.join(takes)})")
        options[keyword] = _progress if flag == "progress" else value

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
