"""Step: write a format-faithful synthetic dataset (demo and tests) into data/demo/{dataset}/."""

from tieaudit.sources.synthetic import generate
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
spec = snakemake.params.spec  # noqa: F821
paths = generate(
    spec["generator"],
    snakemake.output[0],  # noqa: F821
    scale=spec["scale"],
    seed=spec["seed"],
    **dict(spec.get("options") or {}),
)
for name, path in sorted(paths.items()):
    log.info("wrote %s: %s", name, path)
