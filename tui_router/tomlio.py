"""TOML reading: the one path every catalog, config and session file goes through.

rtoml (Rust) parses large files in about a tenth of tomllib's time, so it is used from
`FAST_FROM_BYTES` up; tomllib (pure Python) otherwise, and whenever rtoml refuses a text, so
every error message is tomllib's and reads the same whichever parser ran. The two parsers must
not disagree on what a file means, so the checks they differ on happen here, before and after
parsing, for both:

* only regular files are read (a FIFO would block, /dev/zero would fill memory), at most
  `MAX_FILE_BYTES` (32 MiB: a 10,000-tool catalog is about 5 MB) read through one descriptor
  opened without blocking;
* a UTF-8 byte order mark is accepted and dropped (rtoml accepted it, tomllib did not);
* arrays and tables nest at most `MAX_DEPTH` levels (tomllib overflowed Python's stack near 330,
  rtoml stops near 80);
* numbers are finite: `nan` and `inf` are valid TOML but meaningless in every file of ours, and
  letting them through made thresholds, timeouts and schemas fail in confusing ways.
"""

from __future__ import annotations

import errno
import math
import os
import re
import stat
import tomllib
from pathlib import Path
from typing import Any

from .errors import UserError

try:  # pragma: no cover - depends on the install
    import rtoml as _fast
except ImportError:  # pragma: no cover
    _fast = None

FAST_FROM_BYTES = 64 * 1024  # below this tomllib is fast enough and imports nothing more
MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_DEPTH = 48


class TOMLLimitError(ValueError):
    """A TOML text that parses but breaks one of the limits above (message: what and where)."""


def _parse(text: str) -> dict[str, Any]:
    if _fast is not None and len(text) >= FAST_FROM_BYTES:
        try:
            return _fast.loads(text)
        except Exception:
            pass  # fall through: tomllib gives the standard, precise error message
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise TOMLLimitError(f"arrays or tables nested more than {MAX_DEPTH} levels deep") from None


def _check_values(data: dict[str, Any]) -> None:
    """Depth and finite numbers, walked without recursion (the structure may be very deep)."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, dict):
            if depth > MAX_DEPTH:
                raise TOMLLimitError(f"arrays or tables nested more than {MAX_DEPTH} levels deep")
            stack.extend((item, f"{where}.{key}" if where else str(key), depth + 1) for key, item in value.items())
        elif isinstance(value, list):
            if depth > MAX_DEPTH:
                raise TOMLLimitError(f"arrays or tables nested more than {MAX_DEPTH} levels deep")
            stack.extend((item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            raise TOMLLimitError(f"'{where[:120]}' is {value}; numbers must be finite")


def _has_crlf(value: Any) -> bool:
    if isinstance(value, str):
        return "\r\n" in value
    if isinstance(value, dict):
        return any(_has_crlf(k) or _has_crlf(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_crlf(v) for v in value)
    return False


_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_surrogates(text: str) -> str:
    """Text every UTF-8 encoder takes. A Python string can hold surrogates (undecodable argv bytes,
    a JSON "\\ud800" escape, a surrogateescape read) and encoding one raises UnicodeEncodeError: a
    high-low pair becomes the character it stands for, a lone surrogate U+FFFD."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def loads_json(text: str, **options: Any) -> Any:
    """`json.loads` for JSON from outside (a server, a command): a lone surrogate that a "\\ud800"
    escape reads as, which no encoder takes further on, is U+FFFD (replace_surrogates) from here on."""
    import json

    data = json.loads(text, **options)
    if _SURROGATE_ESCAPE.search(text):  # only an escape can make one: the text itself is valid Unicode
        data = json.loads(replace_surrogates(json.dumps(data, ensure_ascii=False)))
    return data


def dumps(data: dict[str, Any]) -> str:
    """TOML text for a session file: multi-line strings (diff-friendly), except when a string holds
    CR LF, which tomli_w writes into a multi-line string as a bare newline (the text would come back
    changed); then every string is written on one line, escapes and all. Lone surrogates become
    U+FFFD (replace_surrogates), so the text can always be written, and sized, as UTF-8. Bidi
    controls, C1 controls and the line/paragraph separators are written as \\uXXXX escapes (tomli_w
    wrote them raw): `cat` or `git diff` of a session file reordered a line around a message's
    U+202E; they read back as the same characters (inside basic strings, the only strings written)."""
    import tomli_w

    from .textsafe import escape_for_data

    return escape_for_data(replace_surrogates(tomli_w.dumps(data, multiline_strings=not _has_crlf(data))))


def loads(text: str) -> dict[str, Any]:
    """Parse TOML text with the checks above.

    Raises tomllib.TOMLDecodeError on invalid TOML and TOMLLimitError past a limit.
    """
    data = _parse(text.removeprefix("\ufeff"))
    _check_values(data)
    return data


