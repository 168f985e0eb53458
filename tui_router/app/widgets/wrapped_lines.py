"""Plain lines, wrapped to the width, drawn with the line API: a long text that stays cheap.

A Static lays out and styles its whole text at once: the what-if dialog over a 5,000-turn session
(hundreds to thousands of lines) took about half a second to several seconds to open, the console
frozen. Here the lines are wrapped once per width (plain text, a few ms per thousand lines) and
only the rows on screen are drawn. The text is shown as plain text: never markup.

With `hanging` (the what-if dialog) a wrapped line's continuation rows start under its text, its
own indentation plus `hanging` cells in: a long row reads as one row, not as text at column 0
among the rows. Without it (a command's output) the rows are the text as it is, cut to the width.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip


class WrappedLines(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    WrappedLines { overflow-x: hidden; }
    """

    def __init__(self, lines: list[str], hanging: int | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.lines = lines
        self.hanging = hanging
        self._rows: list[str] = []
        self._wrapped_for = -1

    def _wrap(self) -> None:
        width = self.scrollable_content_region.width
        if width == self._wrapped_for or width <= 0:
            return
        self._wrapped_for = width
        console = self.app.console
        rows: list[str] = []
        for line in self.lines:
            if len(line) <= width and line.isprintable():
                rows.append(line)  # most lines: no wrap needed
                continue
            rows.extend(self._wrap_line(line, width, console))
        self._rows = rows
        self.virtual_size = Size(width, len(rows))

    def _wrap_line(self, line: str, width: int, console) -> list[str]:
        parts = [part.plain for part in Text(line).wrap(console, width)]
        if self.hanging is None or len(parts) < 2 or not line.startswith(parts[0]):  # (a tab, expanded)
            return parts
        # the first row as wrapped; the rest of the line wrapped again, narrower, under its text
        indent = min(len(line) - len(line.lstrip(" ")) + self.hanging, width // 2)
        rest = line[len(parts[0]) :].lstrip(" ")
        return [parts[0], *(" " * indent + part.plain for part in Text(rest).wrap(console, width - indent))]

    def on_resize(self) -> None:
        self._wrap()

    def render_line(self, y: int) -> Strip:
        self._wrap()
        width = self.scrollable_content_region.width
        index = self.scroll_offset.y + y
        style = self.rich_style
        if index >= len(self._rows):
            return Strip.blank(width, style)
        return Strip([Segment(self._rows[index], style)]).extend_cell_length(width, style).crop(0, width)

    def plain(self) -> str:
        return "\n".join(self.lines)
