"""Step: row-order invariance audit, tie diagnostics and the reporting checklist."""

from tieaudit import read_candidates
from tieaudit.audit import audit
from tieaudit.io import atomic_write_text, write_table
from tieaudit.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
w = snakemake.wildcards  # noqa: F821
table = read_candidates(snakemake.input.scores)  # noqa: F821
res = audit(
    table,
    p.metrics,
    p.rules,
    n_seeds=p.n_seeds,
    n_permutations=p.permutations,
    seed=p.seed,
    headline=p.headline,
    reported_rule=p.reported_rule,
    title=f"{w.dataset} / {w.scorer}",
)
write_table(res.invariance, snakemake.output.invariance)  # noqa: F821
write_table(res.diagnostics, snakemake.output.diagnostics)  # noqa: F821
atomic_write_text(snakemake.output.checklist, res.checklist)  # noqa: F821
log.info("\n%s", res.invariance.drop_duplicates("rule").to_string())
