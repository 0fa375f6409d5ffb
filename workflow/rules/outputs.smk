# The report stage's files, from the one registry of figures and tables
# (mnist_speedup/report/outputs.py): the rules read these, never a list of their own.
from mnist_speedup.report import outputs  # noqa: E402

# the workload the speedup figure shows; figures/scaling shows them all
MAIN_WORKLOAD = next(iter(WORKLOADS))
FIGURES = outputs.figures(
    len(WORKLOADS), len({spec["framework"] for spec in DEVICES.values()})
)


def figure_files(name):
    return expand(
        f"{RESULTS}/figures/{{name}}.{{ext}}",
        name=name,
        ext=config["figure"]["formats"],
    )


def figure_outputs():
    """The figure rule's outputs: each figure of this config, in every format."""
    return {
        f.name: report(
            figure_files(f.name),
            caption=f"../report/{f.caption}.rst",
            category=f.category,
        )
        for f in FIGURES
    }


def figure_inputs():
    """The report's inputs: each figure's files, as figure_<name>."""
    return {f"figure_{f.name}": figure_files(f.name) for f in FIGURES}


def table_outputs():
    """The aggregate rule's outputs: each table, with its caption where the
    HTML report shows it."""
    out = {}
    for t in outputs.TABLES:
        path = f"{RESULTS}/{t.name}.csv"
        if t.caption:
            label = t.label.format(interval=SPEEDUP_INTERVAL)
            caption = f"../report/{t.caption}.rst"
            path = report(
                path, caption=caption, category=t.category, labels={"table": label}
            )
        out[t.name] = path
    return out


def final_outputs(wildcards=None):
    """What `snakemake` makes by default (an input function: under replication
    the runs are those decided so far). The run attempts, the calibrations and
    the npz are listed although later jobs already read them: Snakemake (since
    7.7) does not make again a deleted file whose readers are up to date, only
    a missing input of the target itself."""
    return [
        *attempt_files(),
        *calibration_files(),
        NPZ,
        *(f"{RESULTS}/{t.name}.csv" for t in outputs.TABLES if t.caption),
        f"{RESULTS}/report.md",
        *(path for f in FIGURES for path in figure_files(f.name)),
    ]
