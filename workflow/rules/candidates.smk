# Stage 3: sample evaluation rows and negatives (scorer-independent).
rule candidates:
    input:
        history="data/interim/{dataset}/history.parquet",
        heldout="data/interim/{dataset}/heldout.parquet",
        lib=script_inputs("candidates.py"),
    output:
        "results/{dataset}/candidates.parquet",
    log:
        f"{LOGS}/candidates/{{dataset}}.log",
    benchmark:
        f"{BENCH}/candidates/{{dataset}}.tsv"
    conda:
        "../envs/eval.yaml"
    resources:
        # measured: max RSS 1.1 GB (Amazon), 1.8 GB (24M-row MovieLens history)
        mem_mb=3000,
    params:
        n_rows=config["evaluation"]["n_rows"],
        n_negatives=config["evaluation"]["n_negatives"],
        insufficient=config["evaluation"]["insufficient_negatives"],
        positive_position=config["evaluation"]["positive_position"],
        seed=config["evaluation"]["seed"],
    script:
        "../../scripts/candidates.py"
