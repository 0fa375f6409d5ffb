import math

import numpy as np
import pytest
from scipy import stats as sps

from mnist_speedup.analysis import stats


def test_fieller_against_hand_computation():
    base = [10.0, 12.0, 11.0]  # mean 11, var 1 -> va = 1/3
    dev = [2.0, 2.2, 2.1]  # mean 2.1, var 0.01 -> vb = 0.01/3
    r = stats.fieller_ratio(base, dev)
    s = 11 / 2.1
    va, vb = 1 / 3, 0.01 / 3
    df = (va + s**2 * vb) ** 2 / (va**2 / 2 + (s**2 * vb) ** 2 / 2)
    t = sps.t.ppf(0.975, df)
    disc = 11**2 * vb + 2.1**2 * va - t**2 * va * vb
    low = (11 * 2.1 - t * math.sqrt(disc)) / (2.1**2 - t**2 * vb)
    high = (11 * 2.1 + t * math.sqrt(disc)) / (2.1**2 - t**2 * vb)
    assert r.estimate == pytest.approx(s)
    assert r.df == pytest.approx(df)
    assert (r.low, r.high) == (pytest.approx(low), pytest.approx(high))
    assert r.low < s < r.high
    # worked by hand: S = 5.2381, df = 0.18045 / 0.05974 = 3.021, t(3.02) = 3.176,
    # disc = 0.4033 + 1.4700 - 0.0112 = 1.8621, t*sqrt(disc) = 4.334,
    # denominator 4.41 - 0.0336 = 4.3764 -> [(23.1 - 4.334), (23.1 + 4.334)] / 4.3764
    assert r.estimate == pytest.approx(5.2381, abs=1e-4)
    assert r.df == pytest.approx(3.021, abs=2e-3)
    assert r.low == pytest.approx(4.288, abs=5e-3) and r.high == pytest.approx(6.269, abs=5e-3)


def test_ratio_of_means_not_mean_of_ratios():
    base, dev = [1.0, 3.0], [1.0, 1.0]
    assert stats.fieller_ratio(base, dev).estimate == 2.0  # mean of ratios would be 2 too; use unequal
    base, dev = [2.0, 4.0], [1.0, 4.0]
    assert stats.fieller_ratio(base, dev).estimate == pytest.approx(6 / 5)  # not (2 + 1) / 2 = 1.5


def test_single_run_has_no_interval():
    r = stats.fieller_ratio([1.0], [2.0, 2.1])
    assert r.estimate == pytest.approx(1 / 2.05) and math.isnan(r.low) and math.isnan(r.high)


def test_unbounded_case_is_reported_not_invented():
    r = stats.fieller_ratio([1.0, 1.1, 0.9], [0.01, 1.0, 2.0])  # denominator not far from 0
    assert math.isnan(r.low) and math.isnan(r.high)


def test_mean_ci_and_cv_by_hand():
    lo, hi = stats.mean_ci([1.0, 2.0, 3.0])
    half = sps.t.ppf(0.975, 2) * 1.0 / math.sqrt(3)  # 2.4841
    assert (lo, hi) == (pytest.approx(2 - half), pytest.approx(2 + half))
    assert stats.cv([9.0, 10.0, 11.0]) == pytest.approx(0.1)
    assert math.isnan(stats.cv([1.0]))


def test_seeds_needed_by_hand():
    # CV 5% on both devices: need t(2n-2) * sqrt(0.005 / n) <= 0.05, i.e. n >= 2 t^2.
    # n = 8: t(14) = 2.145 -> 2 t^2 = 9.20 > 8; n = 9: t(16) = 2.120 -> 8.99 <= 9.
    assert stats.seeds_needed(0.05, 0.05) == 9
    # 1% on both: n >= 0.08 t^2 -> n = 2 (t(2) = 4.30 -> 1.48)
    assert stats.seeds_needed(0.01, 0.01) == 2
    assert math.isnan(stats.seeds_needed(math.nan, 0.01))


#: coverage of a 95% interval must lie in this band (both sides: too narrow and too wide fail)
COVERAGE_BAND = (0.935, 0.97)
COVERAGE_TRIALS = 8000


@pytest.mark.parametrize("n_runs", [3, 5, 8])
def test_interval_covers_true_ratio_from_both_sides(n_runs):
    """8,000 synthetic experiments with log-normal epoch times and a known
    true ratio of means: the 95% interval must cover it between 93.5% and
    97% of the time.

    False alarm for a correct interval, from the binomial: its coverage here
    is 0.945-0.96 (Welch's df make it a little conservative at 3 runs), and
    P(Binomial(8000, p) / 8000 outside [0.935, 0.97]) is 6e-5 at p = 0.945,
    2e-9 at 0.95 and 8e-7 at 0.96. Caught (measured once with the t quantile
    scaled): an interval 10% too narrow gives 0.929 at 5 runs, and one twice as
    wide 0.987-0.998 at every n. At 3 runs a 10%-narrow interval (0.948)
    cannot be told from the exact one by coverage."""
    rng = np.random.default_rng(20261202 + n_runs)
    sigma_b, sigma_d = 0.05, 0.10
    mu_b, mu_d = math.log(10.0), math.log(1.0)
    true = math.exp(mu_b + sigma_b**2 / 2) / math.exp(mu_d + sigma_d**2 / 2)
    base = rng.lognormal(mu_b, sigma_b, (COVERAGE_TRIALS, n_runs))
    dev = rng.lognormal(mu_d, sigma_d, (COVERAGE_TRIALS, n_runs))
    covered = sum(r.low <= true <= r.high for r in map(stats.fieller_ratio, base, dev))
    low, high = COVERAGE_BAND
    assert low <= covered / COVERAGE_TRIALS <= high, covered / COVERAGE_TRIALS


