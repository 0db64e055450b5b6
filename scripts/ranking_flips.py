"""Step: results/paper/ranking_flips.{csv,md}: the comparisons of every dataset and setting."""

import pandas as pd

from tieaudit.analyses.compare import flips_markdown
from tieaudit.common.io import atomic_write_text, write_table
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
inp = snakemake.input  # noqa: F821
frames, parts = [], ["# Does the tie rule change which scorer wins?", ""]
for flips_csv, order_csv, (dataset, setting) in zip(inp.flips, inp.orderings, p.pairs, strict=True):
    flips, order = pd.read_csv(flips_csv), pd.read_csv(order_csv)
    parts.append(flips_markdown(flips, order, f"{dataset}, {setting} candidates"))
    flips.insert(0, "candidates", setting)
    flips.insert(0, "dataset", dataset)
    frames.append(flips)
write_table(pd.concat(frames, ignore_index=True), snakemake.output.csv)  # noqa: F821
atomic_write_text(snakemake.output.md, "\n".join(parts))  # noqa: F821
log.info("ranking flips of %d dataset(s) and setting(s)", len(frames))
