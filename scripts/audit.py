"""Step: row-order invariance audit, tie diagnostics and the reporting checklist of a scored
table, or of a part of its rows (evaluation.row_chunks: their per-row numbers, merged by
merge_audit)."""

import sys
from pathlib import Path

import pandas as pd
import pyarrow.compute as pc

from tieaudit import evaluate, read_candidates
from tieaudit.common.parquet import read_table
from tieaudit.analyses.audit import AuditRows, audit
from tieaudit.common.io import atomic_write_many, write_table
from tieaudit.pipeline.partition import empty_part_note, is_empty_part, placed
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
w = snakemake.wildcards  # noqa: F821
inp = snakemake.input  # noqa: F821
out = snakemake.output  # noqa: F821
if p.part is not None and is_empty_part(inp.scores):  # more parts than the dataset has rows
    log.warning(empty_part_note(*p.part))
    write_table(pd.DataFrame(), out.rows)
    sys.exit(0)
table = read_candidates(inp.scores)
# the users with history: a row of any other user is a cold start (diagnostics)
history = read_table(inp.history, columns=["user_id"])
known = pc.unique(history.column("user_id")).to_numpy(zero_copy_only=False)
del history
if p.part is not None:
    # this part's place in the whole table: its rows are shuffled as there (and random:SEED)
    table = placed(table, inp.parts, p.part[0])
    log.info("rows part %d of %d: lines %d.. of %d", *p.part, table.line_offset,
             table.lines_total)  # fmt: skip
    ev = evaluate(table, p.metrics, p.rules, n_seeds=p.n_seeds, rank_cap=None)
    AuditRows.of(ev, p.permutations, p.seed, known).write(out.rows)
else:
    res = audit(
        table,
        p.metrics,
        p.rules,
        n_seeds=p.n_seeds,
        n_permutations=p.permutations,
        seed=p.seed,
        headline=p.headline,
        reported_rule=p.reported_rule,
        title=f"{w.dataset} / {w.scorer}",
        users_with_history=known,
        requested_rows=p.requested_rows,
    )
    atomic_write_many({getattr(out, Path(n).stem): t for n, t in res.files().items()})
    log.info("\n%s", res.invariance.drop_duplicates("rule").to_string())
    log.info("%.1f%% of the rows are cold starts (their user has no history)",
             100 * res.tie_diagnostics.share_rows_cold_start)  # fmt: skip
