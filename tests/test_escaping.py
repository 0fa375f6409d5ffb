"""Reliability round 6 (3): text from a record or a config reaches the report inert. A cpu_model holding
`![x](https://...)` became a live remote image in report.md, `[docs](https://...)` a link, a right-to-left
override spoofed a GPU's name, and a carriage return split summary.csv's row. Checked as GitHub shows it:
rendered by cmarkgfm (GitHub's own renderer), not read as text."""

import html
import io
import re

import cmarkgfm
import pandas as pd
import pytest

from crafted import crafted_tables, make_record, report_tables
from mnist_speedup.analysis import tables
from mnist_speedup.report import markdown
from mnist_speedup.report.format import INVISIBLE, esc, table

HOSTILE = [
    "![x](https://evil.example/x.png)",
    "[docs](https://evil.example)",
    "<https://evil.example>",
    "https://evil.example/a.png",
    "www.evil.example",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "**bold** _em_ *em* `code` ~~gone~~",
    "# heading",
    "> quote",
    "- item",
    "1. item",
    "a | b",
    "back\\slash",
    "H100 \u202eevil",
    "a\rb",
    "line\u2028break",
    "&amp; &lt;",
    "[x]: https://evil.example",
]
#: what the rendered HTML may hold: paragraphs and tables only
ALLOWED = {"p", "table", "thead", "tbody", "tr", "th", "td"}


def rendered(markdown_text: str) -> str:
    return cmarkgfm.github_flavored_markdown_to_html(markdown_text, options=cmarkgfm.cmark.Options.CMARK_OPT_UNSAFE)


def tags(html_text: str) -> set[str]:
    return {t.lower() for t in re.findall(r"<\s*/?\s*([a-zA-Z][a-zA-Z0-9]*)", html_text)}


def visible(value: str) -> str:
    """What a reader should see: the text itself, invisible characters named."""
    return INVISIBLE.sub(lambda m: " " if m.group() in "\n\t" else f"<U+{ord(m.group()):04X}>", value)


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_value_renders_as_its_own_text_in_prose_and_in_a_table_cell(value):
    """Planted once: esc without the scheme's escaped colon let `https://evil.example/a.png` become a link."""
    prose = rendered(f"Machine: {esc(value)}.")
    assert tags(prose) <= ALLOWED, prose
    assert html.unescape(re.sub(r"<[^>]+>", "", prose)).strip() == f"Machine: {visible(value)}."
    item = rendered(f"- {esc(value, line_start=True)}")
    assert (
        tags(item) <= ALLOWED | {"ul", "li"}
        and html.unescape(re.sub(r"<[^>]+>", "", item)).strip() == visible(value).strip()
    )
    cell = rendered(table(pd.DataFrame({"device": ["gpu"], "GPU": [value]})))
    assert tags(cell) <= ALLOWED, cell
    assert html.unescape(re.findall(r"<td>(.*?)</td>", cell)[1]) == visible(value)


def test_a_record_s_text_reaches_report_and_findings_inert(tmp_path):
    evil = "![x](https://evil.example/x.png) [docs](https://evil.example) \u202egpu"
    recs = [make_record("cpu", 100, s) for s in (1, 2, 3)]
    recs += [make_record("cpu1", 100, s, threads=1, environment={"cpu_model": evil}) for s in (1, 2, 3)]
    summary, speedup, tta_table, _ = crafted_tables(tmp_path, recs)
    report = markdown.Report(
        report_tables(summary, speedup, tta_table), "cpu", {}, {"speedup": []}, {"cpu1": {"cpu_model": evil}}
    )
    page = rendered(markdown.render(report))
    assert not tags(page) & {"img", "script"} and "evil.example" in page and "\u202e" not in page
    assert re.findall(r"<a [^>]*href=\"([^\"]*)\"", page) == ["explorer.html"]  # the report's own link only
    findings = markdown.findings_html(report)
    assert not tags(findings) & {"img", "a", "script"} and "\u202e" not in findings


def test_tables_round_trip_every_control_character():
    """A carriage return in a record's text split summary.csv's row, and the figure job died naming
    nothing. Planted once: pandas' default quoting lost the row."""
    text = [chr(c) for c in range(1, 32)] + ["\u2028", "\u202e", 'a "quoted", text', "x\r\ny"]
    frame = pd.DataFrame({"text": text, "n": range(len(text))})
    back = pd.read_csv(io.StringIO(tables.csv_text(frame)))
    assert list(back.text) == text and list(back.n) == list(range(len(text)))
