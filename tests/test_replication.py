"""Issue 21: replication until the interval is tight, its stopping rule and its bias."""

import copy

import numpy as np
import pytest

from conftest import ROOT
from crafted import crafted_tables, make_record
from mnist_speedup.analysis import replication, stats
from mnist_speedup.config import parse as config_check

SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
BASE = {
    "mirrors": ["/data/mnist"],
    "devices": {"cpu": {"type": "cpu", "threads": 1}},
    "seeds": [1, 2, 3],
    "batch_sizes": [100],
    "epochs": 3,
}


def refused(rep) -> str:
    with pytest.raises(config_check.ConfigError) as err:
        config_check.parse(copy.deepcopy(BASE) | {"replication": rep}, None, SCHEMA, gpus=[])
    assert "Fix:" in str(err.value)
    return str(err.value)


@pytest.mark.parametrize(
    "rep, fragment",
    [
        ({"ci_half_width": 0, "max_seeds": 12}, "0 is not a half-width in (0, 1)"),
        ({"ci_half_width": -0.1, "max_seeds": 12}, "-0.1 is not a half-width in (0, 1)"),
        ({"ci_half_width": 1, "max_seeds": 12}, "1 is not a half-width in (0, 1) (1 would accept any interval)"),
        ({"ci_half_width": 0.05, "max_seeds": 2}, "config key `replication.max_seeds`: 2 is below the 3 seeds listed"),
        ({"ci_half_width": 0.05}, "needs both ci_half_width and max_seeds"),
    ],
)
def test_bad_replication_settings_are_refused_with_a_fix(rep, fragment):
    assert fragment in refused(rep)


def test_replication_is_off_by_default():
    config = config_check.parse(copy.deepcopy(BASE), None, SCHEMA, gpus=[])
    assert config["replication"] is None


def test_rounds_add_the_next_seeds():
    assert replication.seeds_of_round([3, 1, 2], 0) == [1, 2, 3]
    assert replication.seeds_of_round([1, 2, 7], 2) == [1, 2, 7, 8, 9]


# ------------------------------------------------------------ the decision on crafted records


def _measure(tmp_path, noise, seeds, rng):
    """A round measured from crafted records: cpu1 half as fast, with
    ``noise`` (relative SD) on each run's epoch time."""
    records = []
    for seed in seeds:
        for device, t in (("cpu", 1.0), ("cpu1", 2.0)):
            time = t * float(np.exp(rng.normal(0, noise)))
            records.append(make_record(device, 100, seed, epoch_s=(3.0, time, time)))
    _, speedup, *_ = crafted_tables(tmp_path / f"r{len(seeds)}", records)
    return replication.measure(speedup, "cpu", seeds, len(seeds) - 3)


def test_a_quiet_set_stops_at_the_first_check(tmp_path):
    rng = np.random.default_rng(1)
    decision = replication.decide(
        [1, 2, 3], 0.05, 12, lambda r: _measure(tmp_path, 0.002, [1, 2, 3][: 3 + r], rng), lambda seeds: False
    )
    assert decision.rounds == 0 and decision.seeds == [1, 2, 3] and decision.stopped
    assert decision.reason.startswith("every interval within ±5% at 3 seeds (widest ±")


def test_a_noisy_set_stops_at_max_seeds(tmp_path):
    rng = np.random.default_rng(2)
    rounds = []

    def measurement(r):
        rounds.append(r)
        return _measure(tmp_path, 0.5, replication.seeds_of_round([1, 2, 3], r), rng)

    decision = replication.decide([1, 2, 3], 0.05, 6, measurement, lambda seeds: False)
    assert rounds == [0, 1, 2, 3] and decision.seeds == [1, 2, 3, 4, 5, 6]
    assert decision.reason.startswith("stopped at max_seeds 6: cpu1 at batch size 100 on workload mlp is still ±")


