"""One registry of the report's outputs: every figure and table, once.

An entry gives its name (the rule's output name and the file's stem), its caption file
(``workflow/report/<caption>.rst``, Snakemake's HTML report and the Markdown report read the same words),
its report category, and for a figure its place. Figures are found by file (report/figures/<name>.py),
whose literal FIGURE this registry reads as data: it imports no drawing code (the aggregation script reads
it, and its rerun digest follows what it imports). The rules (rules/outputs.smk), the rule scripts
(scripts/figure.py, scripts/aggregate.py) and the report's figures section read it; figures are numbered by
their order. A new figure is one file in report/figures/ and its caption file.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Figure:
    #: its file's name in report/figures/ (which draws it), and the stem of its output files
    name: str
    caption: str
    alt: str
    #: its place among the figures (the report numbers them so)
    order: int
    #: drawn only where the config lists at least this many workloads, and its devices this many frameworks
    min_workloads: int = 1
    min_frameworks: int = 1
    category: str = "Figure"


@dataclass(frozen=True)
class Table:
    name: str
    #: None: written for the report and the user, not shown in Snakemake's HTML report
    caption: str | None = None
    #: the HTML report's label; ``{interval}`` is filled in with the speedup's interval words
    label: str = ""
    category: str = "Tables"


#: the figures' files, read as data here (each file's literal FIGURE; no drawing code imported)
FIGURE_FILES = Path(__file__).resolve().parent / "figures"


def _declared(folder: Path) -> tuple[Figure, ...]:
    """Every figure file's FIGURE, in order."""
    found = []
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        literal = next(
            (
                n.value
                for n in tree.body
                if isinstance(n, ast.Assign) and [getattr(t, "id", None) for t in n.targets] == ["FIGURE"]
            ),
            None,
        )
        if literal is None:
            raise ValueError(
                f"{path} has no FIGURE: give it one, e.g. FIGURE = {{'order': 5, 'caption': ..., 'alt': ...}}"
            )
        found.append(Figure(name=path.stem, **ast.literal_eval(literal)))
    return tuple(sorted(found, key=lambda f: f.order))


FIGURES = _declared(FIGURE_FILES)
TABLES = (
    Table("summary", "summary", "one row per run"),
    Table("speedup", "speedup", "speedup with {interval}"),
    Table("time_to_accuracy", "time_to_accuracy", "time to accuracy"),
    Table("best_against_best"),
    Table("curves"),
    Table("drift"),
    Table("time_budget"),  # the runs a time budget cut (records/attempts.py); maybe none
    # what the report shows beyond them, computed once by the aggregation (analysis/tables.py `derived`)
    Table("framework_pairs"),
    Table("within_framework"),
    Table("twins"),
    Table("geometric_means"),
    Table("warnings"),
    Table("mean_curves"),  # per device and epoch, over seeds: what the learning-curve panel draws
    Table("baseline"),
    Table("headline"),  # which settings the headline names, with each sentence's verdict and numbers
)
#: the tables the Markdown report reads (all but the per-epoch curves, which only the figures draw)
REPORT_TABLES = tuple(t.name for t in TABLES if t.name not in ("curves", "mean_curves"))


def figures(n_workloads: int, n_frameworks: int = 1) -> tuple[Figure, ...]:
    """The figures a config with ``n_workloads`` workloads and devices in ``n_frameworks`` frameworks draws, in order."""
    return tuple(f for f in FIGURES if n_workloads >= f.min_workloads and n_frameworks >= f.min_frameworks)
