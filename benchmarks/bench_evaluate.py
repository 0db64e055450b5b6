"""Benchmark: the evaluator against a naive per-seed sort and scikit-learn's tie-averaged nDCG.

Run on demand (``make bench`` or ``python benchmarks/bench_evaluate.py``); it prints, from one run:

* seconds to evaluate all rules (100 hash seeds) on W rows x 100 candidates with tie-heavy
  scores (most candidates at a few integer levels), excluding and including validation;
* the same hash_mean computed naively: every candidate hashed and every row lexsorted once per
  seed, and the ratio (results checked equal);
* the exact expected nDCG@10 against ``sklearn.metrics.ndcg_score(..., ignore_ties=False)``
  (McSherry & Najork tie averaging) on the same rows, and the ratio (results checked equal);
* the time at three sizes, to show linear growth.

Targets (issue: evaluation core): W = 30,000 in <= 1 s on 2 cores; >= 20x the naive baseline;
>= 50x scikit-learn.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pyarrow as pa

from tieaudit import CandidateTable, evaluate
from tieaudit.ties.rules.hashed import hash_codes
from tieaudit.common.hashing import pair_keys, seeded_keys

N_CANDIDATES = 100
CATALOG = 50_000


def make_table(n_rows: int, seed: int = 0) -> tuple[CandidateTable, np.ndarray, np.ndarray]:
    """W rows x 100 candidates; scores at integer levels 0..4 (60% at 0), positive stored first
    and nudged up a level half of the time. Returns the table and dense (labels, scores)."""
    rng = np.random.default_rng(seed)
    levels = rng.choice(5, p=[0.6, 0.2, 0.1, 0.06, 0.04], size=(n_rows, N_CANDIDATES))
    levels = levels.astype(np.float64)
    levels[:, 0] += rng.integers(0, 2, size=n_rows)
    labels = np.zeros((n_rows, N_CANDIDATES), dtype=np.int64)
    labels[:, 0] = 1
    items = _distinct_items(rng, n_rows)
    item_names = np.array([f"B{i:09d}" for i in range(CATALOG)], dtype=object)
    rows = np.repeat(np.arange(n_rows), N_CANDIDATES).astype(str)
    users = np.repeat(np.char.add("U", np.arange(n_rows).astype(str)), N_CANDIDATES)
    arrow = pa.table(
        {
            "row": rows,
            "user_id": users,
            "item_id": pa.array(item_names[items.ravel()], pa.string()),
            "label": labels.ravel(),
            "score": levels.ravel(),
        }
    )
    return CandidateTable.from_arrow(arrow), labels, levels


def _distinct_items(rng: np.random.Generator, n_rows: int) -> np.ndarray:
    """n_rows x 100 item codes, distinct within a row (rejection on the rare duplicates)."""
    items = rng.integers(0, CATALOG, size=(n_rows, N_CANDIDATES))
    while True:
        s = np.sort(items, axis=1)
        dup_rows = np.flatnonzero((s[:, 1:] == s[:, :-1]).any(axis=1))
        if len(dup_rows) == 0:
            return items
        items[dup_rows] = rng.integers(0, CATALOG, size=(len(dup_rows), N_CANDIDATES))


def naive_hash_mean(table: CandidateTable, n_seeds: int, k: int = 10) -> np.ndarray:
    """Mean nDCG@k per seed by hashing every candidate and lexsorting every row per seed."""
    uh = hash_codes(table.user_ids, table.user)
    ih = hash_codes(table.item_ids, table.item)
    pairs = pair_keys(uh[table.user], ih[table.item])
    out = np.empty(n_seeds)
    for s in range(n_seeds):
        key = seeded_keys(pairs, s)
        order = np.lexsort((table.item, key, -table.score, table.row))
        # rank of the positive inside its row = position - row start (rows are contiguous here)
        rows_sorted = table.row[order]
        starts = np.flatnonzero(np.r_[True, rows_sorted[1:] != rows_sorted[:-1]])
        row_start = np.repeat(starts, np.diff(np.r_[starts, len(order)]))
        at = np.flatnonzero(table.label[order])
        rank = at - row_start[at] + 1
        gain = np.where(rank <= k, 1.0 / np.log2(rank + 1.0), 0.0)
        out[s] = gain.mean()
    return out


def timed(fn, repeat: int = 3):
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=30_000)
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--skip-sklearn", action="store_true")
    args = ap.parse_args()
    w, n_seeds = args.rows, args.seeds

    t0 = time.perf_counter()
    table, labels, scores = make_table(w)
    t_build = time.perf_counter() - t0
    print(f"table: {w:,} rows x {N_CANDIDATES} candidates ({table.n_candidates:,} lines), "
          f"built and validated in {t_build:.2f} s")  # fmt: skip

    t_all, ev = timed(lambda: evaluate(table, n_seeds=n_seeds))
    summ = ev.summary()
    print(f"evaluate, all 8 rules x 12 measures, {n_seeds} hash seeds: {t_all:.3f} s (best of 3)")

    t_hm, ev_hm = timed(lambda: evaluate(table, ["nDCG@10"], ["hash_mean"], n_seeds=n_seeds))
    t_naive, naive = timed(lambda: naive_hash_mean(table, n_seeds), repeat=1)
    ours = ev_hm["hash_mean"].seed_means[ev_hm.measures[0]]
    assert np.allclose(ours, naive, rtol=0, atol=1e-12), "naive and fast hash_mean disagree"
    print(f"hash_mean nDCG@10, {n_seeds} seeds: tieaudit {t_hm:.3f} s, naive lexsort per seed "
          f"{t_naive:.2f} s -> {t_naive / t_hm:.0f}x (per-seed means identical)")  # fmt: skip

    t_exp, ev_exp = timed(lambda: evaluate(table, ["nDCG@10"], ["expected"]))
    exact = ev_exp.mean("expected", "nDCG@10")
    if not args.skip_sklearn:
        from sklearn.metrics import ndcg_score

        t_sk, sk = timed(lambda: ndcg_score(labels, scores, k=10, ignore_ties=False))
        assert abs(sk - exact) < 1e-9, f"sklearn {sk} != tieaudit {exact}"
        print(f"expected nDCG@10: tieaudit {t_exp:.4f} s, scikit-learn ndcg_score "
              f"(ignore_ties=False) {t_sk:.2f} s -> {t_sk / t_exp:.0f}x "
              f"(both {exact:.6f})")  # fmt: skip

    print("growth, all rules with", n_seeds, "seeds:")
    for n in (w // 4, w // 2, w):
        tab, _, _ = make_table(n, seed=1)
        t, _ = timed(lambda tab=tab: evaluate(tab, n_seeds=n_seeds))
        print(f"  W = {n:>7,}: {t:.3f} s  ({1e6 * t / n:.1f} us/row)")
    print(summ[summ["metric"] == "nDCG@10"][["rule", "value", "sd", "z"]].to_string(index=False))


if __name__ == "__main__":
    main()
