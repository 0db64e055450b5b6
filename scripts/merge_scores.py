"""Step: the parts of a scores table (evaluation.row_chunks) concatenated in part order."""

import pandas as pd

from tieaudit._parquet import read_parquet
from tieaudit.io import write_table
from tieaudit.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
parts = [read_parquet(f) for f in snakemake.input.parts]  # noqa: F821
table = pd.concat(parts, ignore_index=True)
log.info("%d lines from %d parts", len(table), len(parts))
write_table(table, snakemake.output[0])  # noqa: F821