def test_existing_rounds_are_kept_and_a_looser_target_stops_after_them():
    measured = {
        r: {
            "seeds": replication.seeds_of_round([1, 2], r),
            "widest": {"half_width": 0.2 / (r + 1), "device": "gpu", "workload": "mlp", "batch_size": 100},
        }
        for r in range(6)
    }
    have = {1, 2, 3, 4}  # seeds recorded by an earlier, tighter call
    decision = replication.decide([1, 2], 0.5, 12, measured.__getitem__, lambda seeds: set(seeds) <= have)
    assert decision.seeds == [1, 2, 3, 4]  # the looser target would stop at once; nothing recorded is dropped
    tighter = replication.decide([1, 2], 0.04, 12, measured.__getitem__, lambda seeds: set(seeds) <= have)
    assert tighter.seeds == [1, 2, 3, 4, 5, 6]  # 0.2 / 5 = 0.04 at round 4 (seeds 1-6): within


def test_no_interval_counts_as_too_wide():
    assert replication.relative_half_width(float("nan"), 2.0, 1.0) == float("inf")
    assert replication.relative_half_width(0.9, 1.1, 1.0) == pytest.approx(0.1)


# ------------------------------------------------------------ the stopping rule's bias


def _rule_interval(rng, level, listed=3, target=0.05, max_seeds=12, true=2.0, drift=0.10, noise=0.06):
    """One simulated experiment under the whole rule: blocks (a shared
    drift per block, each device's own noise), paired Fieller intervals at
    ``level``, a block added while the half-width is above the target; the
    interval it stops with."""
    base, dev = [], []

    def block():
        shared = np.exp(rng.normal(0, drift))
        base.append(shared * np.exp(rng.normal(0, noise)))
        dev.append(shared / true * np.exp(rng.normal(0, noise)))

    for _ in range(listed):
        block()
    while True:
        r = stats.paired_fieller_ratio(base, dev, level)
        if replication.relative_half_width(r.low, r.high, r.estimate) <= target or len(base) >= max_seeds:
            return r, len(base)
        block()


@pytest.mark.parametrize("noise", [0.04, 0.06])
def test_the_stopping_rule_keeps_95_percent_coverage(noise):
    """3,000 simulated experiments of the whole rule (3 listed seeds, ±5%,
    at most 12, drift shared within blocks) at the noise levels where the
    rule decides most (it stops anywhere from 3 to 12 seeds): the interval
    it stops with covers the true speedup in at least 93% of them (seen:
    0.947 and 0.944 at the 97% level the workflow uses; a plain 95% interval
    gave 0.91, see the next test). At 3,000 trials the standard error is
    0.004, so a true 0.945 falls below 0.93 with probability ~1e-4."""
    rng = np.random.default_rng(21)
    results = [_rule_interval(rng, replication.INTERVAL_LEVEL, noise=noise) for _ in range(3000)]
    coverage = np.mean([r.low <= 2.0 <= r.high for r, _ in results])
    stops = [n for _, n in results]
    assert min(stops) <= 4 and max(stops) == 12  # the rule really decides
    assert 0.93 <= coverage <= 0.975, coverage


def test_a_plain_95_percent_interval_would_fall_short_under_the_rule():
    """Why the level is widened: stopping when the blocks happen to agree
    underestimates the variance (seen: 0.907 at noise 0.06)."""
    rng = np.random.default_rng(21)
    results = [_rule_interval(rng, 0.95, noise=0.06) for _ in range(3000)]
    assert np.mean([r.low <= 2.0 <= r.high for r, _ in results]) < 0.93


def test_the_report_names_the_level_an_interval_was_computed_at():
    """The speedup table's header and the headline read "97% CI" for the
    intervals replication widens, and "95% CI" otherwise."""
    from mnist_speedup.report.format import ci_name

    plain = stats.paired_fieller_ratio([2.0, 2.1, 1.9, 2.05], [1.0, 1.1, 0.95, 1.0])
    wide = stats.paired_fieller_ratio([2.0, 2.1, 1.9, 2.05], [1.0, 1.1, 0.95, 1.0], 0.97)
    assert plain.ci_name == ci_name(plain.level) == "95% CI" and "Fieller 95% CI" in plain.method_words
    assert wide.ci_name == ci_name([0.97, float("nan")]) == "97% CI"
    assert "Fieller 97% CI" in wide.method_words and stats.WIDENED in wide.method_words
    assert ci_name(float("nan")) == "95% CI"  # a row without an interval (the baseline's own)


