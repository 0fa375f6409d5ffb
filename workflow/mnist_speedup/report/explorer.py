"""The explorer: one self-contained HTML page per experiment (results/<experiment>/explorer.html).

Two panels over the same filters (workload, framework, precision, device, batch size): the speedup over the
baseline with its interval per device and batch size (one mark per row of speedup.csv), and every run behind it
(one mark per row of summary.csv, at its steady epoch time, its epoch times in the tooltip). Drawn by Vega-Lite
from a spec that Vega-Altair builds; the page carries Vega, Vega-Lite and vega-embed inline (vl-convert's
bundle) and its data as CSV text inside the spec, so it opens offline: its Content-Security-Policy lets it load
nothing from anywhere. Every text from a record reaches the page inside a JSON script block whose ``<``, ``>``,
``&`` and line separators are written as escapes, so no record can end the block or add markup.
"""

from __future__ import annotations

import html
import json

import altair as alt
import pandas as pd
import vl_convert
from altair.utils._importers import vl_version_for_vl_convert
from matplotlib.colors import to_hex

from mnist_speedup.report.figure import distinct_colours
from mnist_speedup.spec import run

#: the filters, in the order the page shows them: (field, the label a reader sees)
FILTERS = (
    ("workload", "workload"),
    ("framework", "framework"),
    ("precision", "precision"),
    ("device", "device"),
    ("batch_size", "batch size"),
)
#: what a run's mark carries: summary.csv's columns, under the same names
RUN_COLUMNS = (
    "workload", "framework", "precision", "device", "batch_size", "seed", "epochs", "first_epoch_s",
    "steady_epoch_mean_s", "steady_epoch_std_s", "test_accuracy", "path",
)  # fmt: skip
#: what a speedup's mark carries: speedup.csv's columns, under the same names
CELL_COLUMNS = (
    "workload", "device", "batch_size", "n", "baseline", "baseline_n", "speedup", "speedup_ci_low",
    "speedup_ci_high", "speedup_ci_method", "bootstrap_ci_low", "bootstrap_ci_high", "bootstrap_note",
    "parity", "parity_reason",
)  # fmt: skip
#: a run's tooltip lists at most this many epoch times, then counts the rest (the page's size stays bounded)
EPOCHS_SHOWN = 20
#: nothing but the inline scripts and styles runs; nothing is fetched (images: the export menu's own)
POLICY = "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data: blob:"


def epoch_times(curves: pd.DataFrame) -> pd.Series:
    """Each run's epoch times in seconds, as one short text keyed by the run's key (spec/run.py's RUN_KEY)."""
    if curves.empty:
        return pd.Series(dtype=str)

    def listed(rows: pd.DataFrame) -> str:
        times = rows.sort_values("epoch").epoch_s.tolist()
        shown = ", ".join(f"{t:.3g}" for t in times[:EPOCHS_SHOWN])
        return shown + (f" (and {len(times) - EPOCHS_SHOWN} more)" if len(times) > EPOCHS_SHOWN else "")

    return curves.groupby(run.RUN_KEY)[["epoch", "epoch_s"]].apply(listed).rename("epoch_times")


def runs_table(summary: pd.DataFrame, curves: pd.DataFrame) -> pd.DataFrame:
    """One row per run (per row of summary.csv), with its epoch times."""
    runs = summary[list(RUN_COLUMNS)].copy()
    times = epoch_times(curves)
    runs = runs.merge(times.reset_index(), on=run.RUN_KEY, how="left") if len(times) else runs.assign(epoch_times="")
    return runs.assign(epoch_times=runs.epoch_times.fillna("not recorded"))


