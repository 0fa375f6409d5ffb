"""While a call runs: a verified partial bundle and a partial report, rewritten as each run lands.

    python -m mnist_speedup.partial RESULTS OUT --config FILE [--every S] [--while-pid PID]

A machine lent for a fixed time can be taken back at any moment, and what
is on it is lost. This watcher looks at RESULTS (``results/<experiment>/``)
every few seconds; each time its finished runs change, it writes into OUT,
each file atomically (a hidden temporary file renamed into place):

- ``partial-bundle-<host>.tar.gz``: the finished runs of the call's own
  config (the runs it plans, whose records hold its settings: a record of
  another config left at one of its paths is not the call's) and the
  calibrations of its devices, in records/bundle.py's format with its
  manifest; it is read back and verified before it replaces the previous
  one, so OUT always holds a bundle that ``extra_runs`` accepts;
- ``partial-report.md``: the report of the runs so far: the same tables and
  words as the workflow's report (analysis/tables.py, report/markdown.py),
  without figures, under a line that says how many runs it holds and names
  each record left out because it failed its check.

Files that appear or vanish while it looks (a job redoing a run) never stop
it. A write that fails leaves the previous files as they were and says why on
stderr. With ``--while-pid`` it stops once that process has ended, after one
last look; without it, it looks once.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from mnist_speedup import atomic
from mnist_speedup.analysis import tables as report_tables
from mnist_speedup.config import parse as config_check
from mnist_speedup.config import sources
from mnist_speedup.records import attempts, bundle, calibration
from mnist_speedup.records import run_record as records
from mnist_speedup.report import markdown
from mnist_speedup.report.format import esc
from mnist_speedup.spec import run, schema

ROOT = Path(__file__).resolve().parents[2]
REPORT = "partial-report.md"


def load_config(path) -> dict:
    """The experiment's config as the workflow reads it: the default config, then ``path``, checked."""
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text(encoding="utf-8"))
    config.update(yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {})
    return config_check.parse(config, None, schema.PATH, gpus=[])


def write_bundle(results_dir: Path, out_dir: Path, config: dict, runs: list[Path]) -> Path | None:
    """The verified partial bundle of the finished ``runs`` (None: no run has finished yet)."""
    if not runs:
        return None
    loaded = [records.load(p) for p in runs]
    envs = [r["environment"] for r in loaded]
    files = [*runs, *calibrations(config, results_dir)]
    meta = bundle.manifest(
        results_dir,
        files,
        host=envs[0]["hostname"],
        machine_id=envs[0].get("machine_id"),
        experiment=config["experiment"],
        config=sources.shown(config) | {"partial": True},
        software=bundle.software(envs),
        training_code=loaded[0]["training_code"],
    )
    dest = out_dir / f"partial-bundle-{envs[0]['hostname']}.tar.gz"
    staged = out_dir / f".{dest.name}.staged"
    bundle.write(staged, results_dir, meta)
    try:
        bundle.check(staged)
        os.replace(staged, dest)
    finally:
        staged.unlink(missing_ok=True)
    return dest


def planned(config: dict, results_dir: Path) -> list[tuple[run.RunSpec, Path]]:
    """Each run the config plans, with its attempt's path: the call's own runs, and no other config's."""
    return [
        (
            run.RunSpec.from_config(config, w, d, run.training_device_spec(config["devices"][d]), b, s),
            attempts.attempt_path(results_dir, w, d, b, s),
        )
        for w in config["workloads"]
        for d in config["devices"]
        for b in config["batch_sizes"]
        for s in config["seeds"]
    ]


@dataclass
class Runs:
    """What a look at the results found of the config's runs."""

    kept: list[Path] = field(default_factory=list)  # finished, checked, of this config: in the bundle
    cut: list[dict] = field(default_factory=list)  # the time budget's attempts
    left_out: list[str] = field(default_factory=list)  # finished but refused: each with why


def _staged(source: Path, results_dir: Path, staging: Path) -> Path | None:
    """``source``'s bytes, read once, at its place under ``staging`` (None: it vanished meanwhile)."""
    try:
        data = source.read_bytes()
    except FileNotFoundError:
        return None
    dest = staging / source.relative_to(results_dir)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)
    return dest


def _finished(spec: run.RunSpec, path: Path, results_dir: Path, staging: Path, found: Runs) -> None:
    """File the run whose attempt is at ``path``: it is read once, into ``staging``, and every later step
    reads that copy, so a file that vanishes or is rewritten meanwhile (a job redoing the run) changes
    nothing half-way; an attempt or record that has just gone is a run not done."""
    try:
        attempt = attempts.read(path)
        if attempt["outcome"] == attempts.CUT:
            found.cut.append(attempt)
            return
        staged = _staged(attempts.record_path_of(path), results_dir, staging)
        if staged is None:
            return
        record = records.load(staged)
    except (attempts.AttemptError, records.RecordError) as exc:
        if path.exists():  # an attempt that vanished between the listing and the read is a run being redone
            found.left_out.append(str(exc).replace(str(staging), str(results_dir)))
        return
    # a run of another config at the same path (not redone yet): not this call's
    if all(run.canonical(record.get(k)) == v for k, v in spec.params().items()):
        found.kept.append(staged)


