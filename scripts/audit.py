"""Step: row-order invariance audit, tie diagnostics and the reporting checklist."""

from tieaudit import read_candidates
from tieaudit.audit import audit
from tieaudit.io import atomic_write_many, frame_to_text
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
out = snakemake.output  # noqa: F821
atomic_write_many(
    {
        out.invariance: frame_to_text(res.invariance),
        out.diagnostics: frame_to_text(res.diagnostics),
        out.checklist: res.checklist,
    }
)
log.info("\n%s", res.invariance.drop_duplicates("rule").to_string())
