# Helper functions shared by every stage. Paths are relative to the working directory
# (snakemake --directory DIR runs the whole workflow inside DIR).
import importlib.util
import re
from argparse import Namespace
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

from tieaudit.pipeline.dependencies import library_files
from tieaudit.pipeline.workflow import forget_failures, say_failures
from tieaudit.ties.measures import parse_measure
from tieaudit.tables.precision import parse_precision
from tieaudit.probe.adapters import adapter_names
from tieaudit.ties.rules import parse_rule
from tieaudit.scorers import ScorerInterfaceError, ScorerLoadError, check_scorer_spec
from tieaudit.sources import get_source, source_module


def in_workdir(path):
    """`path` relative to the working directory when it lies inside it (else absolute), so rule
    inputs and params do not change when the project folder is moved or copied."""
    path, here = Path(path).resolve(), Path.cwd().resolve()
    return path.relative_to(here) if path.is_relative_to(here) else path


# This checkout (two folders above this file: the same when the pipeline is used as a Snakemake
# module from another folder, where workflow.basedir is the user's), its library and the step
# scripts (the files the jobs run).
_HERE = workflow.current_basedir.get_path_or_uri(secret_free=True)
ROOT = Path(_HERE).resolve().parents[1]
LIB = ROOT / "src" / "tieaudit"
SCRIPTS = ROOT / "scripts"
LOGS = "results/logs"
BENCH = "results/benchmarks"
# A dataset or scorer name is one folder name under data/ and results/.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# Folders under results/ that are not datasets'.
RESULTS_FOLDERS = {
    "paper": "paper's tables and figures",
    "logs": "logs",
    "benchmarks": "benchmarks",
}


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


def check_sources(config, errors):
    """Each dataset's source with its file keys and parser options, and its generator
    with its options, checked by the dataset source (tieaudit.sources): an error line
    for each problem."""
    for name, entry in config["datasets"].items():
        key = f"config: datasets.{name}"
        try:
            source = get_source(entry["source"])
        except ValueError as exc:
            errors.append(f"{key}.source: {exc}")
        else:
            problems = source.validate(entry["files"], entry.get("options") or {})
            errors.extend(f"{key}.{problem}" for problem in problems)
        synthetic = entry.get("synthetic")
        if synthetic is None:
            continue
        try:
            generator = get_source(synthetic["generator"])
        except ValueError as exc:
            errors.append(f"{key}.synthetic.generator: {exc}")
            continue
        takes = generator.generator_options
        for option in synthetic.get("options") or {}:
            if option not in takes:
                errors.append(
                    f"{key}.synthetic.options: unknown option {option!r} for generator "
                    f"{generator.name}; expected: {', '.join(takes)}"
                )


def file_name(key, entry):
    """The name a download is stored under: the last part of its URL path (its extension tells
    the parsers the format), or the logical key when the URL path ends in '/'."""
    return Path(urlparse(entry["url"]).path or entry["url"][5:]).name or key


def local_file(url):
    """The file a `file:` URL names (relative when it lies in the working directory), or None."""
    parts = urlparse(url)
    if parts.scheme.lower() != "file":
        return None
    return str(in_workdir(url2pathname(parts.path)))


# Snakemake reads '{...}' in a file path as a wildcard and '<...>' as a path variable.
PATH_PATTERN = re.compile(r"[{}<>]")


def check_paths(config, errors):
    """Every path the workflow makes a rule's input or output from the config (a file's stored
    name, a `file:` URL's local file, a user scorer's file, the reference file) is taken
    literally by Snakemake only without '{', '}', '<' and '>': an error line for each other.
    """

    def check(key, text, what):
        if text and PATH_PATTERN.search(str(text)):
            errors.append(
                f"config: {key}: {what} {str(text)!r} has '{{', '}}', '<' or '>', which "
                "Snakemake reads as a wildcard or a path variable in a file name: rename it"
            )

    for name, entry in config["datasets"].items():
        for key, file in entry["files"].items():
            where = f"datasets.{name}.files.{key}.url"
            check(where, local_file(file["url"]), "the local file of")
            check(where, file_name(key, file), "the stored name of the download")
    for name, entry in config["scorers"].items():
        source, _, _ = entry["scorer"].rpartition(":")
        if source.endswith(".py"):
            check(f"scorers.{name}.scorer", source, "the scorer file")
    check("paper.reference", config["paper"]["reference"], "the file")


