"""Checks of the workflow configuration that a JSON schema cannot express.

``snakemake.utils.validate`` runs first (types, ranges, defaults); then
:func:`check` resolves ``devices: auto`` and checks how the keys fit
together. Every problem is a :class:`ConfigError` whose message names the
key, what is wrong, and how to fix it.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import devices as dev
from .bundle import is_bundle
from .mnist import CANONICAL_SHA256, mirror_kind

#: images in the canonical MNIST training file
MNIST_TRAIN_IMAGES = 60_000
MAX_SEED = 2**32 - 1  # what TensorFlow and NumPy accept
#: palettes that need no seaborn import to be known
FAST_PALETTES = {p + s for p in ("deep", "muted", "bright", "pastel", "dark", "colorblind") for s in ("", "6")}


class ConfigError(ValueError):
    pass


def _fail(key: str, problem: str, fix: str) -> None:
    raise ConfigError(f"config key `{key}`: {problem}. Fix: {fix}")


def _positive_ints(config: dict, key: str) -> list[int]:
    values = config.get(key)
    if not isinstance(values, list) or not values:
        _fail(key, f"must be a non-empty list of integers, got {values!r}", f"e.g. {key}: [1, 2, 3]")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int):
            _fail(key, f"{v!r} is not an integer", f"write {key} as a list of whole numbers")
    seen = set()
    for v in values:
        if v in seen:
            _fail(key, f"{v} is listed twice", f"list each value of {key} once")
        seen.add(v)
    return values


def training_set_size(config: dict) -> int:
    """Samples one epoch draws from (the subset if ``train_samples`` is set)."""
    available = MNIST_TRAIN_IMAGES - int(config.get("validation_size", 10_000))
    subset = config.get("train_samples")
    return min(available, int(subset)) if subset else available


def _check_sizes(config: dict) -> None:
    validation = int(config.get("validation_size", 10_000))
    if validation >= MNIST_TRAIN_IMAGES:
        _fail(
            "validation_size",
            f"{validation} leaves no training data (MNIST has {MNIST_TRAIN_IMAGES} training images)",
            f"use a validation_size below {MNIST_TRAIN_IMAGES}, e.g. 10000 as the original",
        )


def check_labels(config: dict) -> None:
    """Before the schema: labels are text, unique even when case is ignored."""
    devices = config.get("devices")
    if not isinstance(devices, dict):
        return
    seen = {}
    for label in devices:
        if not isinstance(label, str):
            _fail("devices", f"label {label!r} is a number, not text", f"quote it: '{label}'")
        if label.lower() in seen:
            _fail(
                "devices",
                f"labels {seen[label.lower()]!r} and {label!r} differ only in case (one folder on "
                "case-insensitive file systems)",
                "give every device a distinct label",
            )
        seen[label.lower()] = label
    if isinstance(config.get("baseline"), (int, float)) and not isinstance(config["baseline"], bool):
        _fail("baseline", f"{config['baseline']!r} is a number, not text", f"quote it: '{config['baseline']}'")


def _check_figure(config: dict) -> None:
    palette = (config.get("figure") or {}).get("palette", "colorblind")
    if palette in FAST_PALETTES:
        return
    import seaborn as sns  # only for an unusual palette name

    try:
        sns.color_palette(palette)
    except (ValueError, KeyError, TypeError):
        _fail("figure.palette", f"{palette!r} is not a palette seaborn knows", "e.g. colorblind, deep, muted, viridis")


def _check_threads(label: str, threads, limit: int) -> None:
    if isinstance(threads, bool) or not isinstance(threads, int):
        _fail(f"devices.{label}.threads", f"{threads!r} must be a whole number", "set threads: 1 or more")
    if threads < 1:
        _fail(f"devices.{label}.threads", f"{threads!r} is not a positive integer", "set threads: 1 or more")
    if threads > limit:
        _fail(
            f"devices.{label}.threads",
            f"{threads} is more than the {limit} logical cores this machine has (more threads than cores "
            "only slow training down)",
            f"use at most {limit}, or raise max_threads for a cluster whose nodes have more cores",
        )


def _check_loop(config: dict) -> None:
    per_call = config.get("steps_per_call", "epoch")
    if per_call != "epoch" and (isinstance(per_call, bool) or not isinstance(per_call, int) or per_call < 1):
        _fail("steps_per_call", f"{per_call!r} is not a positive whole number or `epoch`", "e.g. steps_per_call: epoch")
    if config.get("input_pipeline") == "host" and per_call != 1:
        _fail(
            "steps_per_call",
            f"{per_call!r} with input_pipeline: host (each batch is copied from host memory by its own call)",
            "set steps_per_call: 1 with input_pipeline: host, or use input_pipeline: device",
        )


def _check_price(label: str, spec: dict) -> None:
    if "price_per_hour" not in spec:
        return
    price = spec["price_per_hour"]
    if isinstance(price, bool) or not isinstance(price, (int, float)) or not price > 0:
        _fail(
            f"devices.{label}.price_per_hour",
            f"{price!r} is not a positive price",
            "give the device's price per hour as a number above 0, or leave the key out",
        )


def prepare(config: dict, command_line: dict | None, schema_path) -> dict:
    """Before the schema's defaults: ``devices=`` on the command line
    replaces the file's devices, text from ``--config`` becomes the type the
    schema asks for, labels are checked, and a schema violation is reported
    in the project's words (key, problem, fix)."""
    import yaml

    from . import configinput

    schema = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))
    configinput.replace_mappings(config, configinput.coerce(command_line or {}, schema))
    config.update(configinput.coerce(dict(config), schema))
    check_labels(config)
    problem = configinput.schema_problem(config, schema)
    if problem:
        raise ConfigError(problem)
    return config


