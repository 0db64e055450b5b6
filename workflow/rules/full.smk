# Full-catalog evaluation (evaluation.candidates: [sampled, full]): every catalogue item the user
# never interacted with is a candidate. One step fits the scorer, scores users in chunks and
# reduces each row to a summary line (held-out item, n_higher/n_tied/n_lower, and per rule the tie
# members it puts first, hash seeds included), so neither the score matrix nor a tie group is
# ever stored; evaluation and audit are the sampled rules on that summary table.
rule full_scores:
    input:
        candidates="results/{dataset}/candidates.parquet",
        history="data/interim/{dataset}/history.parquet",
        heldout="data/interim/{dataset}/heldout.parquet",
        attributes="data/interim/{dataset}/item_attributes.parquet",
        lib=lib(
            "_arrays.py",
            "evaluate.py",
            "fullcatalog.py",
            "hashing.py",
            "sampling.py",
            "seeds.py",
            "split.py",
            "scorers/__init__.py",
            "scorers/_ids.py",
            "scorers/base.py",
            "scorers/attribute.py",
            "scorers/matrix.py",
            "scorers/popularity.py",
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
        seeds=recorded_hash_seeds(),
        k_max=largest_cutoff(),
        positive_position=config["evaluation"]["positive_position"],
        seed=config["evaluation"]["seed"],
    script:
        "../../scripts/full_scores.py"


use rule evaluate as evaluate_full with:
    input:
        scores="results/{dataset}/full/{scorer}/scores.parquet",
        lib=lib(
            "candidates.py",
            "evaluate.py",
            "hashing.py",
            "measures.py",
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
