"""Plain text helpers for the console: no Textual here, so they are testable on their own."""

from __future__ import annotations

from datetime import datetime

from ..textsafe import visible

ELLIPSIS = "…"

from ..workspace import OUTCOME_TEXT  # noqa: E402,F401  (one table of outcome words)


def one_line(text: str) -> str:
    """Collapse all whitespace (newlines included) to single spaces."""
    return " ".join(text.split())


def _graphemes(text: str) -> list[tuple[str, int]]:
    """`text` as (grapheme, cells) pairs: a ZWJ emoji sequence, a letter with its combining marks
    and a flag (two regional indicators, which rich counts apart) are one each, so a cut never
    leaves half of one (a lone 🇯, a dangling joiner)."""
    from rich.cells import split_graphemes

    spans, _ = split_graphemes(text)
    out: list[tuple[str, int]] = []
    for start, end, size in spans:
        piece = text[start:end]
        if out and _is_regional(piece) and _is_regional(out[-1][0]) and len(out[-1][0]) == 1:
            out[-1] = (out[-1][0] + piece, out[-1][1] + size)
        else:
            out.append((piece, size))
    return out


def grapheme_stops(text: str) -> list[int]:
    """The indexes of `text` a cursor may stand at: 0, each grapheme's end (so never inside an emoji
    sequence, a flag or a letter with its combining marks)."""
    stops = [0]
    for grapheme, _ in _graphemes(text):
        stops.append(stops[-1] + len(grapheme))
    return stops


def is_emoji_cluster(grapheme: str) -> bool:
    """An emoji sequence or a flag: deleted whole (a letter with marks loses its last mark first)."""
    return len(grapheme) > 1 and any(
        c in "\u200d\ufe0f" or "\U0001f1e6" <= c <= "\U0001f1ff" or "\U0001f3fb" <= c <= "\U0001f3ff" for c in grapheme
    )


def _is_regional(piece: str) -> bool:
    return "\U0001f1e6" <= piece[0] <= "\U0001f1ff"


def shorten(text: str, width: int) -> str:
    """One line of at most `width` terminal cells, cut at a word boundary when one is near, with an
    ellipsis. Cell-aware, so CJK text (two cells a character) never overflows its column, and
    grapheme-aware, so an emoji sequence, a flag or an accented letter is kept whole or left out."""
    from rich.cells import cell_len

    if width <= 0:
        return ""
    text = visible(one_line(text[: 4 * width + 200]))  # untrusted: control characters shown, not sent
    if cell_len(text) <= width:
        return text
    if width == 1:
        return ELLIPSIS
    used = 0
    end = 0
    for grapheme, size in _graphemes(text):
        if used + size > width - 1:
            break
        used += size
        end += len(grapheme)
    cut = text[:end]
    space = cut.rfind(" ")
    if space >= max(1, len(cut) // 2):  # end on a whole word unless that loses over half
        cut = cut[:space]
    return cut.rstrip() + ELLIPSIS


def shorten_start(text: str, width: int) -> str:
    """Like shorten, but keeping the end: for file names, which differ at the end
    (2026-11-30T23-41-51-4125b5.toml -> …41-51-4125b5.toml)."""
    from rich.cells import cell_len

    text = visible(one_line(text))
    if width <= 0 or cell_len(text) <= width:
        return text if width > 0 else ""
    used = 0
    start = len(text)
    for grapheme, size in reversed(_graphemes(text)):
        if used + size > width - 1:
            break
        used += size
        start -= len(grapheme)
    return ELLIPSIS + text[start:]


def cells(text: str) -> int:
    """Terminal cells `text` takes (CJK and emoji two, combining marks none), as rich counts them."""
    from rich.cells import cell_len

    return cell_len(text)


def pad(text: str, width: int, *, right: bool = False) -> str:
    """`text` padded with spaces to `width` terminal cells (str.ljust counts characters, so a
    column holding 请 or 👍 came out one cell wider per wide character)."""
    room = " " * max(0, width - cells(text))
    return room + text if right else text + room


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
