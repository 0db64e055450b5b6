# tieaudit: the paper's experiment, from raw downloads to tables, figures and a report.
#   snakemake --cores 2                                   (the paper: config/config.yaml)
#   snakemake --cores 2 --configfile config/demo.yaml     (offline demo on generated data)
from snakemake.utils import min_version, validate

min_version("9.0")


# The paper's experiment, unless --configfile names another (which then replaces it whole).
if not workflow.overwrite_configfiles:

    configfile: f"{workflow.basedir}/config/config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/download.smk"
include: "workflow/rules/prepare.smk"
include: "workflow/rules/candidates.smk"
include: "workflow/rules/score.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/paper.smk"
include: "workflow/rules/probe.smk"
include: "workflow/rules/casting.smk"


# A failed step's one-line reason is repeated as the run's last lines (tieaudit.pipeline.workflow).
onstart:
    forget_failures()


onerror:
    say_failures()


rule all:
    default_target: True
    input:
        all_outputs(),
