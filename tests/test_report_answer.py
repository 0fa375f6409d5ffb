"""The report opens on the answer (issue 37.6): one headline per workload naming its largest speedup
and the article's batch size, counts in words with their plural, empty columns left out with a note,
and the loops timed said once each."""

from crafted import crafted_tables, make_record, report_tables
from mnist_speedup.report import markdown
from mnist_speedup.report.sections import header, headline


def _report(tmp_path, seeds=(1, 2, 3), batch_sizes=(100, 500), loops=None, workloads=("mlp",)):
    recs = []
    for workload in workloads:
        spec = {"type": "mlp", "hidden": [64]} if workload == "mlp" else {"type": "mlp", "hidden": [128]}
        for batch in batch_sizes:
            for s in seeds:
                jitter = 0.01 * s
                fast = 0.5 if batch == 100 else 0.8  # cpu1 is 4x faster at 100, 2.5x at 500
                recs += [
                    make_record(
                        "cpu",
                        batch,
                        s,
                        epoch_s=(2.0, 2.0 + jitter, 2.0 + 2 * jitter),
                        workload=workload,
                        workload_spec=spec,
                    ),
                    make_record(
                        "cpu1",
                        batch,
                        s,
                        threads=1,
                        epoch_s=(fast, fast + jitter / 3, fast + jitter / 5),
                        workload=workload,
                        workload_spec=spec,
                        loop={"description": (loops or {}).get(batch, "one call")},
                    ),
                ]
    summary, speedup, table, _ = crafted_tables(tmp_path, recs)
    return markdown.Report(
        report_tables(summary, speedup, table, "cpu", 0.95), "cpu", {}, {"speedup": [], "timeline": []}, {}
    )


def test_one_headline_names_the_largest_speedup_then_the_articles_batch_size(tmp_path):
    lines = headline.sentences(_report(tmp_path))
    assert len(lines) == 2
    assert lines[0].startswith("Largest of 2 settings: cpu1 (1 thread) trained 4.02× faster than cpu")
    assert "at batch size 100 (95% CI" in lines[0] and "3 seeds each" in lines[0]
    assert lines[1].startswith("At the article's batch size 500: cpu1 (1 thread) trained 2.52× faster")


def test_the_headline_words_the_aggregations_choice_and_verdicts_and_computes_none(tmp_path):
    """House 4 (4): the choice (which settings) and each verdict are the headline table's (analysis/headline.py);
    the section only words them. Planted once: the section choosing the largest speedup itself again failed
    here (it named batch 100 where the table names batch 500)."""
    report = _report(tmp_path)
    chosen = report.tables.headline
    assert list(zip(chosen.role, chosen.batch_size, chosen.verdict)) == [
        ("largest", 100, "faster"),
        ("article", 500, "faster"),
    ]
    report.tables.headline = chosen[chosen.role == "article"].assign(role="largest", verdict="indistinct")
    (line,) = headline.sentences(report)
    assert line.startswith("Largest of 2 settings: cpu1 (1 thread) and cpu (2 threads) cannot be told apart")
    assert "at batch size 500" in line


def test_each_workload_gets_its_own_headline_under_its_name(tmp_path):
    lines = headline.sentences(_report(tmp_path, batch_sizes=(500,), workloads=("mlp", "wide")))
    assert [line.split(":")[0] for line in lines] == ["MLP 784-64-10", "MLP 784-128-10"]
    assert all(": cpu1 (1 thread) trained" in line and "Largest" not in line for line in lines)
    # one workload, one setting: the sentence opens on the device's label, as written (planted: capitalised, failed)
    (alone,) = headline.sentences(_report(tmp_path / "one", batch_sizes=(500,)))
    assert alone.startswith("cpu1 (1 thread) trained")


def test_one_seed_is_one_seed_and_columns_empty_on_every_row_are_left_out_with_a_note(tmp_path):
    """The kept H200 report said "(1 seeds each)" and carried three columns of n/a (planted: the old headline)."""
    text = markdown.render(_report(tmp_path, seeds=(1,), batch_sizes=(500,)))
    assert "1 seed each" in text and "1 seeds" not in text
    table_header = next(line for line in text.splitlines() if line.startswith("| batch size | device | epoch"))
    for gone in ("95% CI", "CV seeds", "seeds for ±5%"):
        assert gone not in table_header
    assert "Left out of the tables above, empty on every row: “95% CI”, “CV seeds”, “seeds for ±5%”" in text
    assert "With 1 run per device at some setting there is no spread" in text
    full = markdown.render(_report(tmp_path / "three", seeds=(1, 2, 3), batch_sizes=(500,)))
    assert "| 95% CI |" in full and "CV seeds" in full and "there is no spread" not in full


def test_the_loops_timed_are_said_once_each_with_where_they_ran(tmp_path):
    same = header.render(_report(tmp_path))
    assert sum(line.startswith("Loop timed: one call.") for line in same) == 1
    mixed = header.render(_report(tmp_path / "b", loops={100: "100-loop", 500: "500-loop"}))
    assert "Loops timed:" in mixed and "- 100-loop (mlp on cpu1 at batch size 100)" in mixed
    assert "- 500-loop (mlp on cpu1 at batch size 500)" in mixed and not any(
        line.startswith("Loop timed") for line in mixed
    )


def test_the_speedup_section_names_the_level_its_table_uses(monkeypatch):
    """Reliability round 6 (7): under replication the method sentence said "the 95% interval" above a table
    of 97% intervals, and pointed to a README section that had moved."""
    import pandas as pd

    from mnist_speedup.report.sections import speedup as section

    class Report:
        tables = type("T", (), {"speedup": pd.DataFrame({"ci_level": [0.97], "few_runs_note": [None]})})()
        names, baseline = {"cpu": "cpu"}, "cpu"

    monkeypatch.setattr(section, "_tables", lambda report: [])  # the sentence alone
    text = "\n".join(section.render(Report()))
    assert "the 97% interval is Fieller's" in text and "the 95% interval is" not in text
    assert "docs/method.md, Replication" in text and "README" not in text
