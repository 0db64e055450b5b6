# Stage 1: get the raw files: generated demo files (synthetic datasets) and downloads.
localrules:
    download,


rule synthesize:
    input:
        lib=source_inputs("synthesize.py", "generator"),
    output:
        directory("data/demo/{dataset}"),
    log:
        f"{LOGS}/synthesize/{{dataset}}.log",
    conda:
        "../envs/data.yaml"
    params:
        spec=synthetic_params,
    script:
        "../../scripts/synthesize.py"


# One file of a dataset, in a folder named after its logical key. Transient failures (a dropped
# connection, a timeout, HTTP 5xx) are retried and resumed inside the step; the rest (a checksum
# or lock-file mismatch, HTTP 404, an HTML page for a file) would fail again, so no retries here,
# which also overrides a profile's `retries:`. The copy is flagged `update`: Snakemake keeps the
# previous copy while the step runs and puts it back if the step fails (an edited local input
# that is no longer a whole file, say), so a failed run never loses the last good copy; the step
# itself writes a `.part` and renames it only once it is verified.
rule download:
    input:
        download_source,
        lib=script_inputs("download.py"),
    output:
        update("data/raw/{dataset}/{key}/{filename}"),
    log:
        f"{LOGS}/download/{{dataset}}/{{key}}/{{filename}}.log",
    wildcard_constraints:
        key=r"[^/]+",
        filename=r"[^/]+",
    retries: 0
    conda:
        "../envs/data.yaml"
    params:
        url=download_url,
        md5=download_md5,
        sha256=download_sha256,
        format=download_format,
        lockfile=download_lockfile,
    script:
        "../../scripts/download.py"
