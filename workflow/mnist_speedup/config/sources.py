"""Configuration as it arrives: from YAML files and from ``--config``.

Snakemake hands ``--config`` values over as text unless they look like a
number or ``True``/``False`` (``seeds=[1,2]`` arrives as ``['1', '2']``,
``deterministic=true`` as ``'true'``, ``figure={dpi: 100}`` as
``{'dpi': '100'}``), and merges mappings into the file's instead of
replacing them. :func:`coerce` turns text into the type the schema asks
for where the schema does not accept text there; :func:`replace_mappings`
makes ``devices=`` on the command line replace the file's devices; and
:func:`schema_problem` reports the first schema violation in the
project's own words, naming the key and the fix.
"""

from __future__ import annotations

import copy
import math
import re

import jsonschema

from mnist_speedup.spec.run import canonical  # the rules read it here too

_INT = re.compile(r"[+-]?\d+\Z")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")
_TRUE, _FALSE, _NULL = {"true", "True", "yes"}, {"false", "False", "no"}, {"null", "None", "~", ""}

#: keys whose mapping a --config value replaces rather than extends
REPLACED_BY_COMMAND_LINE = ("devices", "workloads")


def _types(schema: dict) -> set[str]:
    kinds = schema.get("type", [])
    kinds = {kinds} if isinstance(kinds, str) else set(kinds)
    for branch in schema.get("oneOf", []) + schema.get("anyOf", []):
        kinds |= _types(branch)
        if "const" in branch:
            kinds.add("const:" + str(branch["const"]))
    if "enum" in schema:
        kinds.add("string")
    return kinds


#: NaN and the infinities as text (Python's and YAML's spellings), where a number is due
_NON_FINITE = re.compile(r"[+-]?\.?(nan|inf|infinity)\Z", re.IGNORECASE)


def _scalar(value: str, kinds: set[str]):
    if "string" in kinds or f"const:{value}" in kinds:
        return value
    if "integer" in kinds and _INT.match(value):
        return int(value)
    if ("number" in kinds or "integer" in kinds) and _FLOAT.match(value):
        return float(value)  # a fraction where a whole number is due is reported as such
    if ("number" in kinds or "integer" in kinds) and _NON_FINITE.match(value):
        return float(value.replace(".", ""))  # `nan`, `.inf` (YAML's spelling): refused as not finite, by name
    if "boolean" in kinds and value in _TRUE | _FALSE:
        return value in _TRUE
    if "null" in kinds and value in _NULL:
        return None
    return value


def _whole_only(kinds: set[str]) -> bool:
    return "integer" in kinds and "number" not in kinds


def _branch(schema: dict, kind: str) -> dict:
    """The part of ``schema`` that describes values of ``kind``."""
    for branch in schema.get("oneOf", []) + schema.get("anyOf", []):
        if kind in _types(branch):
            return branch
    return schema


