# Helper functions shared by every stage. Paths are relative to the working directory
# (snakemake --directory DIR runs the whole workflow inside DIR).
import re
from pathlib import Path
from urllib.parse import urlparse

from tieaudit.measures import parse_measure
from tieaudit.rules import parse_rule
from tieaudit.scorers import ScorerInterfaceError, ScorerLoadError, check_scorer_spec


def in_workdir(path):
    """`path` relative to the working directory when it lies inside it (else absolute), so rule
    inputs and params do not change when the project folder is moved or copied."""
    path, here = Path(path).resolve(), Path.cwd().resolve()
    return path.relative_to(here) if path.is_relative_to(here) else path


LIB = in_workdir(Path(workflow.basedir) / "src" / "tieaudit")
LOGS = "results/logs"
BENCH = "results/benchmarks"
# A dataset or scorer name is one folder name under data/ and results/.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def parsed_list(errors, key, texts, parse, what):
    """The distinct parsed entries of a config list; an error line for each that does not parse."""
    out = []
    for i, text in enumerate(texts, start=1):
        try:
            item = parse(text)
        except ValueError as exc:
            errors.append(f"config: {key}, item {i}: {exc}")
            continue
        if item not in out:
            out.append(item)
    if not texts:
        errors.append(f"config: {key}: no {what} given")
    return out


def check_config(config):
    """The checks the schema cannot express, before any job runs: every error (each naming its
    key) is raised at once. Measures and tie rules are parsed by the library and rewritten in
    its spelling (ndcg@10 -> nDCG@10), so every step sees the same names."""
    errors = []
    ev = config["evaluation"]
    for key, kind in (("datasets", "dataset"), ("scorers", "scorer")):
        for name in config[key]:
            if not NAME.fullmatch(str(name)):
                errors.append(
                    f"config: {key}: {name!r} cannot be a {kind} name (it is a folder name): "
                    "letters, digits, '_', '.' and '-', starting with a letter or digit"
                )
    for name in config["run"]:
        if name not in config["datasets"]:
            errors.append(
                f"config: run names dataset {name!r}, which is not under datasets"
            )
    if "full" in ev["candidates"] and "full" in config["scorers"]:
        errors.append(
            "config: a scorer named 'full' is ambiguous with evaluation.candidates: [.., full]"
        )
    metrics = parsed_list(
        errors, "evaluation.metrics", ev["metrics"], parse_measure, "measures"
    )
    headline = parsed_list(
        errors, "evaluation.headline", ev["headline"], parse_measure, "measures"
    )
    for text in ev["headline"]:
        try:
            measure = parse_measure(text)
        except ValueError:  # reported above
            continue
        if metrics and measure not in metrics:
            errors.append(
                f"config: evaluation.headline: {text!r} is not one of evaluation.metrics "
                f"({', '.join(map(str, metrics))})"
            )
    rules = parsed_list(
        errors, "evaluation.rules", ev["rules"], parse_rule, "tie rules"
    )
    try:
        reported = parse_rule(ev["reported_rule"])
    except ValueError as exc:
        errors.append(f"config: evaluation.reported_rule: {exc}")
    else:
        if rules and reported not in rules:
            errors.append(
                f"config: evaluation.reported_rule: {ev['reported_rule']!r} is not one of "
                f"evaluation.rules ({', '.join(map(str, rules))})"
            )
    for name, entry in config["scorers"].items():
        try:  # imports a user scorer's module: a config file is code
            check_scorer_spec(entry["scorer"], entry.get("options"))
        except (ScorerLoadError, ScorerInterfaceError) as exc:
            errors.append(f"config: scorers.{name}: {exc}")
    if errors:
        raise ValueError("\n".join(errors))
    ev["metrics"] = [str(m) for m in metrics]
    ev["headline"] = [str(m) for m in headline]
    ev["rules"] = [str(r) for r in rules]
    ev["reported_rule"] = str(reported)


check_config(config)
DATASETS = list(config["run"]) or list(config["datasets"])
SCORERS = list(config["scorers"])
# Candidate settings: "sampled" (always) and optionally "full" (full catalogue), whose results
# live under results/{dataset}/full/{scorer}/.
MODES = list(config["evaluation"]["candidates"])
FULL = "full" in MODES


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


def file_name(key, entry):
    """The name a download is stored under: the last part of its URL path (its extension tells
    the parsers the format), or the logical key when the URL path ends in '/'."""
    return Path(urlparse(entry["url"]).path or entry["url"][5:]).name or key


def raw_files(wildcards):
    """{logical name: data/raw/{dataset}/{key}/{file name}} for every file of a dataset (input
    of prepare). A folder per key: two URLs ending in the same name never share a path.
    """
    files = dataset_cfg(wildcards.dataset)["files"]
    return {
        k: f"data/raw/{wildcards.dataset}/{k}/{file_name(k, v)}"
        for k, v in files.items()
    }


def file_entry(wildcards):
    files = dataset_cfg(wildcards.dataset)["files"]
    entry = files.get(wildcards.key)
    if entry is None or file_name(wildcards.key, entry) != wildcards.filename:
        raise ValueError(
            f"no file {wildcards.key}/{wildcards.filename} for dataset {wildcards.dataset}"
        )
    return entry


def download_url(wildcards):
    """The URL as written: `file:relative/path` stays relative (the download resolves it
    against the working directory), so the rule's params do not depend on where it lives.
    """
    return file_entry(wildcards)["url"]


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


# The list of files in results/paper/, written last (rule paper_manifest).
PAPER_MANIFEST = "results/paper/MANIFEST.txt"


def paper_outputs():
    """This run's tables and figures in results/paper/ (paper_manifest removes anything else)."""
    tables = [f"table_{d}" for d in DATASETS] + ["ties_invariance"]
    out = expand("results/paper/{table}.{ext}", table=tables, ext=("csv", "md", "tex"))
    out += ["results/paper/compare.md", "results/paper/checklist.md"]
    out += ["results/paper/evaluators.csv", "results/paper/evaluators.md"]
    kinds = ("rules", "tie_sizes") + (("full_rules",) if FULL else ())
    out += expand(
        "results/paper/figures/{dataset}_{kind}.{ext}",
        dataset=DATASETS,
        kind=kinds,
        ext=("png", "pdf"),
    )
    return out


def all_outputs():
    return paper_outputs() + [PAPER_MANIFEST] + audit_files("checklist.md")


def reference_file():
    """The paper reference YAML: a relative path is taken from the workflow's folder."""
    path = Path(config["paper"]["reference"])
    return str(
        in_workdir(path if path.is_absolute() else Path(workflow.basedir) / path)
    )


def probe_candidates():
    """The candidates the inflation is measured on: the first dataset's attribute_overlap
    scores (the first scorer's when no scorer has that name)."""
    scorer = "attribute_overlap" if "attribute_overlap" in SCORERS else SCORERS[0]
    return f"results/{DATASETS[0]}/{scorer}/scores.parquet"
