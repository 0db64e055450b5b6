"""Step: results/paper/ keeps this run's outputs only; MANIFEST.txt lists them (not itself)."""

from pathlib import Path

from tieaudit.io import atomic_write_text
from tieaudit.report import prune_folder
from tieaudit.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
manifest = Path(snakemake.output[0])  # noqa: F821
folder = manifest.parent
kept, removed = prune_folder(folder, [*snakemake.input.files, manifest])  # noqa: F821
for path in removed:
    log.info("removed %s: not an output of this run", path)
atomic_write_text(manifest, "".join(f"{p.relative_to(folder).as_posix()}\n" for p in kept))
log.info("%d files in %s, %d removed", len(kept), folder, len(removed))
