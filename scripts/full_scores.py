"""Step: full-catalog summary table of one scorer: fit, score every catalogue item in chunks of
users and reduce each row to one line (held-out item, n_higher/n_tied/n_lower, before:RULE)."""

import numpy as np

from tieaudit.common.parquet import read_parquet
from tieaudit.analyses.fullcatalog import chunk_rows_for, full_catalog_candidates
from tieaudit.common.io import write_table
from tieaudit.pipeline.partition import empty_part_note, row_part
from tieaudit.scorers import get_scorer
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
inp = snakemake.input  # noqa: F821
spec = p.spec
scorer = get_scorer(spec["scorer"], **spec["options"])
history = read_parquet(inp.history)
scorer.fit(history, read_parquet(inp.attributes))
history = history[["user_id", "item_id"]]
heldout_items = read_parquet(inp.heldout, columns=["item_id"])["item_id"]
# the catalogue of the sampled setting: the distinct items of history and held-out items
catalog = np.union1d(
    np.asarray(history["item_id"].unique()).astype(str),
    np.asarray(heldout_items.unique()).astype(str),
)
# the rows are the sampled setting's evaluation rows (in its order), the first full_rows of them
sampled = read_parquet(inp.candidates, columns=["row", "user_id", "item_id", "label"])
rows = sampled[sampled["label"] == 1][["row", "user_id", "item_id"]].reset_index(drop=True)
if p.n_rows is not None:
    rows = rows.iloc[: p.n_rows].reset_index(drop=True)
if p.part is not None:  # a part of the rows (evaluation.row_chunks); the scorer fits on all
    rows = row_part(rows, *p.part)
    log.info("rows part %d of %d", *p.part)
    if rows.empty:
        log.warning(empty_part_note(*p.part))
chunk = chunk_rows_for(len(catalog), p.chunk_pairs)
log.info("%d rows x %d catalogue items, %d rows a chunk", len(rows), len(catalog), chunk)


def progress(done, total):
    if done == total or done * 10 // total != (done - chunk) * 10 // total:
        log.info("scored %d of %d rows", done, total)


# a scorer with calibrate (residualized_attribute) is calibrated on the sampled candidates, as in
# the sampled score step, so both settings score with one function (see tieaudit.analyses.fullcatalog)
reduced = full_catalog_candidates(
    rows,
    history,
    catalog,
    scorer,
    chunk_rows=chunk,
    calibration=sampled[["user_id", "item_id"]],
    seed=p.seed,
    seeds=p.seeds,
    positive_position=p.positive_position,
    k_max=p.k_max,  # the largest configured cutoff: hash counts stop there
    progress=progress,
)
tied = reduced["n_tied"].to_numpy()
log.info(
    "%d rows: tie group at the held-out item %.1f on average (max %d), %.1f%% of rows tied",
    len(reduced), 1 + tied.mean() if len(tied) else 0, 1 + tied.max() if len(tied) else 0,
    100 * (tied > 0).mean() if len(tied) else 0,
)  # fmt: skip
write_table(reduced, snakemake.output[0])  # noqa: F821