def figure_kinds(full):
    """The figures of a dataset, results/paper/figures/{dataset}_{kind}.{ext} (rules figures
    and figures_full write them): rules one column wide (3.3 in), rules_wide both (6.8 in).
    """
    return ["rules", "rules_wide", "tie_sizes"] + (["full_rules"] if full else [])


def check_figure_names(config, errors):
    """No figure file is two datasets' ('x' and 'x_full' with the full catalogue: x_full_rules
    is the full-catalogue figure of x and the rules figure of x_full)."""
    owner = {}
    kinds = figure_kinds("full" in config["evaluation"]["candidates"])
    for name in list(config["run"]) or list(config["datasets"]):
        for kind in kinds:
            other = owner.setdefault(f"{name}_{kind}", name)
            if other != name:
                errors.append(
                    f"config: datasets: {other!r} and {name!r} cannot be run together: "
                    f"results/paper/figures/{name}_{kind}.* would be a figure of both; "
                    "rename one"
                )


def check_config(config):
    """The checks the schema cannot express, before any job runs: every error (each naming its
    key) is raised at once. Measures and tie rules are parsed by the library and rewritten in
    its spelling (ndcg@10 -> nDCG@10), so every step sees the same names."""
    errors = []
    ev = config["evaluation"]
    for key, kind in (("datasets", "dataset"), ("scorers", "scorer")):
        for name in config[key]:
            if not isinstance(name, str):
                errors.append(
                    f"config: {key}: {name!r} cannot be a {kind} name: YAML reads it as a "
                    f'value of type {type(name).__name__}, not a string; quote it ("{name}")'
                )
            elif not NAME.fullmatch(name):
                errors.append(
                    f"config: {key}: {name!r} cannot be a {kind} name (it is a folder name): "
                    "letters, digits, '_', '.' and '-', starting with a letter or digit"
                )
    for name in config["run"]:
        if name not in config["datasets"]:
            errors.append(
                f"config: run names dataset {name!r}, which is not under datasets"
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
    if "full" in ev["candidates"]:
        for parsed in rules:
            if not parsed.spec.on_summary:
                errors.append(
                    f"config: evaluation.rules: {parsed} cannot be evaluated on the full "
                    "catalogue (evaluation.candidates: full): its summary tables keep no "
                    "tie members' ids"
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
    check_sources(config, errors)
    check_paths(config, errors)
    check_figure_names(config, errors)
    for name, entry in config["scorers"].items():
        try:  # imports a user scorer's module: a config file is code
            check_scorer_spec(entry["scorer"], entry.get("options"))
        except (ScorerLoadError, ScorerInterfaceError) as exc:
            errors.append(f"config: scorers.{name}: {exc}")
    for name in config["datasets"]:
        if name in RESULTS_FOLDERS:
            errors.append(
                f"config: datasets: {name!r} cannot be a dataset name: results/{name}/ holds "
                f"the {RESULTS_FOLDERS[name]}"
            )
    for key, what in (
        ("n_rows", "evaluation rows"),
        ("full_rows", "full-catalog rows"),
    ):
        if key == "full_rows" and "full" not in ev["candidates"]:
            continue
        if ev[key] is not None and ev["row_chunks"] > ev[key]:
            errors.append(
                f"config: evaluation.row_chunks: {ev['row_chunks']} jobs for {ev[key]} "
                f"{what} (evaluation.{key}); at most one job a row"
            )
    if ev["seed_chunks"] > ev["n_seeds"]:
        errors.append(
            f"config: evaluation.seed_chunks: {ev['seed_chunks']} jobs for "
            f"{ev['n_seeds']} hash seeds (evaluation.n_seeds); at most one job a seed"
        )
    evaluators = config["paper"]["evaluators"]
    if isinstance(evaluators, str) and evaluators != "all":
        errors.append(
            f"config: paper.evaluators: {evaluators!r}: give `all` or a list of adapter names"
        )
    for name in evaluators if isinstance(evaluators, list) else []:
        if name not in adapter_names():
            errors.append(
                f"config: paper.evaluators: no adapter {name!r}; registered: "
                f"{', '.join(adapter_names())}"
            )
    casts = []
    for i, text in enumerate(config["paper"]["score_precisions"], start=1):
        try:
            casts.append(parse_precision(text))
        except ValueError as exc:
            errors.append(f"config: paper.score_precisions, item {i}: {exc}")
    reference = ROOT / config["paper"]["reference"]
    if not reference.is_file():
        errors.append(
            f"config: paper.reference: no file {str(reference)!r} (a relative path is taken "
            "from the workflow's folder)"
        )
    if errors:
        raise ValueError("\n".join(errors))
    ev["metrics"] = [str(m) for m in metrics]
    ev["headline"] = [str(m) for m in headline]
    ev["rules"] = [str(r) for r in rules]
    ev["reported_rule"] = str(reported)
    config["paper"]["score_precisions"] = list(dict.fromkeys(casts))


check_config(config)
DATASETS = list(config["run"]) or list(config["datasets"])
SCORERS = list(config["scorers"])
# Candidate settings, sampled first: "sampled" (always) and "full" (full catalogue). Results of
# each live under results/{dataset}/{setting}/{scorer}/.
SETTINGS = [s for s in ("sampled", "full") if s in config["evaluation"]["candidates"]]
FULL = "full" in SETTINGS
# The adapters of the evaluator table (probe.smk): those the config names, every registered
# one for `all`; none (the default), no table.
EVALUATORS = config["paper"]["evaluators"]
EVALUATORS = (
    adapter_names() if EVALUATORS in (None, "all") else list(dict.fromkeys(EVALUATORS))
)
# The precisions of the casting table (casting.smk); none, no table.
CASTS = config["paper"]["score_precisions"]


wildcard_constraints:
    dataset="|".join(re.escape(d) for d in DATASETS) or "NONE",
    scorer="|".join(re.escape(s) for s in SCORERS) or "NONE",
    setting="|".join(SETTINGS),
    chunk=r"\d+",
    part=r"\d+",


def script_inputs(script, *modules):
    """The library files scripts/{script} imports, transitively (read from the sources when the
    workflow is parsed, see tieaudit.pipeline.dependencies), and those of `modules` (dotted names a
    registry imports by name): inputs of the step's rule, so editing a module reruns exactly
    the steps that run it."""
    files = library_files(SCRIPTS / script, modules=modules, package_dir=LIB)
    return [str(in_workdir(p)) for p in files]


def scorer_code(wildcards):
    """The source of a user scorer (path/to/file.py:Class or package.module:Class) and the
    library files it imports: inputs of the steps that run it, so editing it reruns them. A
    built-in scorer is library code, already an input."""
    spec = config["scorers"][wildcards.scorer]["scorer"]
    source, _, _ = spec.rpartition(":")
    if not source:
        return []
    if source.endswith(".py"):
        path = Path(source).expanduser()
    else:  # importable (check_config imported it): its file, wherever it lives
        found = importlib.util.find_spec(source)
        if found is None or not (found.origin or "").endswith(".py"):
            return []
        path = Path(found.origin)
    files = [path, *library_files(path, package_dir=LIB)]
    return [str(in_workdir(p)) for p in files]


def dataset_cfg(dataset):
    return config["datasets"][dataset]


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


def download_format(wildcards):
    """What the dataset source says the file must be (zip, gzip, ...); "" when its name says."""
    source = get_source(dataset_cfg(wildcards.dataset)["source"])
    declared = {f.name: f.format for f in source.files}.get(wildcards.key)
    return declared or ""


def download_lockfile(wildcards):
    """The lock file recording size and sha256 of real downloads (none for generated files)."""
    if "synthetic" in dataset_cfg(wildcards.dataset):
        return ""
    return "data/downloads.lock.yaml"


def download_source(wildcards):
    """What a download copies from: the generated demo folder when the dataset is synthetic (so
    it is built first), else the local file of a `file:` URL (so editing it reruns the download
    and everything after; the lock-file check then says how to accept it); nothing for http.
    """
    if "synthetic" in dataset_cfg(wildcards.dataset):
        return [f"data/demo/{wildcards.dataset}"]
    path = local_file(download_url(wildcards))
    return [path] if path else []


def local_sources(wildcards):
    """The local files of a dataset's `file:` URLs (none for a generated dataset): inputs of
    prepare as well as of their downloads. A download refused by the lock-file check leaves no
    raw file, and Snakemake does not rerun a step for a missing intermediate file, so without
    them the next run would keep the old interim tables."""
    if "synthetic" in dataset_cfg(wildcards.dataset):
        return []
    paths = [
        local_file(e["url"]) for e in dataset_cfg(wildcards.dataset)["files"].values()
    ]
    return [p for p in paths if p]


def synthetic_params(wildcards):
    return dataset_cfg(wildcards.dataset)["synthetic"]


def source_inputs(script, field):
    """script_inputs of a step that runs the dataset's source (`field` "source") or its
    generator ("generator"): the registry imports that module by name, so it is named here, and
    only it (editing another source reruns nothing of this dataset)."""

    def inputs(wildcards):
        cfg = dataset_cfg(wildcards.dataset)
        entry = cfg["source"] if field == "source" else cfg["synthetic"][field]
        return script_inputs(script, *filter(None, [source_module(entry)]))

    return inputs


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


# evaluation.row_chunks: the rows of a dataset are scored, reduced and evaluated in this many
# jobs (contiguous ranges of the stored rows, tieaudit.pipeline.partition), merged exactly by one rule per
# kind of output. With one part, each step writes its final file itself (no merge job).
ROW_CHUNKS = config["evaluation"]["row_chunks"]


def parted(path):
    """A partitioned step's file: `path` itself with one part; with several, part {part} of it
    under parts/ beside it (results/x/scores.parquet -> results/x/parts/scores.{part}.parquet).
    """
    if ROW_CHUNKS == 1:
        return path
    path = Path(path)
    return str(path.parent / "parts" / f"{path.stem}.{{part}}{path.suffix}")


def parts_of(path):
    """Input function: every part of `path` (parted), in part order, for the job's wildcards."""

    def files(wildcards):
        fixed = {k: v for k, v in wildcards.items() if k != "part"}
        return expand(parted(path), part=range(ROW_CHUNKS), **fixed)

    return files


def row_part(wildcards):
    """Params function: [part, number of parts] of a partitioned job (None with one part)."""
    return [int(wildcards.part), ROW_CHUNKS] if ROW_CHUNKS > 1 else None


def part_mem_mb(measured, fixed):
    """Memory of a partitioned job: what does not depend on the rows (`fixed`, e.g. a fitted
    scorer) and its share of the rest of the one-job `measured` size (MB)."""
    return fixed + -(-(measured - fixed) // ROW_CHUNKS)


def hash_seed_chunks(wildcards):
    """The hash_mean ranks of a sampled table, computed in seed_chunks jobs; a full-catalog
    summary table records its own (before:hash:S columns, see recorded_hash_seeds)."""
    if wildcards.setting != "sampled":
        return []
    return expand(
        "results/{dataset}/sampled/{scorer}/hash_seeds/chunk{chunk}.npy",
        dataset=wildcards.dataset,
        scorer=wildcards.scorer,
        chunk=seed_chunks(),
    )


def result_keys(datasets=None, settings=None):
    """(dataset, setting, scorer) of every per-scorer result: by setting (sampled first), then
    dataset, then scorer. Steps that combine results get these beside the files."""
    return [
        (d, s, c)
        for s in settings or SETTINGS
        for d in datasets or DATASETS
        for c in SCORERS
    ]


def result_files(name, keys=None):
    """results/{dataset}/{setting}/{scorer}/{name} of each key (default: every result)."""
    return [f"results/{d}/{s}/{c}/{name}" for d, s, c in keys or result_keys()]


def dataset_keys(setting):
    """Params function: the result keys of one setting for the job's dataset."""

    def keys(wildcards):
        return result_keys([wildcards.dataset], [setting])

    return keys


def dataset_results(setting, name):
    """Input function: {name} of every scorer of one setting for the job's dataset."""

    def files(wildcards):
        return result_files(name, dataset_keys(setting)(wildcards))

    return files


def recorded_hash_seeds():
    """Hash seeds a full-catalog summary records for the configured rules (the registry's)."""
    from tieaudit.ties.rules import recorded_seeds

    return recorded_seeds(
        config["evaluation"]["rules"], config["evaluation"]["n_seeds"]
    )


def largest_cutoff():
    """The largest cutoff of the configured measures: a full-catalog summary counts its hash
    ranks only that far (k_max; the table says so and refuses larger cutoffs)."""
    return max(parse_measure(m).k for m in config["evaluation"]["metrics"])


def requested_rows(wildcards):
    """The evaluation rows a result asks for: evaluation.n_rows, or a full-catalog result's
    full_rows when set (the checklist says when the data have fewer)."""
    own = full_rows(wildcards) if wildcards.setting == "full" else None
    return own if own is not None else config["evaluation"]["n_rows"]


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
    if EVALUATORS:
        out += ["results/paper/evaluators.csv", "results/paper/evaluators.md"]
    if CASTS:
        out += ["results/paper/casting.csv", "results/paper/casting.md"]
    out += expand(
        "results/paper/figures/{dataset}_{kind}.{ext}",
        dataset=DATASETS,
        kind=figure_kinds(FULL),
        ext=FIGURE_FORMATS,
    )
    out += page_tables() + [PAGE]
    return out


# The results page (rule results_page), and the paper tables and flips it shows.
PAGE = "results/paper/index.html"
FIGURE_FORMATS = ("png", "pdf", "svg")


def paper_rule_table_files():
    """The paper tables (scorers x tie rules) of every dataset and setting."""
    return expand(
        "results/paper/paper_{key}.{ext}",
        key=[f"{d}_{s}" for s in SETTINGS for d in DATASETS],
        ext=("csv", "md", "tex"),
    )


def page_tables():
    """The paper tables of every dataset and setting, and the ranking flips."""
    return paper_rule_table_files() + expand(
        "results/paper/ranking_flips.{ext}", ext=("csv", "md")
    )


def setting_results(name):
    """Input function: {name} of every scorer of the job's dataset and setting."""

    def files(wildcards):
        return result_files(name, setting_keys(wildcards))

    return files


def setting_keys(wildcards):
    return result_keys([wildcards.dataset], [wildcards.setting])


def setting_chunks(wildcards):
    """The hash_mean ranks of every scorer of a sampled setting (the evaluate step's too)."""
    return [
        f
        for _, _, c in setting_keys(wildcards)
        for f in hash_seed_chunks(
            Namespace(dataset=wildcards.dataset, setting=wildcards.setting, scorer=c)
        )
    ]


def page_inputs():
    """Everything the results page shows: this run's paper outputs but the page itself."""
    return [f for f in paper_outputs() if f != PAGE]


def generated_raw_files():
    """The raw files of generated datasets (the page lists their size and sha256)."""
    return [
        f
        for d in DATASETS
        if "synthetic" in dataset_cfg(d)
        for f in raw_files(Namespace(dataset=d)).values()
    ]


def lock_file():
    """The download lock file, when there is one (its entries give size and sha256)."""
    path = Path("data/downloads.lock.yaml")
    return [str(path)] if path.is_file() else []


def all_outputs():
    return paper_outputs() + [PAPER_MANIFEST] + result_files("audit/checklist.md")


def reference_file():
    """The paper reference YAML: a relative path is taken from the workflow's folder."""
    path = Path(config["paper"]["reference"])
    return str(in_workdir(path if path.is_absolute() else ROOT / path))


def probe_candidates():
    """The candidates the inflation is measured on: the first dataset's attribute_overlap
    scores (the first scorer's when no scorer has that name)."""
    scorer = "attribute_overlap" if "attribute_overlap" in SCORERS else SCORERS[0]
    return f"results/{DATASETS[0]}/sampled/{scorer}/scores.parquet"
