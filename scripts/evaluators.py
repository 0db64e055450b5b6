"""Step: the evaluator table, every built-in adapter of `tieaudit probe` probed."""

from tieaudit import read_candidates
from tieaudit.common.io import atomic_write_many, frame_to_markdown, frame_to_text
from tieaudit.probe import evaluator_table
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
scores = read_candidates(snakemake.input.scores)  # noqa: F821
table = evaluator_table(scores, p.metric, p.names, rows=p.rows, timeout=p.timeout,
                        per_adapter=p.per_adapter)
out = snakemake.output  # noqa: F821
atomic_write_many({out.csv: frame_to_text(table), out.md: frame_to_markdown(table)})
log.info("\n%s", table[["adapter", "version", "rule", "invariant", "inflation"]].to_string())
