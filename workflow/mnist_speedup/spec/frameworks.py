"""Frameworks as the spec floor knows them: each one's declaration, read without importing it.

Each framework is one folder, ``measure/frameworks/<name>/``, whose
``framework.yaml`` declares what the rest of the workflow needs to know of it
(its name and words, its software's version fields, the modules it needs and
the pip extra that installs them, its environment file per platform, whether it
always compiles with XLA, its own environment fields). This module reads those
files (data, not code), so that the config's checks, the records' fields, the
bundles, the report and the schema's enum come from the framework's own words,
and nothing here imports a framework or anything above the spec floor. The
classes that train are registered in ``measure/frameworks/__init__.py``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import yaml

#: where each framework's folder lies
FOLDER = Path(__file__).resolve().parents[1] / "measure" / "frameworks"
#: the record's software fields that every framework has (compared between every two devices)
COMMON_SOFTWARE = ("numpy", "python", "training_code")
#: the kinds of a framework's own environment fields (records/fields.py checks them)
FIELD_KINDS = ("text", "flag", "cores", "count")


@dataclass(frozen=True)
class Declaration:
    """What one framework declares of itself in its framework.yaml."""

    name: str
    words: str
    #: the record's environment fields of its own software (compared only between devices of this framework)
    software: tuple[str, ...]
    #: the modules it needs, and the pip extra that installs them
    modules: tuple[str, ...]
    extra: str
    #: its conda environment per platform (relative to workflow/rules/)
    environments: dict
    #: whether it compiles the training step with XLA whatever `jit_compile` says
    always_compiles: bool
    #: what builds its networks, where that is not the framework itself (the report's header)
    built_with: str
    #: its own environment fields beyond its software, with their kinds
    environment: dict
    #: the framework of a device spec that names none (the original article's); one declares it
    default: bool = False
    #: its training modes (a device's ``mode``), each with its words; the first is the default
    modes: dict = dataclasses.field(default_factory=dict)
    #: the mode ``jit_compile: true`` names (a synonym kept for configs written before modes)
    jit_compile_mode: str | None = None
    #: per mode, the precisions it cannot run, each with why
    mode_refuses: dict = dataclasses.field(default_factory=dict)

    @property
    def default_mode(self) -> str | None:
        """The mode of a device that names none (the first declared); None without modes."""
        return next(iter(self.modes), None)

    def mode_of(self, spec: dict) -> str | None:
        """A device's training mode: its ``mode``, else what its ``jit_compile`` means; None without modes."""
        if not self.modes:
            return None
        if spec.get("mode"):
            return spec["mode"]
        return self.jit_compile_mode if spec.get("jit_compile") else self.default_mode

    def missing(self) -> list[str]:
        """The modules of this framework that cannot be imported here."""
        return [m for m in self.modules if importlib.util.find_spec(m) is None]

    def check_spec(self, label: str, spec: dict, fail) -> None:
        """Refuse a device spec this framework cannot run: ``fail(key, problem, fix)``."""
        if self.always_compiles and spec.get("jit_compile") is False:
            fail(
                f"devices.{label}.jit_compile",
                f"is false, but {self.words} always compiles the training step with XLA",
                f"leave jit_compile out for a {self.words} device (or use framework: tensorflow to "
                "compare without XLA)",
            )
        self._check_mode(label, spec, fail)

    def _check_mode(self, label: str, spec: dict, fail) -> None:
        mode, key = spec.get("mode"), f"devices.{label}.mode"
        if mode is None:
            return
        owners = [d.words for d in declarations().values() if d.modes]
        if not self.modes:
            fail(key, f"is {mode!r}, but {self.words} has no training modes", f"leave mode out (modes: {owners})")
        elif mode not in self.modes:
            fail(key, f"{mode!r} is not a {self.words} mode", f"use one of {', '.join(self.modes)}")
        elif spec.get("jit_compile") is not None and bool(spec["jit_compile"]) != (mode == self.jit_compile_mode):
            fail(
                f"devices.{label}.jit_compile",
                f"is {spec['jit_compile']!r} beside mode {mode!r}",
                f"give the mode alone (jit_compile: true means mode: {self.jit_compile_mode})",
            )
        elif why := self.mode_refuses.get(mode, {}).get(spec.get("precision")):
            fail(key, f"{mode!r} cannot train in {spec['precision']}: {why}", "use another mode or precision")


def _declaration(path: Path) -> Declaration:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    if raw.get("name") != path.parent.name:
        raise ValueError(f"{path}: declares name {raw.get('name')!r} in folder {path.parent.name!r}; they must agree")
    bad = {k: v for k, v in (raw.get("environment") or {}).items() if v not in FIELD_KINDS}
    if bad:
        raise ValueError(f"{path}: environment fields of unknown kinds {bad}; use one of {FIELD_KINDS}")
    return Declaration(
        name=raw["name"],
        words=raw["words"],
        software=tuple(raw["software"]),
        modules=tuple(raw["modules"]),
        extra=raw["extra"],
        environments=dict(raw["environments"]),
        always_compiles=bool(raw.get("always_compiles")),
        built_with=raw.get("built_with") or raw["words"],
        environment=dict(raw.get("environment") or {}),
        default=bool(raw.get("default")),
        modes=dict(raw.get("modes") or {}),
        jit_compile_mode=raw.get("jit_compile_mode"),
        mode_refuses=dict(raw.get("mode_refuses") or {}),
    )


@functools.cache
def declarations() -> dict[str, Declaration]:
    """Every framework, by the name a device spec gives in ``framework``, from its folder's framework.yaml."""
    return {d.name: d for d in map(_declaration, sorted(FOLDER.glob("*/framework.yaml")))}


def _default() -> str:
    chosen = [d.name for d in declarations().values() if d.default]
    if len(chosen) != 1:
        raise ValueError(f"exactly one framework.yaml must say `default: true`; {chosen or 'none'} do")
    return chosen[0]


#: the framework of a device spec that names none (the original article's: its declaration says so)
DEFAULT = _default()


def names() -> list[str]:
    return sorted(declarations())


def name_of(device_spec: dict) -> str:
    """The framework a device spec trains with (a record made before frameworks existed names none: TensorFlow)."""
    return device_spec.get("framework") or DEFAULT


def named(value) -> str:
    """The framework a table cell names (empty, missing or NaN from a table: the default's)."""
    return value if isinstance(value, str) and value else DEFAULT


def order(name: str) -> tuple[bool, str]:
    """Sort key: the article's framework first, then by name."""
    return name != DEFAULT, name


def own_software() -> tuple[str, ...]:
    """Every framework's own software fields (the common ones left out)."""
    return tuple(f for f in software() if f not in COMMON_SOFTWARE)


def of(device_spec: dict) -> Declaration:
    return declarations()[name_of(device_spec)]


def software() -> tuple[str, ...]:
    """Every software field a record may carry: each framework's own, then the common ones."""
    own = (f for d in declarations().values() for f in d.software)
    return tuple(dict.fromkeys((*own, *COMMON_SOFTWARE)))
