# Stage 7: the evaluator table, when the config asks for it (paper.evaluators: adapter names, or
# `all`; none by default): those built-in adapters of `tieaudit probe` (library evaluators and
# numpy/pandas idioms) probed for their tie rule, with their inflation on the first dataset's
# attribute-overlap candidates. Libraries that are not installed are listed as such (the step's
# conda environment holds scikit-learn only; install the `probe` extra for the others).


rule evaluators:
    input:
        scores=probe_candidates(),
        lib=script_inputs("evaluators.py"),
    output:
        csv=report(
            "results/paper/evaluators.csv",
            caption="../report/evaluators.rst",
            category="Paper tables",
        ),
        md="results/paper/evaluators.md",
    log:
        f"{LOGS}/evaluators.log",
    benchmark:
        f"{BENCH}/evaluators.tsv"
    conda:
        "../envs/probe.yaml"
    resources:
        mem_mb=3000,
    params:
        metric=config["evaluation"]["headline"][0],
        rows=config["paper"]["evaluator_rows"],
        names=EVALUATORS,
        # measures probed per adapter: the headline measure, else the next one it computes
        # (`tieaudit probe` and evaluator_table give every measure; one keeps this step fast)
        per_adapter=1,
        # seconds one call of an adapter may take (a library call per row on `rows` rows, a
        # first call that compiles); one that takes longer is a row with the rule `error`
        timeout=900,
    script:
        "../../scripts/evaluators.py"
