# MNIST MLP training speedup: CPU against GPU, with confidence intervals.
# Thin entry point: configuration, validation and rules live under workflow/.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


# the first page of `snakemake --report`: what was measured, where the findings are
report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/bundle.smk"


rule all:
    default_target: True
    input:
        final_outputs(),
