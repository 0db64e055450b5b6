"""Step: per-dataset full-catalog figure (metric by tie rule, every catalogue item a candidate)."""

import pandas as pd

from tieaudit.outputs.figures import rules_figure, save
from tieaudit.outputs.report import collect
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
dataset = snakemake.wildcards.dataset  # noqa: F821
metrics = collect(snakemake.input.metrics, p.results)  # noqa: F821
seeds = pd.read_csv(snakemake.input.seed_means)  # noqa: F821 - per-seed hash means
title = f"{dataset} (full catalogue)"
save(rules_figure(metrics, p.scorers, p.rules, p.headline, title=title, seed_means=seeds), snakemake.output.rules)  # noqa: F821
log.info("full-catalog figure for %s", dataset)
