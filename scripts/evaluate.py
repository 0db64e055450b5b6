"""Step: evaluate a scored candidates table under every tie rule (tidy metrics.csv)."""

import numpy as np

from tieaudit import evaluate, read_candidates
from tieaudit.io import write_table
from tieaudit.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
table = read_candidates(snakemake.input.scores)  # noqa: F821
# hash_mean ranks merged from the hash_seeds jobs; a full-catalog summary table records them
chunks = snakemake.input.get("chunks", [])  # noqa: F821
ranks = np.concatenate([np.load(f) for f in chunks]) if chunks else None
ev = evaluate(table, p.metrics, p.rules, n_seeds=p.n_seeds, seed_ranks=ranks)
summary = ev.summary()
log.info("\n%s", summary.to_string())
write_table(summary, snakemake.output.metrics)  # noqa: F821
