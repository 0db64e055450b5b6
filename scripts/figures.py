"""Step: per-dataset figures (metric by tie rule, one and two columns wide; tie sizes at the
relevant item)."""

import pandas as pd

from tieaudit.outputs.figures import COLUMN, TEXT, rules_figure, save, tie_size_figure
from tieaudit.outputs.report import collect
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
dataset = snakemake.wildcards.dataset  # noqa: F821
metrics = collect(snakemake.input.metrics, p.results)  # noqa: F821
seeds = pd.read_csv(snakemake.input.seed_means)  # noqa: F821 - per-seed hash means
diagnostics = collect(snakemake.input.diagnostics, p.results)  # noqa: F821
for width, out in ((COLUMN, snakemake.output.rules), (TEXT, snakemake.output.rules_wide)):  # noqa: F821
    save(rules_figure(metrics, p.scorers, p.rules, p.headline, title=dataset, width=width,
                      seed_means=seeds), out)  # fmt: skip
save(tie_size_figure(diagnostics, p.scorers, title=dataset), snakemake.output.tie_sizes)  # noqa: F821
log.info("figures for %s", dataset)
