"""TOML reading: the Rust parser (rtoml) when installed, tomllib otherwise.

tomllib is pure Python and needs seconds for a 10,000-tool catalog; rtoml parses the same file
in about a tenth of the time. Error messages always come from tomllib, so they read the same
whichever parser is present.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from .errors import UserError

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


def read_toml_file(path: Path, kind: str, error: type[UserError], *, untouched: bool = False) -> dict[str, Any]:
    """Read and parse a TOML file the user named; every failure is one sentence in `error`.

    `kind` names the file in messages ("catalog", "session"); `untouched` adds that the file was
    left as it was (for files the console would otherwise write back).
    """
    tail = "; it was left untouched" if untouched else ""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise error(f"{path}: {kind} file not found") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder, not a {kind} file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read the {kind} ({exc.strerror or exc})") from None
    try:
        return loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise error(f"{path}: not a {kind} file (it is not UTF-8 text){tail}") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: {'corrupt ' + kind + ' file, ' if untouched else ''}not valid TOML ({exc}){tail}") from None
