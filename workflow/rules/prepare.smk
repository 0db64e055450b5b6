# Stage 2: parse raw files into the interim form, then split leave-last-out.
rule prepare:
    input:
        unpack(raw_files),
        local_sources,
        lib=source_inputs("prepare.py", "source"),
    output:
        interactions="data/interim/{dataset}/interactions.parquet",
        attributes="data/interim/{dataset}/item_attributes.parquet",
    log:
        f"{LOGS}/prepare/{{dataset}}.log",
    benchmark:
        f"{BENCH}/prepare/{{dataset}}.tsv"
    conda:
        "../envs/data.yaml"
    resources:
        # measured at real scale (benchmarks/README.md): max RSS 0.7 GB (Amazon, 1.0M metadata
        # records, streamed), 0.5 GB (25M ratings + 28M genome rows)
        mem_mb=2000,
    params:
        spec=prepare_params,
    script:
        "../../scripts/prepare.py"


rule split:
    input:
        interactions="data/interim/{dataset}/interactions.parquet",
        attributes="data/interim/{dataset}/item_attributes.parquet",
        lib=script_inputs("split.py"),
    output:
        history="data/interim/{dataset}/history.parquet",
        heldout="data/interim/{dataset}/heldout.parquet",
    log:
        f"{LOGS}/split/{{dataset}}.log",
    benchmark:
        f"{BENCH}/split/{{dataset}}.tsv"
    conda:
        "../envs/eval.yaml"
    resources:
        # measured: max RSS 1.5 GB (Amazon, 6.2M rows); 3.1 GB for 25M MovieLens ratings nearly
        # all kept by attributed_items_only (as on the real ml-25m)
        mem_mb=4500,
    params:
        attributed_only=attributed_only,
    script:
        "../../scripts/split.py"
