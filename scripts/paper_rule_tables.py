"""Step: the paper tables (scorers x tie rules, a block per headline measure) of every dataset
and setting, as CSV, Markdown and LaTeX."""

from tieaudit.common.io import atomic_write_text, write_table
from tieaudit.outputs.papertables import paper_latex, paper_markdown, paper_table
from tieaudit.outputs.report import collect
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
metrics = collect(snakemake.input.metrics, p.results)  # noqa: F821
for dataset, setting in p.pairs:
    stem = f"results/paper/paper_{dataset}_{setting}"
    table = paper_table(metrics, dataset, setting, p.scorers, p.rules, p.headline)
    title = f"{dataset}, {setting} candidates: headline measures by scorer and tie rule"
    write_table(table, f"{stem}.csv")
    atomic_write_text(f"{stem}.md", paper_markdown(table, title, p.n_seeds))
    atomic_write_text(f"{stem}.tex", paper_latex(table, title, f"tab:paper_{dataset}_{setting}",
                                                 p.n_seeds))  # fmt: skip
    log.info("wrote %s.{csv,md,tex}", stem)
