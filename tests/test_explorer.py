"""The explorer's page as text: self-contained, inert to record text, bounded in size (report/explorer.py).
Opened in a browser: tests/test_pages.py."""

from __future__ import annotations

import json
import re

import pandas as pd

import explorer_data
from mnist_speedup.report import explorer


def spec_of(page: str) -> dict:
    """The spec as the page's script reads it (JSON.parse of the block's text)."""
    block = re.search(r'<script type="application/json" id="explorer-spec">(.*?)</script>', page, re.S)
    return json.loads(block.group(1))


def csv_of(spec: dict, name: str) -> pd.DataFrame:
    """The table behind the named chart, as Vega reads the CSV text in the spec."""
    import io

    panel = next(
        p for p in spec["vconcat"] if name in [c.get("name", "").removesuffix("_0") for c in p.get("layer", [p])]
    )
    values = spec["datasets"][panel["data"]["name"]]  # Altair moves inline data to the spec's datasets
    return pd.read_csv(io.StringIO(values), keep_default_na=False)


def test_one_mark_per_run_and_per_speedup_row_with_the_run_s_epoch_times():
    t = explorer_data.tables(seeds=2, epochs=3)
    spec = spec_of(explorer.explorer_html(t, "cpu", "colorblind", "x"))
    runs, cells = csv_of(spec, "runs"), csv_of(spec, "cells")
    assert len(runs) == len(t["summary"]) and list(runs.path) == list(t["summary"].path)
    assert len(cells) == len(t["speedup"]) and set(cells.framework) == {"jax", "pytorch"}
    first = t["curves"].query("device == 'cpu' and batch_size == 100 and seed == 1").epoch_s
    assert runs.epoch_times.iloc[0] == ", ".join(f"{x:.3g}" for x in first)
    # every filter is a drop-down with "all" first and the values the runs hold
    params = {p["name"]: p["bind"] for p in spec["params"]}
    assert list(params) == [f for f, _ in explorer.FILTERS]
    assert params["device"]["options"] == [None, "cpu", "gpu-jax", "gpu-pytorch"]
    assert params["batch_size"]["options"] == [None, 100, 500]


def test_a_long_run_lists_its_first_epochs_and_counts_the_rest():
    t = explorer_data.tables(devices=("cpu",), batches=(100,), seeds=1, epochs=explorer.EPOCHS_SHOWN + 7)
    text = explorer.runs_table(t["summary"], t["curves"]).epoch_times.iloc[0]
    assert text.count(",") == explorer.EPOCHS_SHOWN - 1 and text.endswith("(and 7 more)")


def test_record_text_cannot_end_the_script_or_split_a_line():
    t = explorer_data.tables(devices=("cpu", "gpu"), batches=(100,), seeds=1)
    hostile = "</script><script>alert(1)</script><!-- \u2028\u2029 & \"q\" 'a' | [l](http://x)"
    t["summary"]["path"] = hostile
    page = explorer.explorer_html(t, "cpu", "colorblind", "exp</title><b>")
    assert page.count("</script>") == 3  # the bundle's, the spec's and the call's: none from a record
    assert "alert(1)" not in page.replace("alert(1)\\u003c", "") or "<script>alert" not in page
    assert "<script>alert" not in page and "\u2028" not in page and "\u2029" not in page
    assert "<title>Explorer: exp&lt;/title&gt;&lt;b&gt;</title>" in page
    assert set(csv_of(spec_of(page), "runs").path) == {hostile}  # and the reader still sees it exactly


def test_nothing_is_fetched_the_policy_forbids_it():
    page = explorer.explorer_html(explorer_data.tables(seeds=1), "cpu", "colorblind", "x")
    assert "default-src 'none'" in page and "connect-src" not in page
    markup = re.sub(r"<script[^>]*>.*?</script>", "", page, flags=re.S)  # the page's own tags, not the bundle's code
    assert not re.search(r"\b(src|href)=", markup)  # the browser test (test_pages.py) watches the requests


def test_twenty_thousand_runs_stay_under_ten_megabytes():
    seeds = 20_000 // (4 * 5)
    t = explorer_data.tables(devices=("cpu", "a", "b", "c"), batches=(50, 100, 200, 500, 1000), seeds=seeds, epochs=12)
    page = explorer.explorer_html(t, "cpu", "colorblind", "big")
    assert len(t["summary"]) == 20_000
    assert len(page.encode()) < 10_000_000, f"{len(page.encode()) / 1e6:.1f} MB"
