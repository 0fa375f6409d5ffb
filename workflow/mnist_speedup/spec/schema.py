"""The configuration schema, read once: the only home of every default.

``workflow/schemas/config.schema.yaml`` (the catalogue's place, beside the
rules) gives each key its type, range and default. Code that needs a default (the figure's size, the target
accuracy, a run's ``step_samples``) asks here instead of writing it again.
"""

from __future__ import annotations

import functools
from pathlib import Path

import yaml

from mnist_speedup.spec import frameworks, workloads

PATH = Path(__file__).resolve().parents[2] / "schemas" / "config.schema.yaml"


@functools.cache
def load() -> dict:
    """The schema, with the frameworks' enum from their declarations (spec/frameworks.py) and the workload
    types' from their files (spec/workloads.py): neither list has a copy here to fall behind."""
    return with_registries(yaml.safe_load(PATH.read_text(encoding="utf-8")))


def with_registries(schema: dict) -> dict:
    """``schema`` with every enum that a registry owns filled in from it, in place."""
    return with_workload_types(with_frameworks(schema))


def with_frameworks(schema: dict) -> dict:
    """``schema`` with the device's ``framework`` enum (and its fix) set to the declared frameworks, in place."""
    devices = next(s for s in schema["properties"]["devices"]["oneOf"] if s.get("type") == "object")
    names = frameworks.names()
    devices["additionalProperties"]["properties"]["framework"].update(enum=names, **{"x-fix": f"use one of {names}"})
    return schema


def with_workload_types(schema: dict) -> dict:
    """``schema`` with the workload's ``type`` enum (and its fix) set to the workload types found, in place."""
    kind = schema["properties"]["workloads"]["additionalProperties"]["properties"]["type"]
    names = sorted(workloads.types())
    kind.update(enum=names, **{"x-fix": f"use one of {names}, e.g. type: mlp (the article's network)"})
    return schema


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
