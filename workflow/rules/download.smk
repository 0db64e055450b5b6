# Stage 1: get the raw files: generated demo files (synthetic datasets) and downloads.
localrules:
    download,


rule synthesize:
    input:
        lib=lib("data/synthetic.py"),
    output:
        directory("data/demo/{dataset}"),
    log:
        f"{LOGS}/synthesize/{{dataset}}.log",
    conda:
        "../../environment.yml"
    params:
        spec=synthetic_params,
    script:
        "../../scripts/synthesize.py"


rule download:
    input:
        synthetic_input,
        lib=lib("data/download.py"),
    output:
        "data/raw/{dataset}/{filename}",
    log:
        f"{LOGS}/download/{{dataset}}/{{filename}}.log",
    retries: 2
    conda:
        "../../environment.yml"
    params:
        url=download_url,
        md5=download_md5,
        sha256=download_sha256,
        lockfile=download_lockfile,
    script:
        "../../scripts/download.py"
