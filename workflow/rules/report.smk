# Aggregation, statistics, the figure and the report.


# Every record is checked in a job of its own first: a refused record
# (edited, a duplicate, another learning rate) fails there, so the last good
# tables, figures and report are left exactly as they were. Its receipt (the
# records it passed) lives under logs/, outside the results.
rule check_runs:
    input:
        attempts=attempt_files,
        calibration=calibration_files(),
        extra=extra_result_files(),
        replication=replication_files,
    output:
        f"{LOGS}/checked_runs.json",
    log:
        f"{LOGS}/check_runs.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        timing_slot=1,  # nothing runs beside a timing job
    params:
        baseline=BASELINE,
        extra_runs=extra_run_folders(),
        devices=configinput.canonical(
            {label: device_info.checked_spec(spec) for label, spec in DEVICES.items()}
        ),
        workloads=configinput.canonical(WORKLOADS),
        code=stage_digest("check_runs.py"),
    script:
        "../scripts/check_runs.py"


rule aggregate:
    input:
        checked=f"{LOGS}/checked_runs.json",
        attempts=attempt_files,
        calibration=calibration_files(),
        extra=extra_result_files(),
        replication=replication_files,
    output:
        **table_outputs(),
    log:
        f"{LOGS}/aggregate.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        timing_slot=1,  # nothing runs beside a timing job
    params:
        baseline=BASELINE,
        extra_runs=extra_run_folders(),
        target_accuracy=config["target_accuracy"],
        parity_margin=config["parity_margin"],
        replication=bool(REPLICATION),
        prices=device_prices(),
        devices_auto=bool(config.get("_auto_devices")),
        unsigned_folders=COPIED_RUNS if config["trusted_keys"] else [],
        no_gpu_reason=config.get("_no_gpu_reason"),
        code=AGGREGATE_CODE_DIGEST,
    script:
        "../scripts/aggregate.py"


rule figure:
    input:
        summary=f"{RESULTS}/summary.csv",
        speedup=f"{RESULTS}/speedup.csv",
        mean_curves=f"{RESULTS}/mean_curves.csv",
        baseline=f"{RESULTS}/baseline.csv",
    output:
        **figure_outputs(),
    log:
        f"{LOGS}/figure.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        timing_slot=1,  # nothing runs beside a timing job
    params:
        figure=configinput.canonical(config["figure"]),
        target=config["target_accuracy"],
        main_workload=MAIN_WORKLOAD,
        code=FIGURE_CODE_DIGEST,
    script:
        "../scripts/figure.py"


rule report_markdown:
    input:
        **figure_inputs(),
        **{name: f"{RESULTS}/{name}.csv" for name in outputs.REPORT_TABLES},
        replication=replication_files,
        curves=f"{RESULTS}/curves.csv",
    output:
        markdown=f"{RESULTS}/report.md",
        findings=report(
            f"{RESULTS}/findings.html",
            caption="../report/findings.rst",
            category="Findings",
        ),
        explorer=report(
            f"{RESULTS}/explorer.html",
            caption="../report/explorer.rst",
            category="Explorer",
        ),
    log:
        f"{LOGS}/report.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        timing_slot=1,  # nothing runs beside a timing job
    params:
        config=report_config(),
        main_workload=MAIN_WORKLOAD,
        figures=[f.name for f in FIGURES],
        replication=REPLICATION,
        palette=config["figure"]["palette"],
        experiment=EXPERIMENT,
        code=REPORT_CODE_DIGEST,
    script:
        "../scripts/report.py"
