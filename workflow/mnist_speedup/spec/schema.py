"""The configuration schema, read once: the only home of every default.

``workflow/schemas/config.schema.yaml`` (the catalogue's place, beside the
rules) gives each key its type, range and default. Code that needs a default (the figure's size, the target
accuracy, a run's ``step_samples``) asks here instead of writing it again.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import yaml

from mnist_speedup.spec import frameworks

PATH = Path(__file__).resolve().parents[2] / "schemas" / "config.schema.yaml"


@functools.cache
def load() -> dict:
    """The schema, with the frameworks' enum from their declarations (spec/frameworks.py): the
    framework list has no copy here to fall behind (the workload types' enum: spec/workloads.py's with_types)."""
    return with_frameworks(yaml.safe_load(PATH.read_text(encoding="utf-8")))


def with_frameworks(schema: dict) -> dict:
    """``schema`` with the device's ``framework`` enum (and its fix) set to the declared frameworks, in place."""
    devices = next(s for s in schema["properties"]["devices"]["oneOf"] if s.get("type") == "object")
    names = frameworks.names()
    devices["additionalProperties"]["properties"]["framework"].update(enum=names, **{"x-fix": f"use one of {names}"})
    return schema


def workload_keys(kind: str) -> dict | None:
    """A workload type's keys and their defaults (a copy; None: the schema has no entry for it)."""
    by_type = load()["properties"]["workloads"]["additionalProperties"]["x-keys-by-type"]
    return copy.deepcopy(by_type[kind]) if kind in by_type else None


def default(key: str):
    """The schema's default of a top-level key, or of ``section.key``."""
    node = load()
    for part in key.split("."):
        node = node["properties"][part]
    return node["default"]


def defaults(section: str) -> dict:
    """Every default of a mapping section, e.g. ``figure``."""
    props = load()["properties"][section]["properties"]
    return {k: v["default"] for k, v in props.items() if "default" in v}
