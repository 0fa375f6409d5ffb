"""The explorer opened as a reader opens it: Debian's Chromium, headless, offline (tests/browser.py).
The workflow's own pages (explorer, findings.html, report.zip's page) are opened in test_workflow.py."""

from __future__ import annotations

import time

import pytest

import browser
import explorer_data
from mnist_speedup.report import explorer

RUNS, CELLS = ".runs_marks path", ".cells_0_marks path"


def written(tmp_path, tables, name="explorer.html"):
    path = tmp_path / name
    path.write_text(explorer.explorer_html(tables, "cpu", "colorblind", "test"), encoding="utf-8")
    return path


def pick(page, field, value) -> None:
    """Choose ``value`` in the filter ``field``'s list, as a reader does."""
    page.select_option(f"select[name={field}]", label=str(value))


def test_every_run_and_speedup_is_drawn_and_a_filter_keeps_exactly_its_rows(tmp_path):
    t = explorer_data.tables(seeds=3)
    with browser.opened(written(tmp_path, t), wait_for=RUNS) as (page, seen):
        assert page.locator(RUNS).count() == len(t["summary"])
        assert page.locator(CELLS).count() == len(t["speedup"])
        pick(page, "device", "gpu-jax")
        page.wait_for_function(
            f"document.querySelectorAll('{RUNS}').length == {(t['summary'].device == 'gpu-jax').sum()}"
        )
        assert page.locator(CELLS).count() == (t["speedup"].device == "gpu-jax").sum()
        pick(page, "batch_size", 500)  # filters combine
        expected = ((t["summary"].device == "gpu-jax") & (t["summary"].batch_size == 500)).sum()
        page.wait_for_function(f"document.querySelectorAll('{RUNS}').length == {expected}")
        pick(page, "device", "all")
        page.wait_for_function(
            f"document.querySelectorAll('{RUNS}').length == {(t['summary'].batch_size == 500).sum()}"
        )
        page.screenshot(path=tmp_path / "explorer.png", full_page=True)
        assert seen.clean(), seen


def test_a_run_s_tooltip_names_its_record_and_a_speedup_s_its_method_n_and_parity(tmp_path):
    t = explorer_data.tables(devices=("cpu", "gpu-jax"), batches=(100,), seeds=1)
    with browser.opened(written(tmp_path, t), wait_for=RUNS) as (page, seen):
        page.locator(RUNS).nth(1).hover(force=True)
        tip = page.locator("#vg-tooltip-element")
        tip.wait_for(state="visible")
        assert t["summary"].path.iloc[1] in tip.inner_text() and "epoch times" in tip.inner_text()
        page.locator(CELLS).nth(1).hover(force=True)
        page.wait_for_function("document.querySelector('#vg-tooltip-element').innerText.includes('Fieller')")
        text = tip.inner_text()
        assert "n (runs)" in text and "PASS" in text and "[1.8, 2.2]" in text and "bootstrap" in text
        assert seen.clean(), seen


def test_record_text_is_shown_as_text_and_runs_nothing(tmp_path):
    t = explorer_data.tables(devices=("cpu", "gpu"), batches=(100,), seeds=1)
    hostile = "</script><script>window.pwned=1</script><img src=x onerror=window.pwned=2>\u2028end"
    t["summary"]["path"] = hostile
    with browser.opened(written(tmp_path, t), wait_for=RUNS) as (page, seen):
        page.locator(RUNS).nth(0).hover(force=True)
        tip = page.locator("#vg-tooltip-element")
        tip.wait_for(state="visible")
        assert hostile.split("\u2028")[0] in tip.inner_text()  # shown as the text it is
        assert page.evaluate("window.pwned") is None and page.locator("img").count() == 0
        assert page.locator(RUNS).count() == 2 and seen.clean(), seen


def test_a_page_that_fetches_is_caught(tmp_path):
    """The net itself: a page asking the network for a script is recorded (and refused), not passed."""
    path = tmp_path / "fetching.html"
    path.write_text('<!DOCTYPE html><html><head><script src="https://cdn.example/x.js"></script></head></html>')
    with browser.opened(path) as (_, seen):
        pass
    assert seen.requests == ["https://cdn.example/x.js"] and seen.errors


@pytest.mark.slow
def test_twenty_thousand_runs_open_in_the_browser(tmp_path):
    """The page's size bound's other half: at 20,000 runs it opens and draws every run (its time printed)."""
    t = explorer_data.tables(devices=("cpu", "a", "b", "c"), batches=(50, 100, 200, 500, 1000), seeds=1000, epochs=12)
    path = written(tmp_path, t)
    start = time.perf_counter()
    with browser.opened(path, wait_for=RUNS) as (page, seen):
        page.wait_for_function(f"document.querySelectorAll('{RUNS}').length == {len(t['summary'])}", timeout=120_000)
        print(f"20,000 runs: {path.stat().st_size / 1e6:.1f} MB, drawn in {time.perf_counter() - start:.1f} s")
        assert seen.clean(), seen
