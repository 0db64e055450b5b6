# Full-catalog evaluation (evaluation.candidates: [sampled, full]): every catalogue item the user
# never interacted with is a candidate. One step fits the scorer, scores users in chunks and keeps
# per row the held-out item, its tie group and the n_higher/n_lower counts (the full score matrix
# is never written); hash seeds, evaluation and audit are the sampled rules on that file.
rule full_scores:
    input:
        candidates="results/{dataset}/candidates.parquet",
        history="data/interim/{dataset}/history.parquet",
        heldout="data/interim/{dataset}/heldout.parquet",
        attributes="data/interim/{dataset}/item_attributes.parquet",
        lib=lib(
            "fullcatalog.py",
            "sampling.py",
            "scorers/__init__.py",
            "scorers/base.py",
            "scorers/attribute.py",
        ),
    output:
        "results/{dataset}/full/{scorer}/scores.parquet",
    log:
        f"{LOGS}/full_scores/{{dataset}}/{{scorer}}.log",
    benchmark:
        f"{BENCH}/full_scores/{{dataset}}/{{scorer}}.tsv"
    conda:
        "../../environment.yml"
    resources:
        mem_mb=6000,
    params:
        spec=scorer_spec,
        n_rows=full_rows,
        chunk_pairs=config["evaluation"]["full_chunk_pairs"],
        max_lines=config["evaluation"]["full_max_lines"],
    script:
        "../../scripts/full_scores.py"


use rule hash_seeds as hash_seeds_full with:
    input:
        scores="results/{dataset}/full/{scorer}/scores.parquet",
        lib=lib("candidates.py", "evaluate.py", "hashing.py", "measures.py"),
    output:
        "results/{dataset}/full/{scorer}/hash_seeds/chunk{chunk}.npy",
    log:
        f"{LOGS}/hash_seeds_full/{{dataset}}/{{scorer}}/chunk{{chunk}}.log",
    benchmark:
        f"{BENCH}/hash_seeds_full/{{dataset}}/{{scorer}}/chunk{{chunk}}.tsv"


use rule evaluate as evaluate_full with:
    input:
        scores="results/{dataset}/full/{scorer}/scores.parquet",
        chunks=expand(
            "results/{{dataset}}/full/{{scorer}}/hash_seeds/chunk{chunk}.npy",
            chunk=seed_chunks(),
        ),
        lib=lib(
            "candidates.py",
            "evaluate.py",
            "hashing.py",
            "measures.py",
            "rules.py",
            "io.py",
        ),
    output:
        metrics=report(
            "results/{dataset}/full/{scorer}/metrics.csv",
            caption="../report/metrics.rst",
            category="Metrics (full catalogue)",
            subcategory="{dataset}",
            labels={"dataset": "{dataset}", "scorer": "{scorer}"},
        ),
    log:
        f"{LOGS}/evaluate_full/{{dataset}}/{{scorer}}.log",
    benchmark:
        f"{BENCH}/evaluate_full/{{dataset}}/{{scorer}}.tsv"


use rule audit as audit_full with:
    input:
        scores="results/{dataset}/full/{scorer}/scores.parquet",
        lib=lib("audit.py", "candidates.py", "evaluate.py", "hashing.py", "io.py"),
    output:
        invariance="results/{dataset}/full/{scorer}/audit/invariance.csv",
        diagnostics="results/{dataset}/full/{scorer}/audit/diagnostics.csv",
        checklist=report(
            "results/{dataset}/full/{scorer}/audit/checklist.md",
            caption="../report/checklist.rst",
            category="Audit (full catalogue)",
            subcategory="{dataset}",
            labels={"dataset": "{dataset}", "scorer": "{scorer}"},
        ),
    log:
        f"{LOGS}/audit_full/{{dataset}}/{{scorer}}.log",
    benchmark:
        f"{BENCH}/audit_full/{{dataset}}/{{scorer}}.tsv"
