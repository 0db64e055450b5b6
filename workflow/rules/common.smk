# Helper functions shared by every stage. Paths are relative to the working directory
# (snakemake --directory DIR runs the whole workflow inside DIR).
import re
from pathlib import Path
from urllib.parse import urlparse

LIB = Path(workflow.basedir) / "src" / "tieaudit"
LOGS = "results/logs"
BENCH = "results/benchmarks"

DATASETS = list(config["run"]) or list(config["datasets"])
SCORERS = list(config["scorers"])
for _name in DATASETS:
    if _name not in config["datasets"]:
        raise ValueError(
            f"config: run names dataset {_name!r}, which is not under datasets"
        )
# Candidate settings: "sampled" (always) and optionally "full" (full catalogue), whose results
# live under results/{dataset}/full/{scorer}/.
MODES = list(config["evaluation"]["candidates"])
FULL = "full" in MODES
if FULL and "full" in SCORERS:
    raise ValueError(
        "config: a scorer named 'full' is ambiguous with evaluation.candidates: [.., full]"
    )


wildcard_constraints:
    dataset="|".join(re.escape(d) for d in DATASETS) or "NONE",
    scorer="|".join(re.escape(s) for s in SCORERS) or "NONE",
    chunk=r"\d+",


def lib(*modules):
    """Library files a step imports (the modules and all they import, derived from the source):
    inputs of its rule, so editing them reruns the step."""
    from tieaudit.workflow import library_files

    return library_files(LIB, ("__init__.py",) + modules)


def dataset_cfg(dataset):
    return config["datasets"][dataset]


def file_name(entry):
    """The file name a download is stored under: the last part of its URL path."""
    return Path(urlparse(entry["url"]).path or entry["url"][5:]).name


def raw_files(wildcards):
    """{logical name: data/raw path} for every file of a dataset (input of prepare)."""
    files = dataset_cfg(wildcards.dataset)["files"]
    return {k: f"data/raw/{wildcards.dataset}/{file_name(v)}" for k, v in files.items()}


def file_entry(wildcards):
    for entry in dataset_cfg(wildcards.dataset)["files"].values():
        if file_name(entry) == wildcards.filename:
            return entry
    raise ValueError(
        f"no file named {wildcards.filename} for dataset {wildcards.dataset}"
    )


def download_url(wildcards):
    """The URL; `file:relative/path` becomes an absolute file:// URL."""
    url = file_entry(wildcards)["url"]
    if url.startswith("file:") and not url.startswith("file://"):
        url = Path(url[5:]).resolve().as_uri()
    return url


def download_md5(wildcards):
    return file_entry(wildcards).get("md5") or ""


def download_sha256(wildcards):
    return file_entry(wildcards).get("sha256") or ""


def download_lockfile(wildcards):
    """The lock file recording size and sha256 of real downloads (none for generated files)."""
    if "synthetic" in dataset_cfg(wildcards.dataset):
        return ""
    return "data/downloads.lock.yaml"


def synthetic_input(wildcards):
    """The generated demo folder when the dataset is synthetic, so it is built first."""
    if "synthetic" in dataset_cfg(wildcards.dataset):
        return [f"data/demo/{wildcards.dataset}"]
    return []


def synthetic_params(wildcards):
    return dataset_cfg(wildcards.dataset)["synthetic"]


def prepare_params(wildcards):
    cfg = dataset_cfg(wildcards.dataset)
    return {"source": cfg["source"], "options": dict(cfg.get("options") or {})}


def attributed_only(wildcards):
    return bool(dataset_cfg(wildcards.dataset).get("attributed_items_only", False))


def scorer_spec(wildcards):
    spec = config["scorers"][wildcards.scorer]
    return {"scorer": spec["scorer"], "options": dict(spec.get("options") or {})}


def seed_chunks():
    return list(range(config["evaluation"]["seed_chunks"]))


def mode_prefixes():
    """The results sub-folder of each candidate setting: "" (sampled), "full/" (full)."""
    return [""] + (["full/"] if FULL else [])


def metric_tables(wildcards=None):
    """Every metrics.csv: the sampled ones, then the full-catalog ones (when enabled)."""
    return expand(
        "results/{dataset}/{mode}{scorer}/metrics.csv",
        mode=mode_prefixes(),
        dataset=DATASETS,
        scorer=SCORERS,
    )


def audit_files(name):
    """Every audit/{name}: the sampled ones, then the full-catalog ones (when enabled)."""
    return expand(
        "results/{dataset}/{mode}{scorer}/audit/{name}",
        mode=mode_prefixes(),
        dataset=DATASETS,
        scorer=SCORERS,
        name=name,
    )


def recorded_hash_seeds():
    """Hash seeds a full-catalog summary records for the configured rules (the registry's)."""
    from tieaudit.rules import recorded_seeds

    return recorded_seeds(
        config["evaluation"]["rules"], config["evaluation"]["n_seeds"]
    )


def full_rows(wildcards):
    """Full-catalog rows of a dataset: its own `full_rows` if set, else evaluation.full_rows."""
    own = dataset_cfg(wildcards.dataset).get("full_rows")
    return own if own is not None else config["evaluation"]["full_rows"]


def paper_outputs():
    tables = [f"table_{d}" for d in DATASETS] + ["ties_invariance"]
    out = expand("results/paper/{table}.{ext}", table=tables, ext=("csv", "md", "tex"))
    out += ["results/paper/compare.md", "results/paper/checklist.md"]
    kinds = ("rules", "tie_sizes") + (("full_rules",) if FULL else ())
    out += expand(
        "results/paper/figures/{dataset}_{kind}.{ext}",
        dataset=DATASETS,
        kind=kinds,
        ext=("png", "pdf"),
    )
    return out


def all_outputs():
    return paper_outputs() + audit_files("checklist.md")


def reference_file():
    """The paper reference YAML: a relative path is taken from the workflow's folder."""
    path = Path(config["paper"]["reference"])
    return str(path if path.is_absolute() else Path(workflow.basedir) / path)
