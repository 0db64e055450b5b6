"""Step: ranks under hash:s for one chunk of the hash_mean seeds (merged exactly by evaluate)."""

import numpy as np

from tieaudit import hash_seed_ranks, read_candidates
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
chunk = int(snakemake.wildcards.chunk)  # noqa: F821
seeds = np.array_split(np.arange(p.n_seeds), p.n_chunks)[chunk]
table = read_candidates(snakemake.input.scores)  # noqa: F821
ranks = hash_seed_ranks(table, seeds.tolist(), p.metrics)
log.info("seeds %d..%d: ranks of %d rows", seeds[0], seeds[-1], table.n_rows)
np.save(snakemake.output[0], ranks.astype(np.int32))  # noqa: F821
