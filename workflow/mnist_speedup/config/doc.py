"""config/README.md, written from the config schema so the two cannot drift.

Regenerate it after changing the schema::

    python -m mnist_speedup.config.doc > config/README.md

A test fails while the committed file differs from what this writes.
"""

from __future__ import annotations

import json
import sys

import yaml

from mnist_speedup.spec import schema as config_schema

INTRO = """# Configuration

`config/config.yaml` is the default experiment; `config/seed.yaml` is the original article's
experiment (batch 500, 500 epochs). Pass another file with `--configfile`, or change single keys on
the command line: `snakemake --cores 4 --config 'seeds=[1,2,3]' 'batch_sizes=[100,500]' epochs=5`.
On the command line, `devices=...` replaces the file's devices instead of merging into them.

Every key is checked before any job starts; a mistake stops the workflow with a message naming the
key, the problem and the fix. This page is generated from `workflow/schemas/config.schema.yaml`
(`python -m mnist_speedup.config.doc > config/README.md`); a test keeps the two in step.

| key | type | default | meaning | example |
|---|---|---|---|---|
"""


def _type(node: dict) -> str:
    if "enum" in node:
        return " or ".join(f"`{v}`" for v in node["enum"])
    kinds = []
    for branch in node.get("oneOf", []) + node.get("anyOf", []):
        kinds.append(f"`{branch['const']}`" if "const" in branch else _type(branch))
    kind = node.get("type")
    if kind:
        kinds += [kind] if isinstance(kind, str) else list(kind)
    if node.get("type") == "array" and "items" in node:
        return f"list of {_type(node['items'])}"
    return " or ".join(kinds) or "any"


def _code(value) -> str:
    return "`" + json.dumps(value, ensure_ascii=False) + "`"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _rows(properties: dict, required: set, prefix: str = ""):
    for key, node in properties.items():
        name = prefix + key
        if "default" in node:
            default = _code(node["default"])
        else:
            default = "required" if key in required else "none"
        examples = node.get("examples")
        example = _code(examples[0]) if examples else (_code(node["default"]) if "default" in node else "")
        yield f"| `{name}` | {_cell(_type(node))} | {default} | {_cell(node.get('description', ''))} | {example} |"
        if node.get("type") == "object" and "properties" in node:
            yield from _rows(node["properties"], set(node.get("required", [])), prefix=name + ".")


def render(schema: dict) -> str:
    rows = _rows(schema["properties"], set(schema.get("required", [])))
    return INTRO + "\n".join(rows) + "\n"


def main() -> None:
    sys.stdout.write(render(yaml.safe_load(config_schema.PATH.read_text(encoding="utf-8"))))


if __name__ == "__main__":
    main()
