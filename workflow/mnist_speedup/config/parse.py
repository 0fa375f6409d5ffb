"""The workflow configuration, checked where it enters.

:func:`parse` is the one entry: the config files are read for what a
merged config hides (a key written twice, ``devices: {}``); ``--config``
text becomes the schema's types (:func:`prepare`); the schema
(``workflow/schemas/config.schema.yaml``) checks every type, range and
uniqueness and fills in the defaults; then :func:`check` resolves
``devices: auto`` and checks what spans several keys. Every problem is a
:class:`ConfigError` whose message names the key, what is wrong, and how
to fix it.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from mnist_speedup.data.urls import mirror_kind
from mnist_speedup.records import folders
from mnist_speedup.records.bundle import is_bundle
from mnist_speedup.spec import devices as dev
from mnist_speedup.spec import frameworks, workloads
from mnist_speedup.spec.gpus import Listing
from mnist_speedup.spec.gpus import listing as gpu_listing
from mnist_speedup.spec.schema import with_frameworks

#: images in the canonical MNIST training file
MNIST_TRAIN_IMAGES = 60_000
#: palettes that need no seaborn import to be known
FAST_PALETTES = {p + s for p in ("deep", "muted", "bright", "pastel", "dark", "colorblind") for s in ("", "6")}
#: the largest figure, in pixels on a side, that is drawn (beyond it memory runs out)
MAX_FIGURE_PIXELS = 12_000


class ConfigError(ValueError):
    pass


def _fail(key: str, problem: str, fix: str) -> None:
    raise ConfigError(f"config key `{key}`: {problem}. Fix: {fix}")


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML that refuses a key written twice in one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise ConfigError(
                    f"config key `{key}` is written twice in {node.start_mark.name} (line {key_node.start_mark.line + 1});"
                    " only the last would count. Fix: keep one of them"
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def check_files(paths) -> None:
    """What Snakemake's merge of the config files would hide."""
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            data = yaml.load(fh, Loader=_UniqueKeyLoader) or {}
        if isinstance(data, dict) and data.get("devices") == {}:
            _fail(
                "devices",
                f"is an empty mapping in {path} (merged over the default it would silently become `auto`)",
                "name at least one device, e.g. devices: {cpu: {type: cpu, threads: 2}}, or write devices: auto",
            )


def _periodic(label: str) -> str | None:
    """The piece Snakemake's periodic-wildcard check would find in ``label``."""
    from snakemake.io import PeriodicityDetector

    return PeriodicityDetector().is_periodic(label)


def check_labels(config: dict) -> None:
    """Before the schema: device and workload labels are text, unique even when case is ignored."""
    for key in ("devices", "workloads"):
        if isinstance(config.get(key), dict):
            _check_label_set(key, config[key])


def _check_label_set(key: str, labels) -> None:
    seen = {}
    for label in labels:
        if not isinstance(label, str):
            _fail(key, f"label {label!r} is a number, not text", f"quote it: '{label}'")
        if label.lower() in seen:
            _fail(
                key,
                f"labels {seen[label.lower()]!r} and {label!r} differ only in case (one folder on "
                "case-insensitive file systems)",
                f"give every {key.removesuffix('s')} a distinct label",
            )
        piece = _periodic(label)
        if piece:
            _fail(
                key,
                f"label {label!r} ends in one piece repeated over and over ({piece!r}), which Snakemake takes for "
                "a rule calling itself without end",
                f"give the {key.removesuffix('s')} a shorter, plain label",
            )
        seen[label.lower()] = label


def prepare(config: dict, command_line: dict | None, schema_path, defaults: bool = False) -> dict:
    """The schema's one check: ``devices=`` on the command line replaces the
    file's devices, text from ``--config`` (and whole-number floats) become
    the type the schema asks for, labels are checked, and a schema violation
    is reported in the project's words (key, problem, fix); then, with
    ``defaults``, the schema's defaults are filled in."""
    from mnist_speedup.config import sources as configinput

    schema = workloads.with_types(with_frameworks(yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))))
    configinput.replace_mappings(config, configinput.coerce(command_line or {}, schema))
    config.update(configinput.coerce(dict(config), schema))
    found = configinput.non_finite({k: v for k, v in config.items() if not k.startswith("_")})
    if found:
        raise ConfigError(
            f"config key `{found[0]}`: {found[1]!r} is not a finite number. Fix: give a finite "
            "number (NaN and infinities are never valid), or leave the key out for its default"
        )
    check_labels(config)
    problem = configinput.schema_problem(config, schema)
    if problem:
        raise ConfigError(problem)
    if defaults:
        configinput.fill_defaults(config, schema)
    return config


def parse(config: dict, command_line: dict | None, schema_path, config_files=(), gpus=None) -> dict:
    """The whole check of a config, in place; returns it with defaults
    filled in and ``devices`` resolved."""
    check_files(config_files)
    prepare(config, command_line, schema_path, defaults=True)
    return check(config, gpus=gpus)


