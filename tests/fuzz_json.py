"""JSON text with tokens no encoder writes (NaN, Infinity, 1e400, 5,000-digit integers): what the
property tests of hostile servers send (test_fuzz_systemone.py, test_fuzz_mcp_import.py)."""

from __future__ import annotations

import json
import math
from typing import Any


class Raw:
    """A JSON token written as it is (NaN, Infinity, 1e400, a 5,000-digit integer ...)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Raw({self.text[:30]!r})"


def as_number(value: Any) -> float | None:
    """What a JSON number means to a reader, or None for what is not a finite number."""
    if isinstance(value, Raw):
        try:
            number = float(value.text)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def encode(value: Any) -> str:
    """JSON text of `value`, Raw tokens written as they are."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k))}:{encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(encode(v) for v in value) + "]"
    return json.dumps(value)
