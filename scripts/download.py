"""Step: download one raw file, verified against its checksum or the lock file."""

from tieaudit.data.download import download
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
path = download(
    p.url,
    snakemake.output[0],  # noqa: F821
    md5=p.md5 or None,
    sha256=p.sha256 or None,
    lockfile=p.lockfile or None,
    format=p.format or None,
    # the copy is kept while the step runs (flagged `update`): a local file is copied again (the
    # step runs because it changed), a remote one kept if it still verifies against its pin
    force=p.url.lower().startswith("file:"),
    progress=False,
)
log.info("downloaded %s to %s (%d bytes)", p.url, path, path.stat().st_size)