def training_set_size(config: dict) -> int:
    """Samples one epoch draws from (the subset if ``train_samples`` is set)."""
    available = MNIST_TRAIN_IMAGES - int(config.get("validation_size", 10_000))
    subset = config.get("train_samples")
    return min(available, int(subset)) if subset else available


def _check_epochs(config: dict) -> None:
    epochs, warmup = config["epochs"], config["warmup_epochs"]
    if not warmup < epochs:
        _fail(
            "warmup_epochs",
            f"{warmup} leaves no steady-state epoch to time out of epochs={epochs}",
            f"set warmup_epochs below epochs (e.g. warmup_epochs: {max(0, epochs - 1)}) or raise epochs",
        )
    if config.get("input_pipeline") == "host" and config.get("steps_per_call", "epoch") != 1:
        _fail(
            "steps_per_call",
            f"{config['steps_per_call']!r} with input_pipeline: host (each batch is copied from host memory by its "
            "own call)",
            "set steps_per_call: 1 with input_pipeline: host, or use input_pipeline: device",
        )
    n_train = training_set_size(config)
    too_big = [bs for bs in config["batch_sizes"] if bs > n_train]
    if too_big:
        _fail(
            "batch_sizes",
            f"{too_big} larger than the training set ({n_train} samples per epoch)",
            "use batch sizes no larger than the training set",
        )


def _check_replication(config: dict) -> None:
    rep = config.get("replication")
    if not rep:
        return
    if config.get("time_budget_s") is not None:
        _fail(
            "time_budget_s",
            "a time budget with replication: replication decides its next round from the seeds "
            "each round measured, and a budget that cuts runs would leave rounds short of seeds",
            "use one of the two: replication (it stops at its target or max_seeds) or a time budget",
        )
    if rep["max_seeds"] < len(config["seeds"]):
        _fail(
            "replication.max_seeds",
            f"{rep['max_seeds']} is below the {len(config['seeds'])} seeds listed",
            f"set max_seeds to at least {len(config['seeds'])}, or list fewer seeds",
        )
    if max(config["seeds"]) + rep["max_seeds"] - len(config["seeds"]) > 2**32 - 1:
        _fail("replication.max_seeds", "would take seeds past 2**32 - 1", "list smaller seeds")


def _check_figure(config: dict) -> None:
    figure = config.get("figure") or {}
    for side in ("width_in", "height_in"):
        pixels = figure.get(side, 1) * figure.get("dpi", 300)
        if pixels > MAX_FIGURE_PIXELS:
            _fail(
                f"figure.{side}",
                f"{figure[side]} inches at {figure.get('dpi', 300)} dpi is {pixels:,.0f} pixels, more than the "
                f"{MAX_FIGURE_PIXELS:,} this workflow draws",
                "use a journal's size (e.g. width_in: 7) or a lower dpi",
            )
    palette = figure.get("palette", "colorblind")
    if palette in FAST_PALETTES:
        return
    import seaborn as sns  # only for an unusual palette name

    try:
        sns.color_palette(palette)
    except (ValueError, KeyError, TypeError):
        _fail("figure.palette", f"{palette!r} is not a palette seaborn knows", "e.g. colorblind, deep, muted, viridis")


def _check_mirrors(config: dict) -> None:
    for mirror in config["mirrors"]:
        try:
            mirror_kind(mirror)
        except ValueError as exc:
            _fail(
                "mirrors",
                str(exc),
                "list https://, http://, file:// URLs or local directories; percent-encode @ # / ? and spaces in a "
                "password (%40 %23 %2F %3F %20), or better, leave it out of the URL and put it in ~/.netrc",
            )


def _resolve_devices(config: dict, gpus) -> None:
    if config["devices"] == "auto":
        found = gpu_listing() if gpus is None else Listing(gpus, None if gpus else "the caller passed no GPU")
        config["devices"] = dev.auto_devices(gpus=found.gpus)
        config["_auto_devices"] = True
        config["_no_gpu_reason"] = found.reason  # the report says why there is no GPU
    for label, spec in config["devices"].items():
        kind = dev.TYPES.get(spec.get("type"))
        if kind is None:
            _fail(
                f"devices.{label}.type", f"unknown device type {spec.get('type')!r}", f"use one of {sorted(dev.TYPES)}"
            )
        kind.check(label, spec, config, _fail)
        kind.check_precision(label, spec, _fail)
        _check_framework(label, spec)
        config.setdefault("_warnings", []).extend(kind.check_numerics(label, spec))
    if config["baseline"] not in config["devices"]:
        _fail(
            "baseline",
            f"{config['baseline']!r} is not one of the devices {sorted(config['devices'])}",
            "set baseline to one of the device labels",
        )


