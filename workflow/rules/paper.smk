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
    paper_rule_tables,
    ranking_flips,
    results_page,


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
        seed_means="results/{dataset}/sampled/compare/seed_means.csv",
        lib=script_inputs("figures.py"),
    output:
        rules=report(
            multiext("results/paper/figures/{dataset}_rules", ".png", ".pdf", ".svg"),
            caption="../report/figure_rules.rst",
            category="Figures",
        ),
        rules_wide=report(
            multiext(
                "results/paper/figures/{dataset}_rules_wide", ".png", ".pdf", ".svg"
            ),
            caption="../report/figure_rules.rst",
            category="Figures",
        ),
        tie_sizes=report(
            multiext(
                "results/paper/figures/{dataset}_tie_sizes", ".png", ".pdf", ".svg"
            ),
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
        seed_means="results/{dataset}/full/compare/seed_means.csv",
        lib=script_inputs("figures_full.py"),
    output:
        rules=report(
            multiext(
                "results/paper/figures/{dataset}_full_rules", ".png", ".pdf", ".svg"
            ),
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


rule paper_rule_tables:
    input:
        metrics=result_files("metrics.csv"),
        lib=script_inputs("paper_rule_tables.py"),
    output:
        report(
            paper_rule_table_files(),
            caption="../report/paper_tables.rst",
            category="Paper tables",
        ),
    log:
        f"{LOGS}/paper_rule_tables.log",
    conda:
        "../envs/paper.yaml"
    params:
        results=result_keys(),
        pairs=[(d, s) for s in SETTINGS for d in DATASETS],
        scorers=SCORERS,
        headline=config["evaluation"]["headline"],
        rules=config["evaluation"]["rules"],
        n_seeds=config["evaluation"]["n_seeds"],
    script:
        "../../scripts/paper_rule_tables.py"


# Computing the comparison is separate from printing it: the flips of one dataset and setting,
# and the per-seed hash means the figures draw as a strip.
rule compare:
    input:
        scores=setting_results("scores.parquet"),
        chunks=setting_chunks,
        lib=script_inputs("compare.py"),
    output:
        flips="results/{dataset}/{setting}/compare/flips.csv",
        orderings="results/{dataset}/{setting}/compare/orderings.csv",
        seed_means="results/{dataset}/{setting}/compare/seed_means.csv",
    log:
        f"{LOGS}/compare/{{dataset}}/{{setting}}.log",
    benchmark:
        f"{BENCH}/compare/{{dataset}}/{{setting}}.tsv"
    conda:
        "../envs/eval.yaml"
    resources:
        # one scorer's evaluation at a time, as in the evaluate step
        mem_mb=2000,
    params:
        results=setting_keys,
        metrics=config["evaluation"]["metrics"],
        rules=config["evaluation"]["rules"],
        headline=config["evaluation"]["headline"],
        n_seeds=config["evaluation"]["n_seeds"],
        n_chunks=config["evaluation"]["seed_chunks"],
    script:
        "../../scripts/compare.py"


rule ranking_flips:
    input:
        flips=expand(
            "results/{dataset}/{setting}/compare/flips.csv",
            setting=SETTINGS,
            dataset=DATASETS,
        ),
        orderings=expand(
            "results/{dataset}/{setting}/compare/orderings.csv",
            setting=SETTINGS,
            dataset=DATASETS,
        ),
        lib=script_inputs("ranking_flips.py"),
    output:
        csv=report(
            "results/paper/ranking_flips.csv",
            caption="../report/ranking_flips.rst",
            category="Paper tables",
        ),
        md=report(
            "results/paper/ranking_flips.md",
            caption="../report/ranking_flips.rst",
            category="Paper tables",
        ),
    log:
        f"{LOGS}/ranking_flips.log",
    conda:
        "../envs/paper.yaml"
    params:
        pairs=[(d, s) for s in SETTINGS for d in DATASETS],
    script:
        "../../scripts/ranking_flips.py"


# The one page a reader opens: tables, flips, verdicts, figures and provenance, self-contained.
rule results_page:
    input:
        files=page_inputs(),
        raw=generated_raw_files(),
        lock=lock_file(),
        lib=script_inputs("results_page.py"),
    output:
        report(PAGE, caption="../report/results_page.rst", category="Results page"),
    log:
        f"{LOGS}/results_page.log",
    conda:
        "../envs/paper.yaml"
    params:
        config=config,
        datasets=DATASETS,
        settings=SETTINGS,
        generated=[d for d in DATASETS if "synthetic" in dataset_cfg(d)],
        urls={
            d: {k: v["url"] for k, v in dataset_cfg(d)["files"].items()}
            for d in DATASETS
        },
        n_seeds=config["evaluation"]["n_seeds"],
    script:
        "../../scripts/results_page.py"


# results/paper/ holds this run's outputs: an earlier run's tables and figures (another `run:`
# list, or without the full catalogue) are removed once every output of this run is written,
# and the rest is listed. Only files the earlier manifest lists are removed (a user's notes stay),
# so the manifest is updated in place: Snakemake would delete it before the job otherwise. The
# set of inputs changes with the run, which reruns it.
rule paper_manifest:
    input:
        files=paper_outputs(),
        lib=script_inputs("paper_manifest.py"),
    output:
        update(PAPER_MANIFEST),
    log:
        f"{LOGS}/paper_manifest.log",
    conda:
        "../envs/paper.yaml"
    script:
        "../../scripts/paper_manifest.py"
