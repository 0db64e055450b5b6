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
        parted("results/{dataset}/sampled/{scorer}/scores.parquet"),
    log:
        parted(f"{LOGS}/score/{{dataset}}/{{scorer}}.log"),
    benchmark:
        parted(f"{BENCH}/score/{{dataset}}/{{scorer}}.tsv")
    conda:
        "../envs/score.yaml"
    resources:
        # measured: max RSS 2.2 GB (Amazon), 2.5 GB (24M-row MovieLens history), most of it the
        # fitted scorer and the history; a part of the rows scores a share of the candidates
        mem_mb=part_mem_mb(4000, 2500),
    params:
        spec=scorer_spec,
        part=row_part,
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
        parted("results/{dataset}/full/{scorer}/scores.parquet"),
    log:
        parted(f"{LOGS}/full_scores/{{dataset}}/{{scorer}}.log"),
    benchmark:
        parted(f"{BENCH}/full_scores/{{dataset}}/{{scorer}}.tsv")
    # the longest jobs of a run: started first among the jobs ready, the short ones fill in
    priority: 1
    conda:
        "../envs/score.yaml"
    resources:
        # the fitted scorer and the history, and one chunk of full_chunk_pairs scores at a time
        # (its rows' summary lines are small): a part of the rows needs little less
        mem_mb=part_mem_mb(6000, 5000),
    params:
        spec=scorer_spec,
        n_rows=full_rows,
        part=row_part,
        chunk_pairs=config["evaluation"]["full_chunk_pairs"],
        seeds=recorded_hash_seeds(),
        k_max=largest_cutoff(),
        positive_position=config["evaluation"]["positive_position"],
        seed=config["evaluation"]["seed"],
    script:
        "../../scripts/full_scores.py"


if ROW_CHUNKS > 1:

    # evaluation.row_chunks: the parts of a setting's scores (score, full_scores) concatenated
    # in part order: the file one job writes (tieaudit.pipeline.partition).
    rule merge_scores:
        input:
            parts=parts_of("results/{dataset}/{setting}/{scorer}/scores.parquet"),
            lib=script_inputs("merge_scores.py"),
        output:
            "results/{dataset}/{setting}/{scorer}/scores.parquet",
        log:
            f"{LOGS}/merge_scores/{{dataset}}/{{setting}}/{{scorer}}.log",
        benchmark:
            f"{BENCH}/merge_scores/{{dataset}}/{{setting}}/{{scorer}}.tsv"
        conda:
            "../envs/eval.yaml"
        resources:
            # the whole table once (as the evaluate step reads it without parts)
            mem_mb=2000,
        script:
            "../../scripts/merge_scores.py"
