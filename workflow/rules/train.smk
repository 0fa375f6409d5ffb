# One timed training run per workload x device x batch size x seed, one
# process each, and one calibration of each device's rate at each workload's shapes.


rule train:
    input:
        data=ancient(NPZ_DIGEST),
    output:
        f"{RESULTS}/{run.RUN_PATH}",
    log:
        f"{LOGS}/{run.LOG_PATH}",
    priority: train_priority
    conda:
        tensorflow_env
    threads: device_threads
    resources:
        timing_slot=1,
        gpu=cluster_resource("gpu"),
        gpu_model=cluster_resource("gpu_model"),
    params:
        run=training_params,
        data=DATA_DIGEST,
        npz=NPZ,
        code=TRAINING_CODE_DIGEST,
    script:
        "../scripts/train.py"


rule calibrate:
    output:
        f"{RESULTS}/{records.CALIBRATION_PATH}",
    log:
        f"{LOGS}/calibrate/{{workload}}/{{device}}.log",
    priority: calibration_priority
    conda:
        tensorflow_env
    threads: device_threads
    resources:
        timing_slot=1,
        gpu=cluster_resource("gpu"),
        gpu_model=cluster_resource("gpu_model"),
    params:
        device_spec=device_spec,
        workload_spec=workload_spec,
        batch_sizes=config["batch_sizes"],
        square_size=config["calibration"]["square_size"],
        repeats=config["calibration"]["repeats"],
        code=CALIBRATION_CODE_DIGEST,
    script:
        "../scripts/calibrate.py"
