"""Plug-ins found by folder (as benchopt finds its solvers): every module a glob names is read, and each
contributes the entries of one of its dictionaries. A new plug-in is one new file there.

A module that reads plug-ins names them in a module-level ``PLUGINS = "<glob>"`` (relative to its own
folder) and passes that constant here: codedigest.py reads the same constant, so a run's code digest covers
every plug-in file it may run (a new or edited layer file reruns the training it changes)."""

from __future__ import annotations

import importlib
from pathlib import Path

#: the package's folder: module names are paths below it
ROOT = Path(__file__).resolve().parent


class PluginError(RuntimeError):
    """Two plug-ins of one folder claim the same name."""


def files(module_file, pattern: str) -> list[Path]:
    """The plug-in files ``pattern`` names beside ``module_file`` (names starting with ``_`` left out), sorted."""
    folder = Path(module_file).resolve().parent
    return sorted(p.resolve() for p in folder.glob(pattern) if p.suffix == ".py" and not p.name.startswith("_"))


def module_name(path: Path) -> str:
    return ".".join([ROOT.name, *path.resolve().relative_to(ROOT).with_suffix("").parts])


def collect(module_file, pattern: str, attribute: str) -> dict:
    """The union of the ``attribute`` dictionaries of every plug-in module ``pattern`` names beside
    ``module_file`` that has one; a name claimed by two modules is refused with both named."""
    found, owner = {}, {}
    for path in files(module_file, pattern):
        module = importlib.import_module(module_name(path))
        for name, value in getattr(module, attribute, {}).items():
            if name in found:
                raise PluginError(
                    f"{attribute} {name!r} is defined twice, in {owner[name]} and in {module.__name__}: "
                    "rename one of them"
                )
            found[name], owner[name] = value, module.__name__
    return found


def layer_kind(kinds: dict, layer, framework: str):
    """How ``framework`` builds ``layer`` (a spec/workloads.py Layer), from its layer kinds ``kinds``; a kind
    it lacks is named with the file to add."""
    try:
        return kinds[layer.kind]
    except KeyError:
        raise PluginError(
            f"{framework} has no layer kind {layer.kind!r}: add it to a file in "
            f"workflow/mnist_speedup/measure/frameworks/{framework}/layers/ (LAYERS = {{{layer.kind!r}: ...}})"
        ) from None
