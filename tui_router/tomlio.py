"""TOML reading: the Rust parser (rtoml) when installed, tomllib otherwise.

tomllib is pure Python and needs seconds for a 10,000-tool catalog; rtoml parses the same file
in about a tenth of the time. Error messages always come from tomllib, so they read the same
whichever parser is present.
"""

from __future__ import annotations

import tomllib
from typing import Any

try:  # pragma: no cover - depends on the install
    import rtoml as _fast
except ImportError:  # pragma: no cover
    _fast = None

FAST_FROM_BYTES = 64 * 1024  # below this tomllib is fast enough and imports nothing more


def loads(text: str) -> dict[str, Any]:
    """Parse TOML text; raises tomllib.TOMLDecodeError on invalid input."""
    if _fast is not None and len(text) >= FAST_FROM_BYTES:
        try:
            return _fast.loads(text)
        except Exception:
            pass  # fall through: tomllib gives the standard, precise error message
    return tomllib.loads(text)
