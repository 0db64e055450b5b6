"""Step: row-order invariance audit, tie diagnostics and the reporting checklist."""

import pyarrow.compute as pc

from tieaudit import read_candidates
from tieaudit._parquet import read_table
from tieaudit.audit import audit
from tieaudit.io import atomic_write_many, frame_to_text
from tieaudit.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
w = snakemake.wildcards  # noqa: F821
table = read_candidates(snakemake.input.scores)  # noqa: F821
# the users with history: a row of any other user is a cold start (diagnostics)
history = read_table(snakemake.input.history, columns=["user_id"])  # noqa: F821
known = pc.unique(history.column("user_id")).to_numpy(zero_copy_only=False)
del history
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
    users_with_history=known,
    requested_rows=p.requested_rows,
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
log.info("%.1f%% of the rows are cold starts (their user has no history)",
         100 * res.tie_diagnostics.share_rows_cold_start)  # fmt: skip
