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
    log:
        "logs/aggregate.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    params:
        baseline=BASELINE,
        extra_runs=config["extra_runs"],
        code=AGGREGATE_CODE_DIGEST,
    script:
        "../scripts/aggregate.py"


rule figure:
    input:
        summary="results/summary.csv",
        speedup="results/speedup.csv",
    output:
        report(
            figure_files(),
            caption="../report/figure.rst",
            category="Figure",
        ),
    log:
        "logs/figure.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    params:
        baseline=BASELINE,
        figure=config["figure"],
        code=FIGURE_CODE_DIGEST,
    script:
        "../scripts/figure.py"


rule report_markdown:
    input:
        summary="results/summary.csv",
        speedup="results/speedup.csv",
        figures=figure_files(),
    output:
        "results/report.md",
    log:
        "logs/report.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    params:
        baseline=BASELINE,
        config=report_config(),
        code=REPORT_CODE_DIGEST,
    script:
        "../scripts/report.py"
