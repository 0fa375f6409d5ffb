"""One registry of the report's outputs (report/outputs.py, issue 27 (7)); the
figure's markers keyed on a network type (27 (8)); every bounded interval
of the scaling figure drawn (31 (7))."""

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT
from crafted import crafted_tables, make_record, report_tables
from mnist_speedup.report import markdown, outputs, scaling_figure
from mnist_speedup.report.sections import figures as figures_section
from mnist_speedup.spec import workloads


def _report(tmp_path, figures):
    recs = [make_record(d, 100, s, threads=t) for d, t in (("cpu", 2), ("cpu1", 1)) for s in (1, 2)]
    summary, speedup, table, _ = crafted_tables(tmp_path, recs)
    tables = report_tables(summary, speedup, table, "cpu", 0.95)
    return markdown.Report(tables, "cpu", {}, figures, {})


def test_every_registered_output_has_its_caption_file():
    captions = [f.caption for f in outputs.FIGURES] + [t.caption for t in outputs.TABLES if t.caption]
    for caption in captions:
        assert (ROOT / "workflow" / "report" / f"{caption}.rst").is_file(), caption
    assert len({f.name for f in outputs.FIGURES}) == len(outputs.FIGURES)


def test_figures_are_numbered_by_their_place_among_those_drawn(tmp_path):
    """The scaling figure is Figure 3 only where it is drawn; numbers were
    written by hand before. Planted once: numbering by the registry's index
    (not among those drawn) failed the second case."""
    files = {"speedup": ["figures/speedup.png"], "timeline": ["figures/timeline.png"]}
    text = "\n".join(figures_section.render(_report(tmp_path, files)))
    assert "**Figure 1.** " + figures_section.caption_text("figure") in text
    assert "**Figure 2.** " + figures_section.caption_text("timeline") in text and "Figure 3" not in text
    only_timeline = "\n".join(figures_section.render(_report(tmp_path / "b", {"timeline": files["timeline"]})))
    assert "**Figure 1.** " + figures_section.caption_text("timeline") in only_timeline


def test_a_new_figure_is_one_file_found_by_the_registry(tmp_path, monkeypatch):
    """House 4 (5): a figure file in the folder is an entry of the registry, read without importing it, that
    the rules, the figure script and the report read (the rules' functions are tested by the workflow tests).
    Planted once: a registry that skipped files it did not list failed here."""
    import shutil

    folder = tmp_path / "figures"
    shutil.copytree(outputs.FIGURE_FILES, folder)
    (folder / "timeline2.py").write_text(
        "import this_module_is_never_imported  # noqa\n"
        "FIGURE = {'order': 9, 'caption': 'timeline', 'alt': 'second timeline'}\n"
    )
    declared = outputs._declared(folder)
    new = declared[-1]
    assert new == outputs.Figure("timeline2", "timeline", "second timeline", 9)
    monkeypatch.setattr(outputs, "FIGURES", declared)
    assert outputs.figures(1)[-1] is new  # drawn for every config, after the others
    files = {f.name: [f"figures/{f.name}.png"] for f in outputs.FIGURES}
    text = "\n".join(figures_section.render(_report(tmp_path, files)))
    assert "![second timeline](figures/timeline2.png)" in text and "**Figure 4.**" in text


def test_every_figure_file_draws():
    """The registry imports no drawing code; every figure file it found has its ``draw`` (a missing one would
    fail only in the figure job)."""
    import importlib

    for entry in outputs.FIGURES:
        assert callable(importlib.import_module(f"mnist_speedup.report.figures.{entry.name}").draw), entry.name
    assert [f.order for f in outputs.FIGURES] == sorted({f.order for f in outputs.FIGURES})  # no order twice


def test_each_network_type_has_its_own_marker_and_family_name():
    """Markers were keyed on the text "MLP"/"CNN": a third type silently got
    none. Planted once: a type without a marker fails here."""
    markers = [cls.marker for cls in workloads.types().values()]
    families = [cls.family for cls in workloads.types().values()]
    assert all(markers) and len(set(markers)) == len(markers)
    assert all(families) and len(set(families)) == len(families)


def _scaling_rows():
    """Three workloads of one device pair: the middle one alone has an
    interval (the trial's case at 2.5 GFLOP)."""
    rows = []
    for flops, ci in ((1e8, (np.nan, np.nan)), (2.5e9, (3.0, 5.0)), (1e10, (np.nan, np.nan))):
        for device in ("cpu", "gpu"):
            rows.append(
                {
                    "workload": f"w{flops:.0e}",
                    "workload_words": "MLP",
                    "batch_size": 100,
                    "device": device,
                    "baseline": "cpu",
                    "flops_per_step": flops,
                    "speedup": 1.0 if device == "cpu" else 4.0,
                    "speedup_ci_low": ci[0] if device == "gpu" else np.nan,
                    "speedup_ci_high": ci[1] if device == "gpu" else np.nan,
                    "n": 2,
                    "achieved_flops_per_s": 1e11,
                    "calibrated_flops_per_s": 2e11,
                    "ci_method": "paired Fieller 95% CI",
                    "speedup_ci_method": "paired Fieller 95% CI",
                    "ci_level": 0.95,
                    "device_type": "cpu",
                    "threads": 2,
                    "gpu_index": np.nan,
                    "gpu_name": np.nan,
                    "precision": "float32",
                    "jit_compile": False,
                    "framework": "tensorflow",
                    "host": "h",
                }
            )
    return pd.DataFrame(rows)


def test_a_lone_bounded_interval_in_the_scaling_figure_is_drawn():
    """Planted once: the band alone (fill_between between neighbours) drew
    nothing for the lone interval [3, 5] and this failed."""
    speedup = _scaling_rows()
    types = dict.fromkeys(speedup.workload, "mlp")
    fig = scaling_figure.draw(speedup, "cpu", types, {"formats": ["png"]}, {"cpu": "cpu", "gpu": "gpu"})
    ax = fig.axes[0]
    segments = [seg for c in ax.collections for seg in getattr(c, "get_segments", lambda: [])()]
    bars = [(s[0][0], s[0][1], s[1][1]) for s in segments if len(s) == 2 and s[0][0] == s[1][0]]
    assert (2.5e9, 3.0, 5.0) in [tuple(float(v) for v in b) for b in bars]


@pytest.mark.parametrize("kind", ["cnn", "mlp"])
def test_the_scaling_legend_names_each_drawn_network_family_from_its_type(kind):
    speedup = _scaling_rows()
    fig = scaling_figure.draw(speedup, "cpu", dict.fromkeys(speedup.workload, kind), {"formats": ["png"]})
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert workloads.types()[kind].family in labels