def check(config: dict, gpus: list[dict] | None = None) -> dict:
    """Check ``config`` in place and return it with ``devices`` resolved."""
    for key in ("seeds", "batch_sizes"):
        _positive_ints(config, key)
    for bs in config["batch_sizes"]:
        if bs < 1:
            _fail("batch_sizes", f"{bs} is not a positive batch size", "use batch sizes of 1 or more")
    for seed in config["seeds"]:
        if not 0 <= seed <= MAX_SEED:
            _fail("seeds", f"{seed} is outside 0 to 2**32 - 1", "use seeds from 0 to 4294967295")
    epochs, warmup = config["epochs"], config["warmup_epochs"]
    if epochs < 1:
        _fail("epochs", f"{epochs} is not positive", "set epochs to 1 or more")
    if not 0 <= warmup < epochs:
        _fail(
            "warmup_epochs",
            f"{warmup} leaves no steady-state epoch to time out of epochs={epochs}",
            f"set warmup_epochs below epochs (e.g. warmup_epochs: {max(0, epochs - 1)}) or raise epochs",
        )
    _check_loop(config)
    target = config.get("target_accuracy", 0.95)
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target <= 1:
        _fail("target_accuracy", f"{target!r} is not a validation accuracy in (0, 1]", "e.g. target_accuracy: 0.95")
    _check_sizes(config)
    n_train = training_set_size(config)
    too_big = [bs for bs in config["batch_sizes"] if bs > n_train]
    if too_big:
        _fail(
            "batch_sizes",
            f"{too_big} larger than the training set ({n_train} samples per epoch)",
            "use batch sizes no larger than the training set",
        )

    _check_figure(config)
    for mirror in config["mirrors"]:
        try:
            mirror_kind(mirror)
        except ValueError as exc:
            _fail("mirrors", str(exc), "list https://, http://, file:// URLs or local directories")

    sums = config.get("mnist_sha256") or {}
    unknown = sorted(set(sums) - set(CANONICAL_SHA256))
    if unknown:
        _fail("mnist_sha256", f"unknown file names {unknown}", f"use names from {sorted(CANONICAL_SHA256)}")

    if config["devices"] == "auto":
        config["devices"] = dev.auto_devices(gpus=gpus)
        config["_auto_devices"] = True
    if not isinstance(config["devices"], dict) or not config["devices"]:
        _fail("devices", "must be `auto` or a non-empty mapping of label to spec", "see config/config.yaml")
    for label, spec in config["devices"].items():
        if not dev.is_safe_label(label):
            _fail(
                "devices",
                f"label {label!r} is not safe in a file path",
                "use letters, digits, '_' and '-' only, starting with a letter or digit (max 64)",
            )
        kind = spec.get("type") if isinstance(spec, dict) else None
        if kind not in ("cpu", "gpu"):
            _fail(f"devices.{label}.type", f"unknown device type {kind!r}", "use `cpu` or `gpu`")
        _check_price(label, spec)
        if kind == "cpu":
            spec.setdefault("threads", dev.logical_cores())
            _check_threads(label, spec["threads"], config.get("max_threads") or dev.logical_cores())
        else:
            spec.setdefault("index", 0)
            index = spec["index"]
            if isinstance(index, bool) or not isinstance(index, int) or index < 0:
                _fail(
                    f"devices.{label}.index",
                    f"{index!r} is not a GPU index",
                    "use 0, 1, ... as nvidia-smi numbers them",
                )
    if config["baseline"] not in config["devices"]:
        _fail(
            "baseline",
            f"{config['baseline']!r} is not one of the devices {sorted(config['devices'])}",
            "set baseline to one of the device labels",
        )

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
        if not (path / "runs").is_dir():
            _fail(
                "extra_runs",
                f"{folder!r} holds no runs/ folder",
                "copy another machine's results/ folder (with its runs/) there",
            )
    return config
