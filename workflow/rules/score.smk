# Stage 4: score every candidate with each scorer.
rule score:
    input:
        candidates="results/{dataset}/candidates.parquet",
        history="data/interim/{dataset}/history.parquet",
        attributes="data/interim/{dataset}/item_attributes.parquet",
        lib=lib("scorers/__init__.py", "scorers/base.py", "scorers/attribute.py"),
    output:
        "results/{dataset}/{scorer}/scores.parquet",
    log:
        f"{LOGS}/score/{{dataset}}/{{scorer}}.log",
    benchmark:
        f"{BENCH}/score/{{dataset}}/{{scorer}}.tsv"
    conda:
        "../../environment.yml"
    resources:
        # measured: max RSS 2.2 GB (Amazon), 2.5 GB (24M-row MovieLens history)
        mem_mb=4000,
    params:
        spec=scorer_spec,
    script:
        "../../scripts/score.py"
