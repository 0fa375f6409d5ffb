"""JSON as this workflow writes it, read so that no file can exhaust Python's stack: a ValueError naming the
problem for JSON nested deeper than any file of this workflow (Python's decoder raises RecursionError on deep
enough input). Imports nothing of the package: the attempt files' reader (training's) and the record reader share it.
"""

from __future__ import annotations

import json

#: no file this workflow writes nests deeper (a record, a calibration or a manifest: 4 levels)
MAX_DEPTH = 32


def _depth(value) -> int:
    """How deep ``value`` nests (a scalar: 0), without recursion."""
    deepest, todo = 0, [(value, 0)]
    while todo:
        node, depth = todo.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, depth + 1)
            todo.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def decode(text: str, **options):
    """JSON as this workflow writes it: a ValueError naming the problem for invalid JSON and for JSON nested
    deeper than MAX_DEPTH (Python's decoder would raise RecursionError on deep enough input)."""
    try:
        value = json.loads(text, **options)
    except RecursionError:
        raise ValueError(
            f"it is JSON nested deeper than Python reads (no file of this workflow nests {MAX_DEPTH} levels)"
        ) from None
    if (depth := _depth(value)) > MAX_DEPTH:
        raise ValueError(
            f"it is JSON nested {depth} levels deep, more than the {MAX_DEPTH} of any file of this workflow"
        )
    return value
