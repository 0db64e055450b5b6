"""Step: results/paper/index.html, the self-contained results page (nothing recomputed)."""

import hashlib
import platform
from importlib.metadata import version
from pathlib import Path

from tieaudit import __version__
from tieaudit.common.io import atomic_write_text
from tieaudit.outputs.page import DataFile, PageInputs, lock_entries, results_page
from tieaudit.pipeline.workflow import start

log = start(snakemake)  # noqa: F821 - injected by Snakemake
p = snakemake.params  # noqa: F821
inp = snakemake.input  # noqa: F821
out = Path(snakemake.output[0])  # noqa: F821


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# generated data: size and sha256 computed from the raw files (data/raw/{dataset}/{key}/{name});
# downloads: as the lock file records them
raw = {(Path(f).parts[-3], Path(f).parts[-2]): Path(f) for f in inp.raw}
lock = lock_entries(inp.lock[0]) if inp.lock else {}
files = []
for dataset in p.datasets:
    for key, url in p.urls[dataset].items():
        if dataset in p.generated:
            path = raw[(dataset, key)]
            files.append(DataFile(dataset, key, url, path.stat().st_size, sha256(path),
                                  f"generated: computed from {path.as_posix()}"))  # fmt: skip
        elif url in lock:
            size, digest = lock[url]
            files.append(DataFile(dataset, key, url, size, digest, "lock file"))
        else:
            files.append(DataFile(dataset, key, url, None, None, "not in the lock file"))
versions = {"tieaudit": __version__, "snakemake": version("snakemake"),
            "Python": platform.python_version()}  # fmt: skip
page = results_page(PageInputs(
    paper_dir=out.parent, datasets=p.datasets, settings=p.settings, config=p.config,
    versions=versions, data_files=files, generated=p.generated, n_seeds=p.n_seeds,
    files=list(inp.files),
))  # fmt: skip
atomic_write_text(out, page)
log.info("wrote %s (%d bytes)", out, len(page.encode()))
