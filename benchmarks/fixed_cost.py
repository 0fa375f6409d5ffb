"""A run's fixed cost, per device, from the records of a results folder or a bundle (issue 39.2).

    python benchmarks/fixed_cost.py results/gpu            # or a bundle-<host>.tar.gz

The fixed cost is what a run's process spends before its first timed epoch: process start (and
Snakemake's script preamble), the framework's import, loading the data, building the model, placing the
data, compiling, and the rate probe where the run took one (``setup_s`` of each record, less the wait
for the timing lock). It prints the median per device, and that median without the framework's import
(issue 38's budget: at most 5 s with warm caches), beside the job's whole wall time and its epochs.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))
from mnist_speedup.measure import budget  # noqa: E402
from mnist_speedup.records import bundle  # noqa: E402
from mnist_speedup.records import run_record as records  # noqa: E402
from mnist_speedup.spec import run  # noqa: E402

PARTS = ("before_run_s", "import_s", "data_load_s", "build_s", "data_to_device_s", "trace_s", "rate_probe_s")


def fixed_costs(results_dir) -> dict[str, dict[str, float]]:
    by_device: dict[str, list[dict]] = {}
    for path in run.run_files(results_dir):
        record = records.load(path)
        setup = {k: record["setup_s"].get(k) or 0.0 for k in PARTS}
        setup["before_run_s"] = max(0.0, setup["before_run_s"] - (record.get("lock_wait_s") or 0.0))
        fixed = sum(setup.values())
        by_device.setdefault(record["device"], []).append({
            "fixed_s": fixed, "beyond_import_s": fixed - setup["import_s"], "import_s": setup["import_s"],
            "trace_s": setup["trace_s"], "rate_probe_s": setup["rate_probe_s"],
            "job_s": budget.duration_s(record), "epochs_s": sum(record["timing"]["epoch_s"]),
        })  # fmt: skip
    return {d: {k: statistics.median(r[k] for r in rows) for k in rows[0]} | {"runs": len(rows)}
            for d, rows in sorted(by_device.items())}  # fmt: skip


def main(source: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(source)
        if bundle.is_bundle(source):
            bundle.unpack(source, Path(tmp) / "b")
            folder = Path(tmp) / "b"
        print(f"{'device':<20} runs  fixed  beyond-import  import  compile  probe    job  epochs   (medians, s)")
        for device, m in fixed_costs(folder).items():
            print(f"{device:<20} {m['runs']:>4} {m['fixed_s']:>6.2f} {m['beyond_import_s']:>14.2f} {m['import_s']:>7.2f} "
                  f"{m['trace_s']:>8.2f} {m['rate_probe_s']:>6.2f} {m['job_s']:>6.2f} {m['epochs_s']:>7.2f}")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1])