def read_file_bytes(path: Path, kind: str, error: type[UserError]) -> bytes:
    """The bytes of a regular file of at most MAX_FILE_BYTES; anything else is one sentence in `error`."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat below then refuses it
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise error(f"{path}: {kind} file not found") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder, not a {kind} file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise error(f"{path}: a symbolic link loop, not a {kind} file") from None
        raise error(f"{path}: cannot read the {kind} ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise error(f"{path}: is a folder, not a {kind} file")
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{path}: not a regular file (a pipe, device or socket), so it is not read as a {kind} file")
        if info.st_size > MAX_FILE_BYTES:
            raise error(f"{path}: the {kind} file is {info.st_size / 2**20:.1f} MiB; the limit is {MAX_FILE_BYTES // 2**20} MiB")
        os.set_blocking(fd, True)
        chunks = []
        left = MAX_FILE_BYTES + 1  # the file may grow after fstat: never read past the limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:
            raise error(f"{path}: the {kind} file is over the {MAX_FILE_BYTES // 2**20} MiB limit")
        return b"".join(chunks)
    except OSError as exc:
        raise error(f"{path}: cannot read the {kind} ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def read_toml_file(path: Path, kind: str, error: type[UserError], *, untouched: bool = False) -> dict[str, Any]:
    """Read and parse a TOML file the user named; every failure is one sentence in `error`.

    `kind` names the file in messages ("catalog", "session"); `untouched` adds that the file was
    left as it was (for files the console would otherwise write back).
    """
    tail = "; it was left untouched" if untouched else ""
    raw = read_file_bytes(path, kind, error)
    try:
        return loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise error(f"{path}: not a {kind} file (it is not UTF-8 text){tail}") from None
    except tomllib.TOMLDecodeError as exc:
        line, what = toml_error(exc, raw.decode("utf-8", "replace"))
        where = f"{path}:{line}" if line else str(path)
        raise error(f"{where}: {'corrupt ' + kind + ' file, ' if untouched else ''}not valid TOML: {what}{tail}") from None
    except TOMLLimitError as exc:
        raise error(f"{path}: not a usable {kind} file ({exc}){tail}") from None


_AT = re.compile(r"\s*\((?:at line (\d+), column (\d+)|at end of document)\)\s*$")
_OPENS_ARRAY = re.compile(r"""^\s*[\w."'-]+\s*=\s*\[""")
# tomllib's message (its start) -> what a person typing TOML by hand most likely did, and the fix
_TOML_HINTS = (
    ("Illegal character '\\n'", "a quoted text is not closed on this line (close the quote; text over several lines goes between \"\"\" and \"\"\")"),
    ("Invalid value", 'a text value needs quotes (risk = "write"), a list brackets (keywords = ["a", "b"])'),
    ("Cannot overwrite a value", "this key is already set in the same table (given twice?)"),
    ("Cannot declare ('tools',) twice", "each tool starts with [[tools]], two brackets on each side"),
    ("Cannot mutate immutable namespace ('tools',)", "each tool starts with [[tools]], two brackets on each side"),
    ("Expected newline or end of document after a statement", "something follows the value on this line (a quote inside the text? write \\\" or use 'single quotes')"),
    ("Unclosed array", "the list that opens on this line is not closed: add ]"),
    ("Unescaped '\\'", "a backslash in a \"text\" starts an escape: write \\\\ or use 'single quotes'"),
    ("Expected '=' after a key", "a key needs = and a value (key = \"value\")"),
)


def _open_list_before(rows: list[str]) -> int | None:
    """The line (1-based) of the last `key = [` whose list no later row closes, if any."""
    opener = None
    for n, row in enumerate(rows, 1):
        if _OPENS_ARRAY.match(row) and row.count("[") > row.count("]"):
            opener = n
        elif opener is not None and "]" in row:
            opener = None
    return opener


def toml_error(exc: tomllib.TOMLDecodeError, text: str) -> tuple[int | None, str]:
    """(line, sentence) for a TOML syntax error: tomllib's reason with its column, and a hint at the
    likely slip. An array left open is reported "at end of document": the line where it opened."""
    message = str(exc)
    match = _AT.search(message)
    reason = message[: match.start()] if match else message
    line = int(match.group(1)) if match and match.group(1) else None
    column = f" (column {match.group(2)})" if match and match.group(2) else ""
    if reason.startswith("Unclosed array"):
        # tomllib notices where the list should have ended (the next table, or the end): name the
        # line where it opened, the one to fix
        rows = text.splitlines()[: line or None]
        opened = [n for n, row in enumerate(rows, 1) if _OPENS_ARRAY.match(row) and row.count("[") > row.count("]")]
        if opened and opened[-1] != line:
            line, column = opened[-1], ""
    hint = next((h for start, h in _TOML_HINTS if reason.startswith(start)), "")
    if reason.startswith("Invalid value"):
        # a list left open before the error (`keywords = [` and the next key, or the end of the file):
        # tomllib says "Invalid value" where the next item should be; the slip is the open list
        opener = _open_list_before(text.splitlines()[: (line - 1) if line else None])
        if opener is not None:
            line, column, hint = opener, "", "the list that opens on this line is not closed: add ]"
    if reason.startswith("Unclosed array") and line and column:
        row = text.splitlines()[line - 1] if line <= len(text.splitlines()) else ""
        if row.count("[") <= row.count("]"):  # closed on its line: tomllib stopped at an item with no comma before it
            hint = "the items of a list are separated by commas (one is missing)"
    return line, reason + column + (f": {hint}" if hint else "")