@pytest.mark.parametrize("level", [0.5, 0.8, 0.9, 0.95, 0.97, 0.99])
def test_compare_at_level_l_is_fieller_at_level_l(level):
    """Issue 32: compare really computes the interval at the level asked
    (a 95% interval labelled 97% would pass a label check). Against
    Fieller's interval by hand (the quadratic's roots with t at that level):
    the interval grows with the level, and equals the hand computation.
    Planted once: compare ignoring `level` failed every level but 0.95."""
    import pandas as pd
    from scipy import stats as sps

    from mnist_speedup.analysis import compare

    a, b = np.array([2.0, 2.3, 1.9, 2.2, 2.05]), np.array([1.0, 1.2, 0.9, 1.05, 1.0])
    base = pd.DataFrame({"t": a, "block": range(5), "seed": range(5), "device": "base"})
    runs = pd.DataFrame({"t": b, "block": range(5), "seed": range(5), "device": "dev"})
    r = compare.compare(base, runs, "t", paired=False, level=level)
    va, vb = a.var(ddof=1) / 5, b.var(ddof=1) / 5
    s = a.mean() / b.mean()
    df = (va + s**2 * vb) ** 2 / (va**2 / 4 + (s**2 * vb) ** 2 / 4)
    t2 = sps.t.ppf(0.5 + level / 2, df) ** 2
    qa, qb, qc = b.mean() ** 2 - t2 * vb, a.mean() * b.mean(), a.mean() ** 2 - t2 * va
    root = np.sqrt(qb**2 - qa * qc)
    assert (r.low, r.high) == pytest.approx(((qb - root) / qa, (qb + root) / qa), rel=1e-12)
    assert r.level == level and r.ci_name == f"{level * 100:g}% CI"


def test_the_stop_reason_describes_the_seeds_actually_used_after_max_seeds_is_lowered():
    """Issue 31 (8): a finished 4-seed run with max_seeds lowered to 2 said
    "stopped at max_seeds 2" while the report's n was 4. Planted once: the
    old `n >= max_seeds` branch alone failed this."""
    widest = {"device": "cpu1", "batch_size": 100, "workload": "mlp", "half_width": 0.2}
    lowered = replication.reason({"seeds": [1, 2, 3, 4], "widest": widest}, 0.05, 2)
    assert lowered.startswith("4 seeds were already recorded, more than max_seeds 2") and "all 4 are used" in lowered
    assert "stopped at max_seeds" not in lowered
    at_limit = replication.reason({"seeds": [1, 2], "widest": widest}, 0.05, 2)
    assert at_limit == "stopped at max_seeds 2: cpu1 at batch size 100 on workload mlp is still ±20%"


def test_an_unbounded_widest_interval_is_said_in_words():
    """Seen in a workflow test: "... is still no interval"."""
    widest = {"device": "cpu1", "batch_size": 100, "workload": "mlp", "half_width": None}
    said = replication.reason({"seeds": [1, 2], "widest": widest}, 0.05, 2)
    assert said == "stopped at max_seeds 2: cpu1 at batch size 100 on workload mlp still has no bounded interval"


def test_a_round_not_measured_yet_is_pending_with_its_own_seeds():
    """A survivor of the 2026-12-05 mutation run: the pending decision's
    seeds were never checked (no unit test reached a round not yet measured).
    Round 0 wants more, round 1 is not measured: round 1's seeds are run."""
    wide = {"device": "cpu1", "batch_size": 100, "workload": "mlp", "half_width": 0.5}
    rounds = {0: {"seeds": [1, 2], "widest": wide}}
    decision = replication.decide([1, 2], 0.05, 5, rounds.get, lambda seeds: False)
    assert (decision.rounds, decision.seeds, decision.stopped) == (1, [1, 2, 3], False)
    assert decision.reason == "round 1 is not measured yet"
