"""How pytest-xdist deals out the test files when they run on several workers (`-n 3 --dist loadfile`, as
CI runs them): the longest files first, so that none of them is left to run alone at the end.

xdist hands each worker a file at a time, and by default the files with the most tests first. That put
the files of a few long workflow runs (the Slurm run, the real-data run, the PyTorch workloads) last, each
alone on a worker while the others had finished: on the development VM (2026-12-07) the non-`serial`
tests took 357 s on three workers for 866 s of test time, 289 s each. Here the files with `slow` tests
go first, the longest first as measured, then every other file in its usual order; within a file, the
tests keep their order."""

from __future__ import annotations

#: the files with `slow` tests, the longest first: their seconds of test time, summed by `--durations=0`,
#: on three workers (the development VM, 2026-12-07: 160, 97, 79, 70, 63, 55, 41, 34, 32)
LONGEST_FIRST = (
    "test_workflow.py",
    "test_workload_workflow.py",
    "test_realdata.py",
    "test_training_faults.py",
    "test_slurm.py",
    "test_pytorch.py",
    "test_replication_workflow.py",
    "test_budget_workflow.py",
    "test_module.py",
    "test_measurement.py",
)


def file_ranks(items) -> dict:
    """Where each file goes: by LONGEST_FIRST, then other files with a `slow` test, then the rest."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}

    def rank(path):
        if path.name in LONGEST_FIRST:
            return LONGEST_FIRST.index(path.name)
        return len(LONGEST_FIRST) + (path not in slow)

    return {item.path: rank(item.path) for item in items}


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):  # xdist's reordering by number of tests: off
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    ranks = file_ranks(items)
    items.sort(key=lambda item: ranks[item.path])  # stable: the tests of a file keep their order