@pytest.mark.parametrize("level", [0.95, 0.97])
def test_too_few_runs_give_no_interval_with_the_method_reason_and_level_in_their_fields(level):
    """Survivors of the 2026-12-05 mutation run: a field dropped from the
    few-runs Ratio shifted the others (the reason became the method)."""
    r = stats.fieller_ratio([1.0], [2.0, 2.1], level)
    assert r.method == stats.CI_METHOD and r.reason == stats.FEW_RUNS and r.level == level
    assert math.isnan(r.low) and math.isnan(r.high) and math.isnan(r.df) and not r.bounded


@pytest.mark.parametrize("paired", [False, True])
def test_two_devices_with_no_spread_get_no_interval_and_the_reason(paired):
    """Issue 40.3: two devices whose runs took exactly the same time each got a "95% CI" [4.00, 4.00]:
    a certainty two runs cannot give. Now no interval, and the reason names the clock and asks for seeds."""
    ratio = (stats.paired_fieller_ratio if paired else stats.fieller_ratio)([4.0, 4.0, 4.0], [1.0, 1.0, 1.0])
    assert ratio.estimate == 4.0 and math.isnan(ratio.low) and math.isnan(ratio.high) and not ratio.bounded
    assert "below the clock's resolution" in ratio.reason and "add seeds" in ratio.reason


def _paired_runs(n_blocks: int, skew: bool = False):
    """Crafted records of two devices in ``n_blocks`` blocks with a drift shared within each block."""
    from crafted import make_record

    rng = np.random.default_rng(n_blocks)
    recs = []
    for seed in range(1, n_blocks + 1):
        drift = 1 + 0.05 * rng.standard_normal()
        for device, base in (("cpu", 2.0), ("cpu1", 3.0)):
            t = base * drift * (1 + 0.02 * rng.standard_normal())
            if skew and device == "cpu1" and seed == 1:
                t *= 3  # one slow outlier run
            recs.append(make_record(device, 100, seed, [t * 1.5, t, t * 1.01], threads=2 if device == "cpu" else 1))
    return recs


def test_the_bootstrap_gives_a_second_interval_from_ten_blocks_and_says_why_not_below(tmp_path):
    """Issue 49 (4): a paired BCa bootstrap beside Fieller's, in speedup.csv; below 10 blocks the reason."""
    from crafted import write_records
    from mnist_speedup.analysis import aggregate, bootstrap

    summary, _ = aggregate.load_runs(write_records(tmp_path / "a", _paired_runs(12)))
    row = aggregate.speedup_table(summary, "cpu").set_index("device").loc["cpu1"]
    assert row.bootstrap_ci_low < row.speedup < row.bootstrap_ci_high and not row.intervals_disagree
    assert abs(row.bootstrap_ci_low - row.speedup_ci_low) < 0.05 * row.speedup  # normal timings: they agree
    again = aggregate.speedup_table(summary, "cpu").set_index("device").loc["cpu1"]
    assert (again.bootstrap_ci_low, again.bootstrap_ci_high) == (row.bootstrap_ci_low, row.bootstrap_ci_high)
    few, _ = aggregate.load_runs(write_records(tmp_path / "b", _paired_runs(9)))
    row = aggregate.speedup_table(few, "cpu").set_index("device").loc["cpu1"]
    assert math.isnan(row.bootstrap_ci_low) and row.bootstrap_note == bootstrap.TOO_FEW


def test_a_slow_outlier_makes_the_two_intervals_disagree_and_the_report_warns(tmp_path):
    """One run three times as slow: Fieller's interval (normal errors) and the BCa bootstrap part by more
    than the stated share of the speedup, and a warning says so. Planted once: `disagree` comparing the
    estimate instead of the ends never flagged it."""
    from crafted import write_records
    from mnist_speedup.analysis import aggregate, checks

    summary, _ = aggregate.load_runs(write_records(tmp_path, _paired_runs(12, skew=True)))
    speedup = aggregate.speedup_table(summary, "cpu")
    assert speedup.set_index("device").loc["cpu1", "intervals_disagree"]
    (warning,) = checks.intervals_apart(speedup)
    assert "The two intervals disagree for cpu1 at batch size 100" in warning and "10% of the speedup" in warning
