"""Step: the parts of a scores table (evaluation.row_chunks) concatenated in part order."""

import pandas as pd

from tieaudit.common.parquet import read_parquet
from tieaudit.common.io import write_table
from tieaudit.pipeline.partition import is_empty_part
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
# the empty parts of a dataset with fewer rows than parts add nothing (but their columns' types)
files = snakemake.input.parts  # noqa: F821
parts = [read_parquet(f) for f in files if not is_empty_part(f)] or [read_parquet(files[0])]
table = pd.concat(parts, ignore_index=True)
log.info("%d lines from %d parts", len(table), len(parts))
write_table(table, snakemake.output[0])  # noqa: F821
