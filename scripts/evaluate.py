"""Step: evaluate a scored candidates table under every tie rule (tidy metrics.csv), or a part
of its rows (evaluation.row_chunks: their per-row values, merged by merge_metrics)."""

import sys

import numpy as np
import pandas as pd

from tieaudit import evaluate, read_candidates
from tieaudit.common.io import write_table
from tieaudit.pipeline.partition import empty_part_note, is_empty_part, part_bounds, placed
from tieaudit.evaluation.parts import row_values
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
inp = snakemake.input  # noqa: F821
if p.part is not None and is_empty_part(inp.scores):  # more parts than the dataset has rows
    log.warning(empty_part_note(*p.part))
    write_table(pd.DataFrame(), snakemake.output[0])  # noqa: F821
    sys.exit(0)
table = read_candidates(inp.scores)
# hash_mean ranks merged from the hash_seeds jobs; a full-catalog summary table records them
chunks = inp.get("chunks", [])
ranks = np.concatenate([np.load(f) for f in chunks]) if chunks else None
if p.part is not None:
    part, n_parts = p.part
    # this part's place in the whole table (random:SEED shuffles its stored positions), and its
    # rows' hash_mean ranks: the hash_seeds jobs rank every row of the merged table
    table = placed(table, inp.parts, part)
    if ranks is not None:
        first, stop = part_bounds(ranks.shape[1], n_parts)[part]
        if stop - first != table.n_rows or not np.all(table.n_positive == 1):
            raise ValueError(
                f"{inp.scores}: the hash_mean ranks of rows {first}..{stop - 1} do not fit this "
                f"part's {table.n_rows} rows (one relevant item a row expected)"
            )
        ranks = ranks[:, first:stop]
    log.info("rows part %d of %d: lines %d.. of %d", part, n_parts, table.line_offset,
             table.lines_total)  # fmt: skip
ev = evaluate(table, p.metrics, p.rules, n_seeds=p.n_seeds, seed_ranks=ranks)
if p.part is not None:
    write_table(row_values(ev).to_frame(), snakemake.output[0])  # noqa: F821
else:
    summary = ev.summary()
    log.info("\n%s", summary.to_string())
    write_table(summary, snakemake.output[0])  # noqa: F821
