"""Step: results/paper/ keeps this run's outputs; MANIFEST.txt lists them (not itself).

What the previous run listed in MANIFEST.txt and this run did not write is removed; a file no run
wrote (a user's notes, a hand-edited copy) is left in place and named in the log.
"""

from pathlib import Path

from tieaudit.common.io import atomic_write_text
from tieaudit.outputs.report import prune_folder, read_manifest
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
manifest = Path(snakemake.output[0])  # noqa: F821
folder = manifest.parent
kept, removed, foreign = prune_folder(folder, [*snakemake.input.files, manifest],  # noqa: F821
                                      read_manifest(manifest))  # fmt: skip
for path in removed:
    log.info("removed %s: an earlier run's output, not one of this run", path)
for path in foreign:
    log.info("left %s in place: not written by the pipeline (not in %s)", path, manifest.name)
atomic_write_text(manifest, "".join(f"{p.relative_to(folder).as_posix()}\n" for p in kept
                                    if p != manifest))  # fmt: skip
log.info("%d files in %s, %d removed, %d not the pipeline's left in place", len(kept), folder,
         len(removed), len(foreign))  # fmt: skip
