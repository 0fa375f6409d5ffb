# One timed training run per device x batch size x seed, one process each.


rule train:
    input:
        data="resources/mnist/mnist.npz",
    output:
        "results/runs/{device}/bs{batch_size}/seed{seed}.json",
    log:
        "logs/train/{device}/bs{batch_size}/seed{seed}.log",
    conda:
        "../../envs/tensorflow.yaml"
    threads: device_threads
    resources:
        timing_slot=1,
    params:
        run=training_params,
        code=TRAINING_CODE_DIGEST,
    script:
        "../scripts/train.py"
