# Stage 6: the paper's tables, comparison with the published numbers, checklist and figures.
import warnings

# `snakemake --report` evaluates each job's default disk_mb (an `input.size_mb` expression)
# inside its own event loop; Snakemake drops the size coroutine unawaited and Python warns
# once a job (snakemake/snakemake#4280, open as of 9.27). The value is unused by the report.
warnings.filterwarnings(
    "ignore",
    message=r"coroutine 'InputFiles\._predicated_size_files\.<locals>\.sizes' was never awaited",
    category=RuntimeWarning,
)


localrules:
    paper_tables,
    figures,
    figures_full,
    paper_manifest,


rule paper_tables:
    input:
        metrics=result_files("metrics.csv"),
        invariance=result_files("audit/invariance.csv"),
        diagnostics=result_files("audit/diagnostics.csv"),
        checklists=result_files("audit/checklist.md"),
        reference=reference_file(),
        lib=script_inputs("paper_tables.py"),
    output:
        tables=report(
            expand(
                "results/paper/{table}.{ext}",
                table=[f"table_{d}" for d in DATASETS] + ["ties_invariance"],
                ext=("csv", "md", "tex"),
            ),
            caption="../report/tables.rst",
            category="Paper tables",
        ),
        compare=report(
            "results/paper/compare.md",
            caption="../report/compare.rst",
            category="Paper tables",
        ),
        checklist=report(
            "results/paper/checklist.md",
            caption="../report/checklist.rst",
            category="Paper tables",
        ),
    log:
        f"{LOGS}/paper_tables.log",
    conda:
        "../envs/paper.yaml"
    params:
        results=result_keys(),
        datasets=DATASETS,
        scorers=SCORERS,
        headline=config["evaluation"]["headline"],
        rules=config["evaluation"]["rules"],
        reference_dataset=config["paper"]["reference_dataset"],
        generated=[d for d in DATASETS if "synthetic" in dataset_cfg(d)],
        reported_rule=config["evaluation"]["reported_rule"],
    script:
        "../../scripts/paper_tables.py"


rule figures:
    input:
        metrics=dataset_results("sampled", "metrics.csv"),
        diagnostics=dataset_results("sampled", "audit/diagnostics.csv"),
        lib=script_inputs("figures.py"),
    output:
        rules=report(
            multiext("results/paper/figures/{dataset}_rules", ".png", ".pdf"),
            caption="../report/figure_rules.rst",
            category="Figures",
        ),
        tie_sizes=report(
            multiext("results/paper/figures/{dataset}_tie_sizes", ".png", ".pdf"),
            caption="../report/figure_tie_sizes.rst",
            category="Figures",
        ),
    log:
        f"{LOGS}/figures/{{dataset}}.log",
    conda:
        "../envs/paper.yaml"
    params:
        results=dataset_keys("sampled"),
        scorers=SCORERS,
        headline=config["evaluation"]["headline"],
        rules=config["evaluation"]["rules"],
    script:
        "../../scripts/figures.py"


rule figures_full:
    input:
        metrics=dataset_results("full", "metrics.csv"),
        lib=script_inputs("figures_full.py"),
    output:
        rules=report(
            multiext("results/paper/figures/{dataset}_full_rules", ".png", ".pdf"),
            caption="../report/figure_rules_full.rst",
            category="Figures",
        ),
    log:
        f"{LOGS}/figures_full/{{dataset}}.log",
    conda:
        "../envs/paper.yaml"
    params:
        results=dataset_keys("full"),
        scorers=SCORERS,
        headline=config["evaluation"]["headline"],
        rules=config["evaluation"]["rules"],
    script:
        "../../scripts/figures_full.py"


# results/paper/ holds this run's outputs only: an earlier run's tables and figures (another
# `run:` list, or without the full catalogue) are removed once every output of this run is
# written, and the rest is listed. The set of inputs changes with the run, which reruns it.
rule paper_manifest:
    input:
        files=paper_outputs(),
        lib=script_inputs("paper_manifest.py"),
    output:
        PAPER_MANIFEST,
    log:
        f"{LOGS}/paper_manifest.log",
    conda:
        "../envs/paper.yaml"
    script:
        "../../scripts/paper_manifest.py"
