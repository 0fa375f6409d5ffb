"""Plug-ins found by folder (as benchopt finds its solvers): every module of a package's folder is read,
and each contributes the entries of one of its dictionaries. A new plug-in is one new file there."""

from __future__ import annotations

import importlib
import pkgutil


class PluginError(RuntimeError):
    """Two plug-ins of one folder claim the same name."""


def modules(package: str) -> list:
    """Every module of ``package``'s folder (those whose names start with ``_`` left out), in name order."""
    folder = importlib.import_module(package)
    names = sorted(m.name for m in pkgutil.iter_modules(folder.__path__) if not m.name.startswith("_"))
    return [importlib.import_module(f"{package}.{name}") for name in names]


def collect(package: str, attribute: str) -> dict:
    """The union of the ``attribute`` dictionaries of every module of ``package`` that has one; a name claimed
    by two modules is refused with both named."""
    found, owner = {}, {}
    for module in modules(package):
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
