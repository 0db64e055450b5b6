"""Step: fit a scorer on the history and score every candidate."""

from tieaudit.common.parquet import read_parquet
from tieaudit.common.io import write_table
from tieaudit.pipeline.partition import empty_part_note, row_part
from tieaudit.scorers import calibrate_scorer, get_scorer, score_candidates
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
spec = snakemake.params.spec  # noqa: F821
scorer = get_scorer(spec["scorer"], **spec["options"])
# The history and attribute frames live only during fit (a fitted scorer keeps what it needs), so
# they are not held in memory while the candidates are scored (~0.9 GB on Amazon Beauty).
scorer.fit(
    read_parquet(snakemake.input.history),  # noqa: F821
    read_parquet(snakemake.input.attributes),  # noqa: F821
)
candidates = read_parquet(snakemake.input.candidates)  # noqa: F821
# a scorer with calibrate (residualized_attribute) is calibrated on these candidates first, all
# of them: a part of the rows (evaluation.row_chunks) scores with the same calibration
calibrate_scorer(scorer, candidates)
part = snakemake.params.part  # noqa: F821
if part is not None:
    candidates = row_part(candidates, *part)
    log.info("rows part %d of %d", *part)
    if candidates.empty:
        log.warning(empty_part_note(*part))
scored = score_candidates(candidates, scorer, calibrate=False)
log.info("scored %d candidates with %s", len(scored), spec["scorer"])
write_table(scored[["row", "user_id", "item_id", "label", "score"]], snakemake.output[0])  # noqa: F821
