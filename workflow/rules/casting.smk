# The casting table (paper.score_precisions): what casting each scorer's sampled scores to a
# narrower type, or rounding them, does: the share of rows whose relevant item is then tied,
# and the inflation of input_order over expected on the headline measures (tieaudit.tables.precision).
# The full catalogue's summary tables count their candidates instead of storing their scores,
# so there is nothing to cast there: sampled candidates only.


localrules:
    casting_table,


rule casting:
    input:
        # the scorer's scores, part by part with evaluation.row_chunks > 1 (read in part order)
        scores=parts_of("results/{dataset}/sampled/{scorer}/scores.parquet"),
        lib=script_inputs("casting.py"),
    output:
        "results/{dataset}/sampled/{scorer}/casting.csv",
    log:
        f"{LOGS}/casting/{{dataset}}/{{scorer}}.log",
    benchmark:
        f"{BENCH}/casting/{{dataset}}/{{scorer}}.tsv"
    conda:
        "../envs/eval.yaml"
    resources:
        # streamed a chunk of rows at a time within the library's 1 GB budget
        mem_mb=1500,
    params:
        precisions=CASTS,
        metrics=config["evaluation"]["headline"],
    script:
        "../../scripts/casting.py"


rule casting_table:
    input:
        parts=expand(
            "results/{dataset}/sampled/{scorer}/casting.csv",
            dataset=DATASETS,
            scorer=SCORERS,
        ),
        lib=script_inputs("casting_table.py"),
    output:
        csv=report(
            "results/paper/casting.csv",
            caption="../report/casting.rst",
            category="Paper tables",
        ),
        md="results/paper/casting.md",
    log:
        f"{LOGS}/casting_table.log",
    conda:
        "../envs/paper.yaml"
    params:
        results=[(d, s) for d in DATASETS for s in SCORERS],
    script:
        "../../scripts/casting_table.py"