def cells_table(speedup: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """One row per row of speedup.csv, with its device's framework and precision (from its runs)."""
    identity = summary[["device", "framework", "precision"]].drop_duplicates("device")
    cells = speedup[list(CELL_COLUMNS)].merge(identity, on="device", how="left")
    rows = list(cells.itertuples())
    return cells.assign(
        interval=[_interval(r.speedup_ci_low, r.speedup_ci_high) for r in rows],
        bootstrap=[_interval(r.bootstrap_ci_low, r.bootstrap_ci_high, r.bootstrap_note) for r in rows],
    )


def _interval(low, high, why=None) -> str:
    """``[low, high]``, or why there is none."""
    if pd.isna(low) or pd.isna(high):
        return why if isinstance(why, str) and why else "none"
    return f"[{low:.3g}, {high:.3g}]"


def _data(table: pd.DataFrame) -> alt.InlineData:
    """The table as CSV text inside the spec (a third of the size of JSON rows), numbers parsed as numbers."""
    parse = {c: "number" for c in table.columns if pd.api.types.is_numeric_dtype(table[c])}
    parse |= {c: "string" for c in table.columns if c not in parse}
    return alt.InlineData(values=table.to_csv(index=False), format=alt.CsvDataFormat(type="csv", parse=parse))


def _filters(runs: pd.DataFrame) -> tuple[list, str]:
    """One drop-down per filter ("all" first), and the expression a mark passes when it matches every one."""
    params, tests = [], []
    for field, label in FILTERS:
        values = sorted(runs[field].dropna().unique().tolist())
        values = [v.item() if hasattr(v, "item") else v for v in values]
        bind = alt.binding_select(options=[None, *values], labels=["all", *map(str, values)], name=f"{label} ")
        params.append(alt.param(name=field, value=None, bind=bind))
        tests.append(f"({field} === null || datum.{field} === {field})")
    return params, " && ".join(tests)


def _shared(runs: pd.DataFrame, baseline: str, palette: str) -> dict:
    """The encodings both panels share: batch size across, devices side by side, a colour each, a shape per workload."""
    devices = sorted(runs.device.unique(), key=lambda d: (d != baseline, d))
    colours = [to_hex(c) for c in distinct_colours(palette, len(devices))[: len(devices)]]
    return {
        "x": alt.X("batch_size:O", title="batch size (samples per step)", axis=alt.Axis(labelAngle=0)),
        "xOffset": alt.XOffset("device:N", sort=devices),
        "color": alt.Color("device:N", sort=devices, scale=alt.Scale(domain=devices, range=colours)),
        "shape": alt.Shape("workload:N"),
    }


def chart(runs: pd.DataFrame, cells: pd.DataFrame, baseline: str, palette: str) -> alt.VConcatChart:
    """The two panels, filtered alike."""
    params, test = _filters(runs)
    shared = _shared(runs, baseline, palette)
    speedup_tip = [
        "workload:N", "device:N", "framework:N", "precision:N", alt.Tooltip("batch_size:O", title="batch size"),
        alt.Tooltip("speedup:Q", format=".3g"), alt.Tooltip("interval:N", title="interval"),
        alt.Tooltip("speedup_ci_method:N", title="interval's method"),
        alt.Tooltip("bootstrap:N", title="BCa bootstrap interval (second opinion)"), alt.Tooltip("n:Q", title="n (runs)"),
        alt.Tooltip("baseline_n:Q", title="baseline's n"), "parity:N", alt.Tooltip("parity_reason:N", title="parity's reason"),
    ]  # fmt: skip
    base = alt.Chart(_data(cells)).transform_filter(test)
    points = (
        base.mark_point(filled=True, size=70)
        .encode(
            y=alt.Y("speedup:Q", scale=alt.Scale(type="log"), title=f"speedup over {baseline} (x)"),
            tooltip=speedup_tip,
            **shared,
        )
        .properties(name="cells")
    )
    bars = (
        base.mark_rule()
        .encode(y="speedup_ci_low:Q", y2="speedup_ci_high:Q", **{k: v for k, v in shared.items() if k != "shape"})
        .properties(name="intervals")
    )
    top = alt.layer(bars, points).properties(width=520, height=240, title="Speedup, with its interval")
    run_tip = [
        "workload:N", "device:N", "framework:N", "precision:N", alt.Tooltip("batch_size:O", title="batch size"), "seed:Q",
        alt.Tooltip("steady_epoch_mean_s:Q", title="steady epoch (s)", format=".3g"),
        alt.Tooltip("steady_epoch_std_s:Q", title="its SD (s)", format=".2g"),
        alt.Tooltip("first_epoch_s:Q", title="first epoch (s)", format=".3g"),
        alt.Tooltip("epoch_times:N", title="epoch times (s)"), alt.Tooltip("test_accuracy:Q", title="test accuracy", format=".4f"),
        alt.Tooltip("path:N", title="record"),
    ]  # fmt: skip
    bottom = (
        alt.Chart(_data(runs), name="runs")
        .transform_filter(test)
        .mark_point(opacity=0.7)
        .encode(
            y=alt.Y("steady_epoch_mean_s:Q", scale=alt.Scale(type="log"), title="steady epoch time (s)"),
            tooltip=run_tip,
            **shared,
        )  # fmt: skip
        .properties(width=520, height=240, title="Every run behind it")
    )
    return alt.vconcat(top, bottom).add_params(*params).resolve_scale(color="shared", shape="shared")


def _script_json(spec: dict) -> str:
    """JSON that cannot end its script block or split a line: ``<``, ``>``, ``&``, U+2028 and U+2029 as escapes."""
    text = json.dumps(spec, ensure_ascii=True, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def page(spec: dict, title: str, intro: str) -> str:
    """The self-contained page: the inline bundle, the spec as data, and the call that draws it."""
    bundle = vl_convert.javascript_bundle(vl_version=vl_version_for_vl_convert())
    options = {"renderer": "svg", "actions": {"export": True, "source": False, "compiled": False, "editor": False}}
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;margin:1.5em;max-width:60em}.vega-bindings{margin-top:1em}"
        ".vega-bind{display:inline-block;margin-right:1.2em}</style>\n"
        f"<script>{bundle}</script></head>\n<body><h1>{html.escape(title)}</h1><p>{html.escape(intro)}</p>"
        '<div id="explorer"></div>\n'
        f'<script type="application/json" id="explorer-spec">{_script_json(spec)}</script>\n'
        "<script>vegaEmbed('#explorer', JSON.parse(document.getElementById('explorer-spec').textContent), "
        f"{json.dumps(options)}).then(function (result) {{ window.explorerView = result.view; }})"
        ".catch(function (error) { console.error(error); });</script>\n</body></html>\n"
    )


def explorer_html(tables: dict[str, pd.DataFrame], baseline: str, palette: str, experiment: str) -> str:
    """The page for an experiment's tables (summary, speedup and curves, as the aggregation wrote them)."""
    runs = runs_table(tables["summary"], tables["curves"])
    cells = cells_table(tables["speedup"], tables["summary"])
    spec = chart(runs, cells, baseline, palette).to_dict()
    intro = (
        f"{len(runs)} runs, {len(cells)} speedups over {baseline}. The upper panel shows each speedup with its "
        "interval (Fieller's, as in the report; the tooltip names the method, n and the parity check); the lower "
        "panel shows every run behind them at its steady epoch time (the tooltip lists its epoch times and its "
        "record). Pick a value in any list below the panels to show only its runs; 'all' shows every one."
    )
    return page(spec, f"Explorer: {experiment}", intro)
