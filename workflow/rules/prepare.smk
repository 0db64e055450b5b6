# Stage 2: parse raw files into the interim form, then split leave-last-out.
rule prepare:
    input:
        unpack(raw_files),
        lib=lib("data/ingest.py"),
    output:
        interactions="data/interim/{dataset}/interactions.parquet",
        attributes="data/interim/{dataset}/item_attributes.parquet",
    log:
        f"{LOGS}/prepare/{{dataset}}.log",
    benchmark:
        f"{BENCH}/prepare/{{dataset}}.tsv"
    conda:
        "../../environment.yml"
    resources:
        mem_mb=4000,
    params:
        spec=prepare_params,
    script:
        "../../scripts/prepare.py"


rule split:
    input:
        interactions="data/interim/{dataset}/interactions.parquet",
        attributes="data/interim/{dataset}/item_attributes.parquet",
        lib=lib("split.py"),
    output:
        history="data/interim/{dataset}/history.parquet",
        heldout="data/interim/{dataset}/heldout.parquet",
    log:
        f"{LOGS}/split/{{dataset}}.log",
    benchmark:
        f"{BENCH}/split/{{dataset}}.tsv"
    conda:
        "../../environment.yml"
    resources:
        mem_mb=4000,
    params:
        attributed_only=attributed_only,
    script:
        "../../scripts/split.py"
