"""Step: the casting table, every dataset's and scorer's casting.csv in one (csv and md)."""

import pandas as pd

from tieaudit.common.io import atomic_write_many, frame_to_markdown, frame_to_text
from tieaudit.analyses.casting import casting_table
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
inp = snakemake.input  # noqa: F821
table = casting_table((d, s, pd.read_csv(path))
                      for (d, s), path in zip(p.results, inp.parts, strict=True))  # fmt: skip
out = snakemake.output  # noqa: F821
atomic_write_many({out.csv: frame_to_text(table), out.md: frame_to_markdown(table)})
log.info("\n%s", table.to_string())
