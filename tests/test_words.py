"""Issue 31 (9): a configured fraction is printed with the digits it needs."""

import pandas as pd
import pytest

from mnist_speedup.analysis import parity, tta
from mnist_speedup.words import percent


@pytest.mark.parametrize(
    ("fraction", "text"),
    [(0.95, "95%"), (0.999, "99.9%"), (0.9875, "98.75%"), (0.5, "50%"), (0.07, "7%"), (1.0, "100%")],
)
def test_percent_keeps_every_digit_a_target_has(fraction, text):
    assert percent(fraction) == text


def test_a_target_of_999_is_not_printed_as_100_in_the_parity_reason_or_the_censored_note():
    """Planted once: `{target:.0%}` back in parity.py printed 100% and failed."""
    runs = pd.DataFrame(
        {
            "epochs_to_target": [float("nan")] * 2,
            "target_reached": [False] * 2,
            "val_accuracy": [0.99, 0.99],
            "epochs": [3, 3],
        }
    )
    _, reason = parity.verdict(runs, runs, 0.999, 0.005)
    assert "99.9%" in reason and "100%" not in reason
    assert "99.9%" in tta.censored_message(runs, "cpu", 0.999, 3)


def test_two_workload_labels_for_one_network_are_refused():
    """Issue 31 (10): `mlp` and `mlp-again` with one spec (defaults written out or not)."""
    from test_config_errors import parsed, with_

    from mnist_speedup.config.parse import ConfigError

    twins = {"mlp": {"type": "mlp"}, "mlp-again": {"type": "mlp", "hidden": [800, 800]}}
    with pytest.raises(
        ConfigError, match=r"workloads\.mlp-again`: is the same network as workloads\.mlp .*Fix: keep one"
    ):
        parsed(with_(workloads=twins))


def test_too_many_hidden_layers_names_the_limit():
    """Issue 31 (12): 33 layers is refused with the limit and a fix that fits."""
    from test_config_errors import parsed, with_

    from mnist_speedup.config.parse import ConfigError

    with pytest.raises(ConfigError, match=r"more than 32 hidden layers.*Fix: list from 1 to 32 widths"):
        parsed(with_(workloads={"deep": {"type": "mlp", "hidden": [8] * 33}}))
