"""Step: sample evaluation rows and their negatives; write the scorer-independent candidates."""

import numpy as np

from tieaudit.common.parquet import read_parquet
from tieaudit.common.io import write_table
from tieaudit.pipeline.sampling import build_candidates, sample_rows
from tieaudit.common.seeds import make_seed
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
dataset = snakemake.wildcards.dataset  # noqa: F821
# only the columns sampling uses (the history is the largest table of the step)
history = read_parquet(snakemake.input.history, columns=["user_id", "item_id"])  # noqa: F821
heldout = read_parquet(snakemake.input.heldout)  # noqa: F821
rows = sample_rows(heldout, p.n_rows, make_seed(p.seed, "rows", dataset))
# the sorted distinct item ids of both tables; each column is deduplicated first (hashing), as
# union1d over the 5.5M history rows of Amazon Beauty sorts every row's string (~8 s)
catalog = np.union1d(
    np.asarray(history["item_id"].unique()).astype(str),
    np.asarray(heldout["item_id"].unique()).astype(str),
)
cands = build_candidates(
    rows,
    history,
    catalog,
    p.n_negatives,
    make_seed(p.seed, "negatives", dataset),
    positive_position=p.positive_position,
    insufficient=p.insufficient,
)
short_of = (f" (evaluation.n_rows asks for {p.n_rows}: only {len(heldout)} users have a held-out "
            "item)" if p.n_rows is not None and p.n_rows > len(heldout) else "")  # fmt: skip
log.info("%d rows%s x %d negatives over a catalog of %d items", len(rows), short_of,
         p.n_negatives, len(catalog))  # fmt: skip
if p.insufficient == "truncate":
    short = int((cands.groupby("row", sort=False).size() <= p.n_negatives).sum())
    log.info("%d row(s) kept with fewer negatives (insufficient_negatives: truncate)", short)
write_table(cands, snakemake.output[0])  # noqa: F821
