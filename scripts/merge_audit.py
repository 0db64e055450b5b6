"""Step: the audit's files from the per-row numbers of every part of the rows
(evaluation.row_chunks), exactly as one audit of all of them writes them."""

from pathlib import Path

from tieaudit.analyses.audit import AuditRows
from tieaudit.common.io import atomic_write_many
from tieaudit.pipeline.partition import is_empty_part
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
w = snakemake.wildcards  # noqa: F821
out = snakemake.output  # noqa: F821
rows = AuditRows.concat([AuditRows.read(f) for f in snakemake.input.parts  # noqa: F821
                        if not is_empty_part(f)])  # fmt: skip
res = rows.sums().result(headline=p.headline, reported_rule=p.reported_rule,
                         permutation_seed=p.seed, title=f"{w.dataset} / {w.scorer}",
                         requested_rows=p.requested_rows)  # fmt: skip
atomic_write_many({getattr(out, Path(n).stem): t for n, t in res.files().items()})
log.info("\n%s", res.invariance.drop_duplicates("rule").to_string())
log.info("%.1f%% of the rows are cold starts (their user has no history)",
         100 * res.tie_diagnostics.share_rows_cold_start)  # fmt: skip
