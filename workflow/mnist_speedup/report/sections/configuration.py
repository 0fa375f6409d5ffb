"""The configuration this report was made with (download settings left out)."""

from __future__ import annotations

import yaml

from mnist_speedup.report.format import code_block


def render(report) -> list[str]:
    shown = {k: v for k, v in report.config.items() if not k.startswith("_")}
    return ["## Configuration", "", "```yaml", code_block(yaml.safe_dump(shown, sort_keys=False)), "```", ""]
