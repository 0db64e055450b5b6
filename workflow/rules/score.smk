# Stage 4: score each setting's candidates with each scorer, into
# results/{dataset}/{setting}/{scorer}/scores.parquet; evaluation and audit read that file
# whatever the setting (evaluate.smk).
rule score:
    input:
        candidates="results/{dataset}/candidates.parquet",
        history="data/interim/{dataset}/history.parquet",
        attributes="data/interim/{dataset}/item_attributes.parquet",
        scorer=scorer_code,
        lib=script_inputs("score.py"),
    output:
        "results/{dataset}/sampled/{scorer}/scores.parquet",
    log:
        f"{LOGS}/score/{{dataset}}/{{scorer}}.log",
    benchmark:
        f"{BENCH}/score/{{dataset}}/{{scorer}}.tsv"
    conda:
        "../envs/score.yaml"
    resources:
        # measured: max RSS 2.2 GB (Amazon), 2.5 GB (24M-row MovieLens history)
        mem_mb=4000,
    params:
        spec=scorer_spec,
    script:
        "../../scripts/score.py"


# Full-catalog setting (evaluation.candidates: [sampled, full]): every catalogue item the user
# never interacted with is a candidate. One step fits the scorer, scores users in chunks and
# reduces each row to a summary line (held-out item, n_higher/n_tied/n_lower, and per rule the tie
# members it puts first, hash seeds included), so neither the score matrix nor a tie group is
# ever stored.
rule full_scores:
    input:
        candidates="results/{dataset}/candidates.parquet",
        history="data/interim/{dataset}/history.parquet",
        heldout="data/interim/{dataset}/heldout.parquet",
        attributes="data/interim/{dataset}/item_attributes.parquet",
        scorer=scorer_code,
        lib=script_inputs("full_scores.py"),
    output:
        "results/{dataset}/full/{scorer}/scores.parquet",
    log:
        f"{LOGS}/full_scores/{{dataset}}/{{scorer}}.log",
    benchmark:
        f"{BENCH}/full_scores/{{dataset}}/{{scorer}}.tsv"
    # the longest jobs of a run: started first among the jobs ready, the short ones fill in
    priority: 1
    conda:
        "../envs/score.yaml"
    resources:
        mem_mb=6000,
    params:
        spec=scorer_spec,
        n_rows=full_rows,
        chunk_pairs=config["evaluation"]["full_chunk_pairs"],
        seeds=recorded_hash_seeds(),
        k_max=largest_cutoff(),
        positive_position=config["evaluation"]["positive_position"],
        seed=config["evaluation"]["seed"],
    script:
        "../../scripts/full_scores.py"