def _check_framework(label: str, spec: dict) -> None:
    """The framework a device asks for: known, able to run the spec, installed here."""
    name = spec.get("framework", frameworks.DEFAULT)
    if name not in frameworks.declarations():
        _fail(f"devices.{label}.framework", f"unknown framework {name!r}", f"use one of {frameworks.names()}")
    framework = frameworks.declarations()[name]
    platform = dev.TYPES[spec["type"]].platform
    if platform.name not in framework.environments:
        able = [n for n, d in frameworks.declarations().items() if platform.name in d.environments]
        _fail(
            f"devices.{label}.framework",
            f"{name} declares no environment for the {platform.words} platform",
            f"use one of {able} on device {label}",
        )
    framework.check_spec(label, spec, _fail)
    missing = framework.missing()
    if missing:
        _fail(
            f"devices.{label}.framework",
            f"{name} needs {', '.join(missing)}, which is not installed in this environment",
            f"pip install -e '.[{framework.extra}]', or use another framework for device {label}",
        )


def _resolve_workloads(config: dict) -> None:
    """Each workload's spec with its type's defaults filled in (so that
    writing a default out reruns nothing), keys of another type refused."""
    resolved = {}
    for label, spec in config["workloads"].items():
        kind = workloads.types()[spec["type"]]
        foreign = sorted(set(spec) - set(kind.keys) - {"type"})
        if foreign:
            _fail(
                f"workloads.{label}",
                f"{foreign} {'is not a key' if len(foreign) == 1 else 'are not keys'} of a {kind.type} workload",
                f"use only {sorted(kind.keys)} with type: {kind.type}",
            )
        workload = kind(spec)
        workload.check(label, _fail)
        resolved[label] = kind.with_defaults(spec)
        same = [other for other, known in resolved.items() if other != label and known == resolved[label]]
        if same:
            _fail(
                f"workloads.{label}",
                f"is the same network as workloads.{same[0]} ({workload.words()}): the "
                "headline would say the same thing twice and the geometric mean would count it twice",
                f"keep one of {same[0]} and {label}",
            )
    config["workloads"] = resolved


def _check_trusted_keys(config: dict) -> None:
    """With trusted_keys, its file must exist, and nothing unsigned is merged unless the config says so."""
    keys = config.get("trusted_keys")
    if not keys:
        return
    if not Path(keys).is_file() or not os.access(keys, os.R_OK):
        _fail(
            "trusted_keys",
            f"{keys!r} is not a readable file",
            "point it at an OpenSSH allowed-signers file (`principal key-type key` per line), or leave it out",
        )
    unsigned = [f for f in config.get("extra_runs") or [] if not is_bundle(f)]
    if unsigned and not config.get("allow_unsigned_folders"):
        _fail(
            "extra_runs",
            f"{unsigned[0]!r} is a folder, and with trusted_keys only signed bundles are merged",
            "bundle it on its machine (`snakemake --cores 1 bundle` with bundle_signing_key set) and list the "
            ".tar.gz, or set allow_unsigned_folders: true to merge it unsigned",
        )


def _check_extra_runs(config: dict) -> None:
    _check_trusted_keys(config)
    for folder in config.get("extra_runs") or []:
        path = Path(folder)
        if is_bundle(folder):
            if not path.is_file() or not os.access(path, os.R_OK):
                _fail(
                    "extra_runs",
                    f"{folder!r} is not a readable file",
                    "point it at a bundle made by `snakemake --cores 1 bundle` on the other machine",
                )
            continue
        if not path.is_dir() or not os.access(path, os.R_OK | os.X_OK):
            _fail(
                "extra_runs",
                f"{folder!r} is not a readable directory",
                "point it at a folder that holds a runs/ tree, or at a results bundle (.tar.gz)",
            )
        found = folders.problem(path, f"results/{config['experiment']}")
        if found:
            _fail("extra_runs", *found)


def check(config: dict, gpus: list[dict] | None = None) -> dict:
    """What spans several keys, after the schema: check ``config`` in place
    and return it with ``devices`` resolved."""
    _check_epochs(config)
    _check_replication(config)
    _check_figure(config)
    _check_mirrors(config)
    _resolve_devices(config, gpus)
    _resolve_workloads(config)
    _check_extra_runs(config)
    return config


def check_executor(config: dict, local: bool) -> None:
    """``devices: auto`` only where the jobs run on this machine: with a
    cluster executor the Snakefile is parsed on the submit (login) node,
    which has other GPUs or none, and again on each compute node."""
    if config.get("time_budget_s") is not None and not local:
        _fail(
            "time_budget_s",
            "the time budget is kept by the jobs of one machine's invocation; with a cluster "
            "executor (Slurm) each job waits in a queue the budget cannot see",
            "leave time_budget_s out (null) on a cluster, and set the job's time limit there instead",
        )
    if config.get("_auto_devices") and not local:
        found = ", ".join(f"{label} ({dev.of(spec).describe()})" for label, spec in sorted(config["devices"].items()))
        _fail(
            "devices",
            "`auto` is detected where the Snakefile is parsed, which with a cluster executor (Slurm) "
            f"is the submit node, not the node a job runs on (here it found {found})",
            "name the devices the jobs should use, e.g. devices: {gpu: {type: gpu, index: 0}, cpu: {type: cpu, "
            "threads: 16}}; inside a Slurm GPU job, index 0 is the first card Slurm gave the job",
        )
