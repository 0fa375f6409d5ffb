"""Folders of other machines' records (``extra_runs``): what one holds,
checked when the config is read, so that a folder that would merge nothing
is refused with what was found, where, and the fix, never silently skipped."""

from __future__ import annotations

import re
from pathlib import Path

from mnist_speedup.spec import run

#: the layout of the version before workloads: runs/<device>/bs<N>/seed<S>.json
_BEFORE_WORKLOADS = re.compile(r"[^/]+/bs[0-9]+/seed[0-9]+\.json\Z")
#: how deep below a folder a copied results/ tree's runs/ is looked for
_SEARCH_DEPTH = 3


def _where_runs_is(folder: Path) -> list[Path]:
    found = []
    for depth in range(1, _SEARCH_DEPTH + 1):
        found += [p for p in folder.glob("/".join(["*"] * depth) + "/runs") if p.is_dir()]
    return sorted(found)


def _records(runs: Path) -> list[str]:
    return sorted(p.relative_to(runs).as_posix() for p in runs.rglob("*.json"))


def problem(folder, own_results) -> tuple[str, str] | None:
    """(what is wrong, the fix) for an ``extra_runs`` folder, or None where it
    holds records in this version's layout (runs/<workload>/<device>/bs<N>/seed<S>.json)."""
    folder = Path(folder)
    if folder.resolve() == Path(own_results).resolve():
        return (
            f"{str(folder)!r} is this experiment's own results folder ({own_results}): its runs are "
            "already in the report",
            "remove it from extra_runs",
        )
    runs = folder / "runs"
    if not runs.is_dir():
        below = _where_runs_is(folder)
        if below:
            return (
                f"{str(folder)!r} holds no runs/ folder of its own, but {below[0]} is one (a whole results/ "
                "folder copied in?)",
                f"point extra_runs at {below[0].parent}",
            )
        return (
            f"{str(folder)!r} holds no runs/ folder",
            "copy the experiment folder of another machine's results/ (results/<experiment>, the folder that "
            "holds runs/) there, or point extra_runs at a bundle (.tar.gz)",
        )
    found = _records(runs)
    if not found:
        return f"{runs} holds no run records (it is empty)", "copy the other machine's runs/ tree into it, or remove it"
    stray = [f for f in found if not (re.fullmatch(run.RUN_REGEX, f"runs/{f}") and f.count("/") == 3)]
    return _stray(runs, stray) if stray else None


def _stray(runs: Path, found: list[str]) -> tuple[str, str]:
    """What the JSON files outside this version's layout are (none of them would be merged)."""
    first = found[0]
    if all(_BEFORE_WORKLOADS.match(f) for f in found):
        return (
            f"{runs} holds {len(found)} records in the layout of a version before workloads "
            f"(runs/<device>/bs<N>/seed<S>.json, e.g. runs/{first}): they trained the MLP only and cannot be "
            "compared with today's runs",
            "rerun those runs with this version on that machine, or aggregate them with the version that made them",
        )
    deep = [f for f in found if f.count("/") > 3]
    if deep:
        extra = Path(deep[0]).parts[0]
        return (
            f"{runs} holds records one level too deep (e.g. runs/{deep[0]}, under an extra folder {extra!r})",
            f"move the contents of {runs / extra} up into {runs}, or point extra_runs at the folder that holds "
            f"the runs/ tree",
        )
    return (
        f"{runs} holds {len(found)} JSON file(s) where no run record lies (a record lies at "
        f"runs/<workload>/<device>/bs<N>/seed<S>.json), e.g. runs/{first}",
        "remove them, or copy the other machine's results/<experiment> folder as it is",
    )
