"""Step: metrics.csv from the per-row values of every part of the rows (evaluation.row_chunks),
exactly as one evaluation of all of them."""

from tieaudit.common.parquet import read_parquet
from tieaudit.common.io import write_table
from tieaudit.pipeline.partition import is_empty_part
from tieaudit.evaluation.parts import RowValues, merged_sums
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
parts = [RowValues.from_frame(read_parquet(f), p.rules, p.metrics)
         for f in snakemake.input.parts if not is_empty_part(f)]  # noqa: F821  # fmt: skip
summary = merged_sums(parts).summary()
log.info("\n%s", summary.to_string())
write_table(summary, snakemake.output[0])  # noqa: F821
