"""Step: parse a dataset's raw files into interim interactions and item attributes (Parquet)."""

from tieaudit.sources.ingest import ingest
from tieaudit.pipeline.workflow import inputs_except, start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
spec = snakemake.params.spec  # noqa: F821
report = ingest(
    spec["source"],
    inputs_except(snakemake, "lib"),  # noqa: F821
    snakemake.output.interactions,  # noqa: F821
    snakemake.output.attributes,  # noqa: F821
    **spec["options"],
)
log.info("%s", report)
