# One timed training run per workload x device x batch size x seed, one
# process each, and one calibration of each device's rate at each workload's shapes.


rule train:
    input:
        data=ancient(NPZ_DIGEST),
    output:
        # the attempt, not the record: a run the time budget cut leaves nothing
        # under runs/ (records/attempts.py)
        f"{RESULTS}/{attempts.ATTEMPT_PATH}",
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
        attempt=attempt_number,
        record=record_path,
        invocation=INVOCATION,
        data=DATA_DIGEST,
        npz=NPZ,
        code=TRAINING_CODE_DIGEST,
    script:
        "../scripts/train.py"


rule calibrate:
    output:
        f"{RESULTS}/{calibration.PATH}",
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


# Replication (config `replication`): after each round of blocks, the widest
# speedup interval so far; the plan reads it to add the next round or stop.
checkpoint replication_round:
    input:
        attempts=round_attempt_files,
    output:
        REPLICATION_ROUND,
    log:
        f"{LOGS}/replication/round{{round}}.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        timing_slot=1,  # nothing runs beside a timing job
    params:
        baseline=BASELINE,
        code=stage_digest("replicate.py"),
    script:
        "../scripts/replicate.py"
