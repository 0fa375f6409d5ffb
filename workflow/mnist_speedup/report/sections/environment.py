"""Each device's environment: a table, and every recorded detail."""

from __future__ import annotations

import yaml

from mnist_speedup.report.format import code_block, esc, table
from mnist_speedup.spec import frameworks


def _framework_version(row) -> str:
    """``TensorFlow 2.21.0``: the device's framework and the version of its first declared software."""
    name = frameworks.named(row.get("framework"))
    fw = frameworks.declarations().get(name)
    if fw is None:
        return name
    version = row.get(fw.software[0]) if fw.software else None
    return f"{fw.words} {version}" if isinstance(version, str) else fw.words


def render(report) -> list[str]:
    first = report.tables.summary.drop_duplicates("device")
    rows = first[["device", "host", "device_type", "threads", "gpu_name", "cpu_model"]].copy()
    rows["framework"] = [_framework_version(r) for _, r in first.iterrows()]
    rows["python"] = first["python"]
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