def look(config: dict, results_dir: Path, staging: Path) -> Runs:
    """The config's runs as they are now, their records and calibrations copied into ``staging``."""
    found = Runs()
    for spec, path in planned(config, results_dir):
        if path.exists():
            _finished(spec, path, results_dir, staging, found)
    for calibrated in calibrations(config, results_dir):
        _staged(calibrated, results_dir, staging)
    return found


def report_text(results_dir: Path, config: dict, runs: Runs) -> str:
    """The report of the runs so far, under a line that says what it holds and names each run left out."""
    kept, cut = runs.kept, runs.cut
    head = (
        f"> **Partial report**, written {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M:%S} UTC while the workflow ran: "
        f"{len(kept)} runs finished, {len(cut)} cut by the time budget. The workflow's own report replaces it."
    )
    if runs.left_out:
        head += f"\n>\n> Left out, {len(runs.left_out)} refused: " + " ".join(
            f"{esc(why)}" for why in runs.left_out[:5]
        )
    prices = {k: v["price_per_hour"] for k, v in config["devices"].items() if "price_per_hour" in v}
    settings = report_tables.Settings(
        config["baseline"],
        config["target_accuracy"],
        config["parity_margin"],
        prices=prices,
        devices_auto=bool(config.get("_auto_devices")),
        no_gpu_reason=config.get("_no_gpu_reason"),
    )
    try:
        made = report_tables.make(kept, settings, (), calibrations(config, results_dir), cut)
    except (records.RecordError, ValueError, KeyError, IndexError) as exc:
        return f"{markdown.TITLE} (partial)\n\n{head}\n\nNo tables yet: {esc(exc)}\n"
    tables = markdown.Tables.of(made)
    environments = {d: records.load(rows.path.iloc[0])["environment"] for d, rows in made["summary"].groupby("device")}
    baseline = made["baseline"].baseline.iloc[0]
    made_report = markdown.Report(
        tables, baseline, sources.shown(config), {}, environments, next(iter(config["workloads"]))
    )
    return markdown.render(made_report).replace(markdown.TITLE, f"{markdown.TITLE} (partial)\n\n{head}", 1)


def snapshot(results_dir, out_dir, config: dict) -> str:
    """Write both files once; returns what it wrote, in words."""
    results_dir, out_dir = Path(results_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as staging:  # one look, read once, for both files
        runs = look(config, results_dir, Path(staging))
        written = write_bundle(Path(staging), out_dir, config, runs.kept)
        atomic.write_text(out_dir / REPORT, report_text(Path(staging), config, runs))
    left = f", {len(runs.left_out)} left out" if runs.left_out else ""
    return f"{len(runs.kept)} runs{left}: {written.name if written else 'no bundle yet'} and {REPORT}"


def calibrations(config: dict, results_dir: Path) -> list[Path]:
    """The calibrations of the config's own workloads and devices that exist."""
    paths = [
        Path(results_dir, calibration.PATH.format(workload=w, device=d))
        for w in config["workloads"]
        for d in config["devices"]
    ]
    return [p for p in paths if p.is_file()]


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:  # gone since it was named
        return None


def _state(config: dict, results_dir: Path) -> tuple:
    return tuple(_mtime(path) for _, path in planned(config, results_dir))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def watch(results_dir, out_dir, config: dict, every: float, while_pid: int | None, log=print) -> None:
    """Snapshot each time the runs change, until ``while_pid`` has ended (then once more)."""
    results_dir, seen = Path(results_dir), None
    while True:
        running = while_pid is not None and _alive(while_pid)
        state = _state(config, results_dir)
        if state != seen:
            try:
                log(f"partial: {snapshot(results_dir, out_dir, config)}")
                seen = state
            except Exception as exc:  # noqa: BLE001  a failed write keeps the previous files; say why, go on
                log(f"partial: not rewritten ({type(exc).__name__}: {exc}); the previous files stay")
        if not running:
            return
        time.sleep(every)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, help="results/<experiment>/ of the running workflow")
    parser.add_argument("out", type=Path, help="the folder that comes back (the call's output folder)")
    parser.add_argument("--config", required=True, type=Path, help="the experiment's config file")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between looks (default 2)")
    parser.add_argument("--while-pid", type=int, help="keep watching while this process runs")
    args = parser.parse_args(argv)
    watch(
        args.results,
        args.out,
        load_config(args.config),
        args.every,
        args.while_pid,
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
