"""Step: per-dataset full-catalog figure (metric by tie rule, every catalogue item a candidate)."""

from tieaudit.figures import rules_figure, save
from tieaudit.report import collect
from tieaudit.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
dataset = snakemake.wildcards.dataset  # noqa: F821
metrics = collect(snakemake.input.metrics, p.results)  # noqa: F821
title = f"{dataset} (full catalogue)"
save(rules_figure(metrics, p.scorers, p.rules, p.headline, title=title), snakemake.output.rules)  # noqa: F821
log.info("full-catalog figure for %s", dataset)
