"""Benchmark: ingest time and peak memory at three sizes (run on demand, not a test).

    .venv/bin/python benchmarks/bench_ingest.py [--workdir /tmp/tieaudit-bench-ingest] [--quick]

Two workloads, each at 1/4, 1/2 and the full size, each run in a fresh subprocess whose peak RSS is
read from ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` when the ingest returns:

* **Amazon metadata -> attributes Parquet**: ``ingest("amazon2023", ...)`` with
  ``attributes=["store", "categories", "details.Brand", "main_category"]`` on files from
  :func:`tieaudit.sources.amazon2023.generate_amazon2023` with ``n_items`` = 250k, 500k, 1.0M metadata
  records (~2.8 KB each, so ~2.8 GB uncompressed at full size, like the real
  ``meta_Beauty_and_Personal_Care.jsonl.gz``) and small benchmark split files (1,000 users), so
  the time is the metadata's.
* **MovieLens genome-scores**: ``ingest("movielens", ...)`` on an ``ml-25m.zip`` whose
  ``genome-scores.csv`` has the real shape: 1,128 tags for each of 3,454 / 6,908 / 13,816 movies
  (3.9M / 7.8M / 15.6M rows; relevances ``Beta(1.1, 12)`` written with full float precision like
  the real file) and a tiny ``ratings.csv``. Built here, because the synthetic generator keeps
  its genome to 120 tags. Run once with ``top_n=10`` and once with ``threshold=0.5``.

Inputs are built once under ``--workdir`` and reused. ``--quick`` divides every size by 10.
Targets (issue: ingest): Amazon metadata at 1.0M items <= 180 s with peak RSS <= 3 GB;
genome-scores at 15.6M rows <= 30 s.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import resource
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

AMAZON_ITEMS = (250_000, 500_000, 1_000_000)
ML_MOVIES = (3_454, 6_908, 13_816)
ML_TAGS = 1_128
ATTRIBUTES = ["store", "categories", "details.Brand", "main_category"]


def build_amazon(workdir: Path, n_items: int) -> dict[str, str]:
    """Synthetic Amazon files with ``n_items`` metadata records (cached)."""
    from tieaudit.sources.amazon2023 import generate_amazon2023

    folder = workdir / f"amazon_{n_items}"
    stamp = folder / "paths.json"
    if stamp.exists():
        return json.loads(stamp.read_text())
    t0 = time.perf_counter()
    paths = generate_amazon2023(folder, scale=1_000, seed=0, n_items=n_items, compresslevel=1)
    raw = 0
    with gzip.open(paths["meta"], "rb") as f:
        while block := f.read(1 << 24):
            raw += len(block)
    info = {k: str(v) for k, v in paths.items()}
    info["meta_bytes"] = str(raw)
    stamp.write_text(json.dumps(info))
    print(f"  built {folder.name}: {raw / 1e9:.2f} GB metadata uncompressed "
          f"in {time.perf_counter() - t0:.0f} s", flush=True)
    return info


def build_movielens(workdir: Path, n_movies: int) -> Path:
    """An ml-25m.zip with a real-shaped genome-scores.csv of ``n_movies`` x 1,128 rows (cached)."""
    path = workdir / f"ml_{n_movies}" / "ml-25m.zip"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    tmp = path.with_suffix(".part")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("ml-25m/ratings.csv", "userId,movieId,rating,timestamp\n" + "".join(
            f"{u},{2 * m + 1},{1 + (u + m) % 9 / 2},{1_100_000_000 + 97 * u + m}\n"
            for u in range(1, 200) for m in range(0, n_movies, max(1, n_movies // 50))))
        zf.writestr("ml-25m/genome-tags.csv", "tagId,tag\n" + "".join(
            f"{t},tag number {t}\n" for t in range(1, ML_TAGS + 1)))
        with zf.open("ml-25m/genome-scores.csv", "w", force_zip64=True) as f:
            f.write(b"movieId,tagId,relevance\n")
            for start in range(0, n_movies, 500):
                movies = np.arange(start, min(start + 500, n_movies)) * 2 + 1
                table = pa.table({
                    "movieId": np.repeat(movies, ML_TAGS),
                    "tagId": np.tile(np.arange(1, ML_TAGS + 1), len(movies)),
                    "relevance": rng.beta(1.1, 12, len(movies) * ML_TAGS),
                })
                buf = io.BytesIO()
                pacsv.write_csv(table, buf, pacsv.WriteOptions(include_header=False,
                                                                quoting_style="none"))
                f.write(buf.getvalue())
    tmp.replace(path)
    print(f"  built {path.parent.name}: {n_movies * ML_TAGS:,} genome-scores rows "
          f"in {time.perf_counter() - t0:.0f} s", flush=True)
    return path


def child(spec: dict) -> None:
    """Run one ingest in this (fresh) process and print time and peak RSS as JSON."""
    from tieaudit.sources.ingest import ingest

    out = Path(spec["out"])
    t0 = time.perf_counter()
    report = ingest(spec["source"], spec["paths"], out / "interactions.parquet",
                    out / "attributes.parquet", **spec["options"])
    seconds = time.perf_counter() - t0
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": seconds, "peak_mb": peak_kb / 1024,
                      "attribute_rows": report.n_attribute_rows}))


def run(spec: dict) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"child failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def table(title: str, unit: str, rows: list[tuple[int, dict]]) -> None:
    print(f"\n{title}")
    print(f"  {unit:>12}  {'seconds':>8}  {unit + '/s':>14}  {'peak RSS MB':>11}  "
          f"{'s per 1M':>8}  {'attr rows':>10}")
    for n, r in rows:
        print(f"  {n:>12,}  {r['seconds']:>8.2f}  {n / r['seconds']:>14,.0f}  {r['peak_mb']:>11.0f}  "
              f"{r['seconds'] / n * 1e6:>8.2f}  {r['attribute_rows']:>10,}")
    (n0, r0), (n2, r2) = rows[0], rows[-1]
    print(f"  size x{n2 / n0:.0f} -> time x{r2['seconds'] / r0['seconds']:.2f}, "
          f"peak RSS x{r2['peak_mb'] / r0['peak_mb']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/tieaudit-bench-ingest"))
    parser.add_argument("--quick", action="store_true", help="every size / 10 (a smoke run)")
    parser.add_argument("--only", choices=["amazon", "movielens"], default=None)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    div = 10 if args.quick else 1
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    print(f"workdir {work}{' (quick: sizes / 10)' if args.quick else ''}", flush=True)

    if args.only in (None, "amazon"):
        rows = []
        for n in (n // div for n in AMAZON_ITEMS):
            info = build_amazon(work, n)
            paths = {k: info[k] for k in ("train", "valid", "test", "meta")}
            result = run({"source": "amazon2023", "paths": paths, "out": str(work / "out"),
                          "options": {"attributes": ATTRIBUTES}})
            result["meta_gb"] = int(info["meta_bytes"]) / 1e9
            rows.append((n, result))
            print(f"  amazon {n:,} items ({result['meta_gb']:.2f} GB): "
                  f"{result['seconds']:.1f} s, {result['peak_mb']:.0f} MB", flush=True)
        table("Amazon metadata -> attributes (target at 1.0M items: <= 180 s, <= 3072 MB)",
              "items", rows)

    if args.only in (None, "movielens"):
        for options in ({"top_n": 10}, {"threshold": 0.5}):
            rows = []
            for m in (m // div for m in ML_MOVIES):
                path = build_movielens(work, m)
                result = run({"source": "movielens", "paths": {"zip": str(path)},
                              "out": str(work / "out"), "options": options})
                rows.append((m * ML_TAGS, result))
                print(f"  movielens {m * ML_TAGS:,} rows {options}: {result['seconds']:.1f} s, "
                      f"{result['peak_mb']:.0f} MB", flush=True)
            table(f"MovieLens genome-scores {options} (target at 15.6M rows: <= 30 s)", "rows", rows)


if __name__ == "__main__":
    main()
