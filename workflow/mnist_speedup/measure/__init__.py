"""The measurement: devices, frameworks, the epoch clock and its meters, one run."""
