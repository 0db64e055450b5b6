"""Step: leave-last-out split of the interim interactions into history and held-out items."""

import pandas as pd

from tieaudit.io import write_table
from tieaudit.split import leave_last_out
from tieaudit.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
inter = pd.read_parquet(snakemake.input.interactions)  # noqa: F821
if snakemake.params.attributed_only:  # noqa: F821
    attributed = pd.read_parquet(snakemake.input.attributes, columns=["item_id"])  # noqa: F821
    keep = inter["item_id"].isin(attributed["item_id"].unique())
    log.info("kept %d of %d interactions with attributed items", keep.sum(), len(inter))
    inter = inter[keep].reset_index(drop=True)
split = leave_last_out(inter)
log.info("history %d interactions, held out %d users", len(split.history), len(split.heldout))
write_table(split.history, snakemake.output.history)  # noqa: F821
write_table(split.heldout, snakemake.output.heldout)  # noqa: F821
