"""Step: what casting one scorer's sampled scores to each precision does (its casting.csv),
streamed through the rows; its parts in order with evaluation.row_chunks > 1."""

import pyarrow.dataset as ds

from tieaudit.common.io import write_table
from tieaudit.analyses.casting import cast_summary
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
files = list(snakemake.input.scores)  # noqa: F821
data = files[0] if len(files) == 1 else ds.dataset(files, format="parquet")
table = cast_summary(data, p.precisions, p.metrics)
log.info("\n%s", table.to_string())
write_table(table, snakemake.output[0])  # noqa: F821
