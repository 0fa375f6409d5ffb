"""Rerun digests taken from the code itself.

A stage's digest is the SHA-256 of every module of this package that its
rule script imports, directly or through other modules (found by reading
the imports, never by a hand-kept list), and every plug-in module that one of
them reads (its ``PLUGINS`` glob, plugins.py). Passed as a param, it reruns
exactly the jobs whose code changed.
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

from mnist_speedup import plugins

PACKAGE = "mnist_speedup"
ROOT = Path(__file__).resolve().parent


def _file(module: str) -> Path | None:
    """The source file of ``mnist_speedup.a.b`` (a module or a package)."""
    parts = module.split(".")[1:]
    path = ROOT.joinpath(*parts)
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _package_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = [PACKAGE, *rel.parts]
    return ".".join(parts[:-1])  # a module's package; for __init__.py, the package itself


def _statements(tree: ast.Module):
    """Every statement of ``tree``, nested ones included (an import is a statement: expressions hold none)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            todo.extend(getattr(node, field, None) or ())


_IMPORTED: dict[tuple, frozenset[str]] = {}  # a parse per file version, not per stage that reaches it


def _imported(path: Path, package: str) -> frozenset[str]:
    """Modules of this package that the file at ``path`` imports."""
    stat = path.stat()
    key = (str(path), package, stat.st_mtime_ns, stat.st_size)
    if key not in _IMPORTED:
        _IMPORTED[key] = frozenset(_read_imports(path, package))
    return _IMPORTED[key]


def _plugins(tree: ast.Module, path: Path) -> set[str]:
    """The plug-in modules a module reads: those its module-level ``PLUGINS`` glob names (plugins.py)."""
    out = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["PLUGINS"]:
            found = [plugins.module_name(p) for p in plugins.files(path, ast.literal_eval(node.value))]
            out |= {*found, *(name.rsplit(".", 1)[0] for name in found)}  # each with its package
    return out


def _read_imports(path: Path, package: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = _plugins(tree, path)
    for node in _statements(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == PACKAGE}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            if base.split(".")[0] != PACKAGE:
                continue
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names if _file(f"{base}.{a.name}")}
    return {m for m in out if _file(m)}


def modules(script) -> list[Path]:
    """Every package file that ``script`` needs, sorted."""
    seen: dict[str, Path] = {}
    todo = list(_imported(Path(script), PACKAGE))
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen[name] = path = _file(name)
        todo += [m for m in _imported(path, _package_of(path)) if m not in seen]
    return sorted(seen.values())


def digest(script) -> str:
    """The digest of the package code a rule script runs (16 hex digits)."""
    h = hashlib.sha256()
    for path in modules(script):
        h.update(path.relative_to(ROOT).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]
