# Stage 5: evaluate under every tie rule, and audit row-order invariance, for each candidate
# setting (sampled, full) alike: results/{dataset}/{setting}/{scorer}/.
rule hash_seeds:
    input:
        scores="results/{dataset}/sampled/{scorer}/scores.parquet",
        lib=script_inputs("hash_seeds.py"),
    output:
        "results/{dataset}/sampled/{scorer}/hash_seeds/chunk{chunk}.npy",
    log:
        f"{LOGS}/hash_seeds/{{dataset}}/{{scorer}}/chunk{{chunk}}.log",
    benchmark:
        f"{BENCH}/hash_seeds/{{dataset}}/{{scorer}}/chunk{{chunk}}.tsv"
    conda:
        "../envs/eval.yaml"
    resources:
        # measured: max RSS 0.75 GB (3M candidates, 100 seeds in one chunk)
        mem_mb=1500,
    params:
        metrics=config["evaluation"]["metrics"],
        n_seeds=config["evaluation"]["n_seeds"],
        n_chunks=config["evaluation"]["seed_chunks"],
    script:
        "../../scripts/hash_seeds.py"


# metrics.csv of a result: written by evaluate, or by merge_metrics from its parts
METRICS = report(
    "results/{dataset}/{setting}/{scorer}/metrics.csv",
    caption="../report/metrics.rst",
    category="Metrics",
    subcategory="{dataset}",
    labels={
        "dataset": "{dataset}",
        "setting": "{setting}",
        "scorer": "{scorer}",
    },
)
# a part's per-row values (evaluation.row_chunks), merged exactly by merge_metrics
ROW_VALUES = "results/{dataset}/{setting}/{scorer}/row_values.parquet"


rule evaluate:
    input:
        scores=parted("results/{dataset}/{setting}/{scorer}/scores.parquet"),
        # every part's scores: where this part's lines sit in the whole table (random:SEED)
        parts=(
            parts_of("results/{dataset}/{setting}/{scorer}/scores.parquet")
            if ROW_CHUNKS > 1
            else []
        ),
        chunks=hash_seed_chunks,
        lib=script_inputs("evaluate.py"),
    output:
        METRICS if ROW_CHUNKS == 1 else parted(ROW_VALUES),
    log:
        parted(f"{LOGS}/evaluate/{{dataset}}/{{setting}}/{{scorer}}.log"),
    benchmark:
        parted(f"{BENCH}/evaluate/{{dataset}}/{{setting}}/{{scorer}}.tsv")
    conda:
        "../envs/eval.yaml"
    resources:
        # measured: max RSS 1.1 GB (3M candidates); a part evaluates its share of them
        mem_mb=part_mem_mb(2000, 400),
    params:
        metrics=config["evaluation"]["metrics"],
        rules=config["evaluation"]["rules"],
        n_seeds=config["evaluation"]["n_seeds"],
        part=row_part,
    script:
        "../../scripts/evaluate.py"


if ROW_CHUNKS > 1:

    # the parts' per-row values concatenated in part order and summed as one evaluation sums
    # them: metrics.csv to the last bit (tieaudit.evaluation.parts)
    rule merge_metrics:
        input:
            parts=parts_of(ROW_VALUES),
            lib=script_inputs("merge_metrics.py"),
        output:
            METRICS,
        log:
            f"{LOGS}/merge_metrics/{{dataset}}/{{setting}}/{{scorer}}.log",
        benchmark:
            f"{BENCH}/merge_metrics/{{dataset}}/{{setting}}/{{scorer}}.tsv"
        conda:
            "../envs/eval.yaml"
        resources:
            # every row's values: rows x measures x (rules + hash seeds) numbers
            mem_mb=2000,
        params:
            metrics=config["evaluation"]["metrics"],
            rules=config["evaluation"]["rules"],
        script:
            "../../scripts/merge_metrics.py"


# the audit's files of a result: written by audit, or by merge_audit from its parts
AUDIT = {
    "invariance": "results/{dataset}/{setting}/{scorer}/audit/invariance.csv",
    "diagnostics": "results/{dataset}/{setting}/{scorer}/audit/diagnostics.csv",
    "checklist": report(
        "results/{dataset}/{setting}/{scorer}/audit/checklist.md",
        caption="../report/checklist.rst",
        category="Audit",
        subcategory="{dataset}",
        labels={
            "dataset": "{dataset}",
            "setting": "{setting}",
            "scorer": "{scorer}",
        },
    ),
}
# a part's per-row audit numbers (evaluation.row_chunks), merged exactly by merge_audit
AUDIT_ROWS = "results/{dataset}/{setting}/{scorer}/audit/audit_rows.parquet"


rule audit:
    input:
        scores=parted("results/{dataset}/{setting}/{scorer}/scores.parquet"),
        # every part's scores: where this part's lines sit in the whole table (the shuffles
        # and random:SEED)
        parts=(
            parts_of("results/{dataset}/{setting}/{scorer}/scores.parquet")
            if ROW_CHUNKS > 1
            else []
        ),
        # its users: the rows of any other user are cold starts (diagnostics.csv)
        history="data/interim/{dataset}/history.parquet",
        lib=script_inputs("audit.py"),
    output:
        **(AUDIT if ROW_CHUNKS == 1 else {"rows": parted(AUDIT_ROWS)}),
    log:
        parted(f"{LOGS}/audit/{{dataset}}/{{setting}}/{{scorer}}.log"),
    benchmark:
        parted(f"{BENCH}/audit/{{dataset}}/{{setting}}/{{scorer}}.tsv")
    conda:
        "../envs/eval.yaml"
    resources:
        # measured: max RSS 1.4 GB (3M candidates, 5 permutations); a part audits its share of
        # them (the users with history read whole)
        mem_mb=part_mem_mb(2500, 500),
    params:
        metrics=config["evaluation"]["metrics"],
        rules=config["evaluation"]["rules"],
        n_seeds=config["evaluation"]["n_seeds"],
        headline=config["evaluation"]["headline"],
        reported_rule=config["evaluation"]["reported_rule"],
        permutations=config["audit"]["permutations"],
        seed=config["audit"]["seed"],
        requested_rows=requested_rows,
        part=row_part,
    script:
        "../../scripts/audit.py"


if ROW_CHUNKS > 1:

    # the parts' per-row audit numbers concatenated in part order and summed as one audit sums
    # them: the audit's files to the last bit (tieaudit.analyses.audit.AuditRows)
    rule merge_audit:
        input:
            parts=parts_of(AUDIT_ROWS),
            lib=script_inputs("merge_audit.py"),
        output:
            **AUDIT,
        log:
            f"{LOGS}/merge_audit/{{dataset}}/{{setting}}/{{scorer}}.log",
        benchmark:
            f"{BENCH}/merge_audit/{{dataset}}/{{setting}}/{{scorer}}.tsv"
        conda:
            "../envs/eval.yaml"
        resources:
            # every row's numbers: rows x measures x (rules x (permutations + 3) + hash seeds)
            mem_mb=2000,
        params:
            headline=config["evaluation"]["headline"],
            reported_rule=config["evaluation"]["reported_rule"],
            seed=config["audit"]["seed"],
            requested_rows=requested_rows,
        script:
            "../../scripts/merge_audit.py"
