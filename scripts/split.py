"""Step: leave-last-out split of the interim interactions into history and held-out items."""

from tieaudit.common.parquet import parquet_file, read_parquet
from tieaudit.common.io import write_table
from tieaudit.pipeline.split import leave_last_out
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
path = snakemake.input.interactions  # noqa: F821
if snakemake.params.attributed_only:  # noqa: F821
    attributed = read_parquet(snakemake.input.attributes, columns=["item_id"])  # noqa: F821
    items = attributed["item_id"].dropna().unique().tolist()
    n_all = parquet_file(path).metadata.num_rows
    # Filtered while reading (file order kept), so the unfiltered table is never a pandas frame
    # beside its filtered copy: on ml-25m most of the 25M ratings are of genome movies.
    inter = read_parquet(path, filters=[("item_id", "in", items)])
    log.info("kept %d of %d interactions with attributed items", len(inter), n_all)
else:
    inter = read_parquet(path)
split = leave_last_out(inter)
del inter
cold = int(split.cold_start().sum())
log.info("history %d interactions, held out %d users, %d of them (%.1f%%) with no history "
         "(cold start)", len(split.history), len(split.heldout), cold,
         100 * cold / max(len(split.heldout), 1))  # fmt: skip
write_table(split.history, snakemake.output.history)  # noqa: F821
write_table(split.heldout, snakemake.output.heldout)  # noqa: F821