def coerce(value, schema: dict):
    """``value`` with text turned into the schema's type, recursively; a
    whole-number float where only an integer fits (``2.0``, ``1e3``) becomes
    that integer, before any param is built from it."""
    if isinstance(value, str):
        value = _scalar(value, _types(schema))
    if isinstance(value, float) and value.is_integer() and _whole_only(_types(schema)):
        return int(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        items = _branch(schema, "array").get("items", {})
        return [coerce(v, items) for v in value]
    if isinstance(value, dict):
        node = _branch(schema, "object")
        props, extra = node.get("properties", {}), node.get("additionalProperties", {})
        extra = extra if isinstance(extra, dict) else {}
        return {k: coerce(v, props.get(k, extra)) for k, v in value.items()}
    return value


def non_finite(value, path: str = "") -> tuple[str, float] | None:
    """(the key, the value) of the first NaN or infinity in ``value`` at any depth, None where there is
    none: JSON-schema bounds compare false with NaN, so the schema alone lets every NaN through."""
    if isinstance(value, float) and not math.isfinite(value):
        return path or "(top level)", value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = non_finite(item, f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path else str(key))
        if found:
            return found
    return None


def replace_mappings(config: dict, command_line: dict | None) -> None:
    """``devices=...`` (or ``workloads=...``) on the command line replaces the file's mapping."""
    for key in REPLACED_BY_COMMAND_LINE:
        if command_line and key in command_line:
            config[key] = command_line[key]


def _path(error) -> str:
    text = ""
    for part in error.absolute_path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _duplicate(values: list):
    seen = []
    for v in values:
        if v in seen:
            return v
        seen.append(v)
    return None


def _explain(error) -> str:
    value = error.instance
    custom = error.schema.get("x-problem", {}).get(error.validator)
    if custom:
        return custom.format(value=value)
    if error.validator == "type" and "integer" in str(error.validator_value) and isinstance(value, float):
        return f"{value!r} must be a whole number: {value!r} is not an integer"
    if error.validator == "uniqueItems":
        return f"{_duplicate(value)!r} is listed twice"
    if error.validator == "additionalProperties":
        return f"{error.message} (an unknown key)"
    if error.validator in ("oneOf", "anyOf"):
        kinds = sorted(_types(error.schema) - {"object"}) or ["a mapping"]
        return f"{value!r} is not valid here (expected {', '.join(k.replace('const:', '') for k in kinds)})"
    return error.message


def _innermost(error):
    """For a value that fits no branch of a oneOf/anyOf, the error inside
    the branch meant for its kind (a mapping's bad label, not 'expected auto')."""
    while error.validator in ("oneOf", "anyOf") and error.context and "x-problem" not in error.schema:
        kind = "object" if isinstance(error.instance, dict) else "array" if isinstance(error.instance, list) else None
        inside = [e for e in error.context if kind and kind in _types(error.schema[error.validator][e.schema_path[0]])]
        if not inside:
            break
        error = jsonschema.exceptions.best_match(inside)
    return error


def fill_defaults(instance, schema: dict) -> None:
    """Set the schema's defaults in ``instance``, in place, where a key is absent, at every depth of
    ``properties``, of ``additionalProperties`` (each device's keys) and of the mapping branch of a ``oneOf``
    (``devices``: auto, or a mapping). No second validation: :func:`schema_problem` checked the config once
    already, where Snakemake's ``validate`` would check it again (tests/test_config_errors.py compares the two
    on every kept config)."""
    if not isinstance(instance, dict):
        return
    for branch in schema.get("oneOf", []):
        if branch.get("type") == "object":
            fill_defaults(instance, branch)
    named = schema.get("properties", {})
    for key, sub in named.items():
        if "default" in sub:
            instance.setdefault(key, copy.deepcopy(sub["default"]))
        if key in instance:
            fill_defaults(instance[key], sub)
    others = schema.get("additionalProperties")
    if isinstance(others, dict):
        for key, value in instance.items():
            if key not in named:
                fill_defaults(value, others)


def schema_problem(config: dict, schema: dict) -> str | None:
    """The first schema violation as 'config key `a.b`: ... Fix: ...'."""
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(e.absolute_path), list(map(str, e.path))))
    if not errors:
        return None
    error = _innermost(jsonschema.exceptions.best_match(errors) or errors[0])
    fix = error.schema.get("x-fix")
    fix = (
        fix.format(value=error.instance)
        if fix
        else (
            "correct it in the config file or on the command line; config/README.md lists every key with its type "
            "and an example"
        )
    )
    return f"config key `{_path(error)}`: {_explain(error)}. Fix: {fix}"


#: Where and how this machine fetches MNIST: they matter only to the download (never rerun once a file
#: is verified), so no later job takes them as a param, and a mirror URL with a password never reaches a
#: report. The time budget is one invocation's: the report names the runs it cut, and changing it reruns nothing.
MACHINE_LOCAL = ("mirrors", "download_timeout", "download_retries", "download_deadline", "time_budget_s")


def shown(config: dict) -> dict:
    """The configuration as the report and the bundle show it: resolved devices included,
    machine-local settings left out."""
    kept = {k: v for k, v in config.items() if not k.startswith("_") and k not in MACHINE_LOCAL}
    extra = {"devices_auto": bool(config.get("_auto_devices")), "no_gpu_reason": config.get("_no_gpu_reason")}
    return canonical(kept | extra)
