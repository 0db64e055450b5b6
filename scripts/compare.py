"""Step: the scorers of one dataset and setting compared (ranking flips), and each scorer's
per-seed hash means (for the figures' strip of seeds)."""

from pathlib import Path

import numpy as np
import pandas as pd

from tieaudit import evaluate, read_candidates
from tieaudit.analyses.compare import FLIP_COLUMNS, ModelRows, orderings, ranking_flips
from tieaudit.common.io import write_table
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
out = snakemake.output  # noqa: F821
models, seeds = [], []
for path, (_, setting, scorer) in zip(snakemake.input.scores, p.results, strict=True):  # noqa: F821
    # the evaluate step's inputs: hash_mean ranks from the hash_seeds jobs (sampled), or the
    # seeds a full-catalog summary table records
    folder = Path(path).parent / "hash_seeds"
    chunks = [folder / f"chunk{i}.npy" for i in range(p.n_chunks)] if setting == "sampled" else []
    ranks = np.concatenate([np.load(f) for f in chunks]) if chunks else None
    ev = evaluate(read_candidates(path), p.metrics, p.rules, n_seeds=p.n_seeds, seed_ranks=ranks)
    models.append(ModelRows.from_evaluation(scorer, ev, p.headline))
    if "hash_mean" in p.rules:
        for h in p.headline:
            sm = ev["hash_mean"].seed_means[next(m for m in ev.measures if str(m) == h)]
            seeds.append(pd.DataFrame({"scorer": scorer, "metric": h, "seed": ev["hash_mean"].seeds,
                                       "value": sm}))  # fmt: skip
    log.info("evaluated %s", path)
if len(models) > 1:
    flips = ranking_flips(models, p.headline, [r for r in p.rules if r != "expected"])
else:  # one scorer: no pair to compare (ranking_flips.md says so)
    flips = pd.DataFrame(columns=list(FLIP_COLUMNS))
rules = list(dict.fromkeys([*p.rules, "expected"]))
write_table(flips, out.flips)
write_table(orderings(models, p.headline, rules), out.orderings)
columns = ["scorer", "metric", "seed", "value"]
write_table(pd.concat(seeds, ignore_index=True) if seeds else pd.DataFrame(columns=columns),
            out.seed_means)  # fmt: skip
log.info("%d pairs flip", int((flips["flip"] == "yes").sum()))
