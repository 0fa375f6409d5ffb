# Aggregation, statistics, the figure and the report.


rule aggregate:
    input:
        runs=run_files(),
        calibration=calibration_files(),
        extra=extra_result_files(),
    output:
        summary=report(
            "results/summary.csv",
            caption="../report/summary.rst",
            category="Tables",
            labels={"table": "one row per run"},
        ),
        speedup=report(
            "results/speedup.csv",
            caption="../report/speedup.rst",
            category="Tables",
            labels={"table": "speedup with 95% CI"},
        ),
        time_to_accuracy=report(
            "results/time_to_accuracy.csv",
            caption="../report/time_to_accuracy.rst",
            category="Tables",
            labels={"table": "time to accuracy"},
        ),
        best="results/best_against_best.csv",
        curves="results/curves.csv",
        drift="results/drift.csv",
    log:
        "logs/aggregate.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        timing_slot=1,  # nothing runs beside a timing job
    params:
        baseline=BASELINE,
        extra_runs=config["extra_runs"],
        target_accuracy=config["target_accuracy"],
        prices=device_prices(),
        code=AGGREGATE_CODE_DIGEST,
    script:
        "../scripts/aggregate.py"


rule figure:
    input:
        summary="results/summary.csv",
        speedup="results/speedup.csv",
        curves="results/curves.csv",
    output:
        speedup=report(
            figure_files("speedup"),
            caption="../report/figure.rst",
            category="Figure",
        ),
        timeline=report(
            figure_files("timeline"),
            caption="../report/timeline.rst",
            category="Figure",
        ),
    log:
        "logs/figure.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        timing_slot=1,  # nothing runs beside a timing job
    params:
        baseline=BASELINE,
        figure=config["figure"],
        target=config["target_accuracy"],
        code=FIGURE_CODE_DIGEST,
    script:
        "../scripts/figure.py"


rule report_markdown:
    input:
        summary="results/summary.csv",
        speedup="results/speedup.csv",
        time_to_accuracy="results/time_to_accuracy.csv",
        best="results/best_against_best.csv",
        drift="results/drift.csv",
        figures=figure_files("speedup"),
        timeline=figure_files("timeline"),
    output:
        "results/report.md",
    log:
        "logs/report.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        timing_slot=1,  # nothing runs beside a timing job
    params:
        baseline=BASELINE,
        config=report_config(),
        code=REPORT_CODE_DIGEST,
    script:
        "../scripts/report.py"
