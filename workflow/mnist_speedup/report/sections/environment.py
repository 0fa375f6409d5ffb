"""Each device's environment: a table, and every recorded detail."""

from __future__ import annotations

import yaml

from mnist_speedup.report.format import code_block, esc, table


def render(report) -> list[str]:
    rows = report.tables.summary.drop_duplicates("device")[
        ["device", "host", "device_type", "threads", "gpu_name", "cpu_model", "tensorflow", "python"]
    ]
    parts = ["## Devices and environment", "", table(rows.fillna("—")), ""]
    for device, env in report.environments.items():
        parts += [
            f"<details><summary>{esc(device)}: full environment</summary>",
            "",
            "```yaml",
            code_block(yaml.safe_dump(env, sort_keys=True)),
            "```",
            "</details>",
            "",
        ]
    return parts
