# MNIST: fetch each file from the first mirror with a verified copy, then split.


rule download_mnist:
    output:
        "resources/mnist/{name}.gz",
    log:
        "logs/download/{name}.log",
    wildcard_constraints:
        name="|".join(mnist.FILES),
    priority: PRIORITIES.data
    retries: 0
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        timing_slot=1,  # nothing runs beside a timing job
    params:
        sha256=lambda wildcards: expected_sha256(wildcards.name),
    script:
        "../scripts/download.py"


rule prepare_mnist:
    input:
        expand("resources/mnist/{name}.gz", name=mnist.FILES),
    output:
        npz=NPZ,
        # what training depends on (see common.smk, NPZ_DIGEST)
        digest=NPZ_DIGEST,
    log:
        "logs/prepare_mnist.log",
    priority: PRIORITIES.data
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        timing_slot=1,  # nothing runs beside a timing job
    params:
        validation_size=config["validation_size"],
    script:
        "../scripts/prepare.py"
