"""Plain text helpers for the console: no Textual here, so they are testable on their own."""

from __future__ import annotations

from datetime import datetime

from ..textsafe import visible

ELLIPSIS = "…"

from ..workspace import OUTCOME_TEXT  # noqa: E402,F401  (one table of outcome words)


def one_line(text: str) -> str:
    """Collapse all whitespace (newlines included) to single spaces."""
    return " ".join(text.split())


def shorten(text: str, width: int) -> str:
    """One line of at most `width` terminal cells, cut at a word boundary when one is near, with an
    ellipsis. Cell-aware, so CJK text (two cells a character) never overflows its column."""
    from rich.cells import cell_len, get_character_cell_size

    if width <= 0:
        return ""
    text = visible(one_line(text[: 4 * width + 200]))  # untrusted: control characters shown, not sent
    if cell_len(text) <= width:
        return text
    if width == 1:
        return ELLIPSIS
    used = 0
    end = 0
    for end, char in enumerate(text):  # noqa: B007 - end is used after the loop
        size = get_character_cell_size(char)
        if used + size > width - 1:
            break
        used += size
    cut = text[:end]
    space = cut.rfind(" ")
    if space >= max(1, len(cut) // 2):  # end on a whole word unless that loses over half
        cut = cut[:space]
    return cut.rstrip() + ELLIPSIS


def shorten_start(text: str, width: int) -> str:
    """Like shorten, but keeping the end: for file names, which differ at the end
    (2026-11-30T23-41-51-4125b5.toml -> …41-51-4125b5.toml)."""
    from rich.cells import cell_len, get_character_cell_size

    text = visible(one_line(text))
    if width <= 0 or cell_len(text) <= width:
        return text if width > 0 else ""
    used = 0
    start = len(text)
    while start > 0 and used + get_character_cell_size(text[start - 1]) <= width - 1:
        start -= 1
        used += get_character_cell_size(text[start])
    return ELLIPSIS + text[start:]


def fmt_prob(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def clock_time(at: str | None) -> str:
    """'10:04:20' from an ISO timestamp (UTC as written in the session), '' when absent."""
    if not at:
        return ""
    try:
        return datetime.fromisoformat(at.replace("Z", "+00:00")).strftime("%H:%M:%S")
    except ValueError:
        return at[-8:]


def display_path(path) -> str:
    """A session path as a person wants to read it: relative to the working folder when inside it."""
    from pathlib import Path

    if path is None:
        return ""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        home = Path.home()
        try:
            return "~/" + str(path.resolve().relative_to(home))
        except ValueError:
            return str(path)
