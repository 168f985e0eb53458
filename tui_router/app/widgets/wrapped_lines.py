"""Plain lines, wrapped to the width, drawn with the line API: a long text that stays cheap.

A Static lays out and styles its whole text at once: the what-if dialog over a 5,000-turn session
(hundreds to thousands of lines) took about half a second to several seconds to open, the console
frozen. Here the lines are wrapped once per width (plain text, a few ms per thousand lines) and
only the rows on screen are drawn. The text is shown as plain text: never markup.
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

    def __init__(self, lines: list[str], **kwargs) -> None:
        super().__init__(**kwargs)
        self.lines = lines
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
            rows.extend(part.plain for part in Text(line).wrap(console, width))
        self._rows = rows
        self.virtual_size = Size(width, len(rows))

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
