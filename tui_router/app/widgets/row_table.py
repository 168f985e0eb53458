"""A table of many rows drawn with the line API: a header, zebra rows, a row cursor.

Not a DataTable: a DataTable builds and measures every cell of every row as rows are added (and all
of them again at each resize or theme change), which took seconds for the review queue of a
50-file folder (14,000 rows) and for the replay of a 5,000-turn session, the console frozen. Here a
row is formatted when it is drawn, so only the rows on screen cost anything; the cells a row shows
are `cells(position)`, as `get_row_at` gives them (the DataTable's name, kept for tests).
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip


class RowTable(ScrollView, can_focus=True):
    """Subclasses give `row_count`, `headers()`, `widths()` and `cells(position)`."""

    COMPONENT_CLASSES = {"row-table--header", "row-table--odd-row", "row-table--even-row", "row-table--cursor"}
    # DataTable's own look, so the switch is not seen
    DEFAULT_CSS = """
    RowTable {
        background: $surface;
        color: $foreground;
        overflow-x: hidden;
        &:focus {
            background-tint: $foreground 5%;
            & > .row-table--cursor { background: $block-cursor-background; color: $block-cursor-foreground; text-style: $block-cursor-text-style; }
            & > .row-table--header { background-tint: $foreground 5%; }
        }
        &:dark > .row-table--even-row { background: $surface-darken-1 40%; }
        & > .row-table--header { text-style: bold; background: $panel; color: $foreground; }
        & > .row-table--even-row { background: $surface-lighten-1 50%; }
        & > .row-table--cursor { background: $block-cursor-blurred-background; color: $block-cursor-blurred-foreground; text-style: $block-cursor-blurred-text-style; }
    }
    """
    BINDINGS = [
        Binding("up", "move(-1)", "Up", id="rows.up", show=False, tooltip="Previous row"),
        Binding("down", "move(1)", "Down", id="rows.down", show=False, tooltip="Next row"),
        Binding("pageup", "page(-1)", "Page up", id="rows.page_up", show=False, tooltip="A page of rows up"),
        Binding("pagedown", "page(1)", "Page down", id="rows.page_down", show=False, tooltip="A page of rows down"),
        Binding("home", "jump(0)", "First", id="rows.first", show=False, tooltip="The first row"),
        Binding("end", "jump(-1)", "Last", id="rows.last", show=False, tooltip="The last row"),
    ]

    class RowHighlighted(Message):
        """The cursor moved to `cursor_row` (as DataTable.RowHighlighted)."""

        def __init__(self, table: RowTable, cursor_row: int) -> None:
            super().__init__()
            self.table = table
            self.cursor_row = cursor_row

        @property
        def control(self) -> RowTable:
            return self.table

    cursor_row: reactive[int] = reactive(0, always_update=True)

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._built_for = -1
        self._widths: list[int] = []
        self._strips: dict[tuple[int, bool, bool, int], Strip] = {}

    # -- what subclasses give
    @property
    def row_count(self) -> int:
        raise NotImplementedError

    def headers(self) -> list[str]:
        raise NotImplementedError

    def widths(self) -> list[int]:
        raise NotImplementedError

    def cells(self, position: int) -> list[Text]:
        raise NotImplementedError

    # -- building
    def get_row_at(self, position: int) -> list[Text]:
        """The cells of row `position` (as DataTable.get_row_at)."""
        return self.cells(position)

    def rebuild(self) -> None:
        """Take the current width and theme: rows are drawn again as they are shown."""
        self._built_for = self.scrollable_content_region.width
        self._widths = self.widths()
        self._strips.clear()
        self._sync_size(exact=True)
        self.cursor_row = min(max(self.cursor_row, 0), max(self.row_count - 1, 0))
        self.refresh()

    def _sync_size(self, exact: bool = False) -> None:
        # a new virtual size costs a layout pass of the whole screen: while rows arrive one by one
        # (a replay), grow a page at a time, so most new rows only repaint their own line
        rows = self.row_count + 1  # + the header
        page = max(self.scrollable_content_region.height, 1)
        height = rows if exact else max(1, -(-rows // page)) * page
        if not exact and self.virtual_size.height >= rows:
            return
        size = Size(self.scrollable_content_region.width or 1, height)
        if size != self.virtual_size:
            self.virtual_size = size

    def row_added(self) -> None:
        """A row was appended (row_count grew by one)."""
        if not self._widths:
            self.rebuild()
            return
        self._sync_size()
        position = self.row_count - 1
        y = position + 1 - self.scroll_offset.y
        if 0 < y < self.scrollable_content_region.height:
            self.refresh_line(y)

    def redraw_row(self, position: int) -> None:
        for key in [k for k in self._strips if k[0] == position]:
            del self._strips[key]
        self.refresh()

    def on_resize(self) -> None:
        if self.scrollable_content_region.width != self._built_for:
            self.rebuild()

    def on_mount(self) -> None:
        # band colours are the theme's, taken when a row is drawn: a new theme draws the rows again
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.rebuild())

    def on_unmount(self) -> None:
        # the signal keys its subscribers weakly, but the callback holds this table: a closed review
        # queue or replay stayed alive (with every session it showed) until the next theme change
        self.app.theme_changed_signal.unsubscribe(self)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()
        self.refresh()

    def on_focus(self) -> None:
        self._strips.clear()  # the cursor's colours differ with focus
        self.refresh()

    def on_blur(self) -> None:
        self._strips.clear()
        self.refresh()

    # -- drawing
    def _line(self, cells: list[Text]) -> Text:
        # each cell padded by one space either side, as a DataTable draws it
        line = Text(no_wrap=True, end="")
        for cell, width in zip(cells, self._widths, strict=False):
            cell = cell.copy()
            cell.truncate(width, pad=True)
            line.append(" ")
            line.append_text(cell)
            line.append(" ")
        return line

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if not self._widths or width != self._built_for:
            # a vertical scrollbar that came with the rows narrows the rows without a resize
            self._built_for, self._widths = width, self.widths()
            self._strips.clear()
        if y == 0:  # the header stays at the top
            style = self.get_component_rich_style("row-table--header")
            header = self._line([Text(name) for name in self.headers()])
            return Strip(header.render(self.app.console)).apply_style(style).extend_cell_length(width, style).crop(0, width)
        position = self.scroll_offset.y + y - 1
        if position >= self.row_count:
            return Strip.blank(width, self.rich_style)
        cursor = position == self.cursor_row
        key = (position, cursor, self.has_focus, width)
        strip = self._strips.get(key)
        if strip is None:
            names = ["row-table--cursor"] if cursor else ["row-table--even-row" if position % 2 else "row-table--odd-row"]
            style = self.rich_style + self.get_component_rich_style(*names)
            line = self._line(self.cells(position))
            if cursor:
                line = Text(line.plain, no_wrap=True, end="")  # the cursor's own colours, readable on any band
            strip = Strip(line.render(self.app.console)).apply_style(style).extend_cell_length(width, style).crop(0, width)
            self._strips[key] = strip
        return strip

    # -- the cursor
    def validate_cursor_row(self, value: int) -> int:
        return max(0, min(self.row_count - 1, value)) if self.row_count else 0

    def watch_cursor_row(self, old: int, new: int) -> None:
        self.refresh()
        if not self.row_count:
            return
        self.scroll_to_region(Region(0, new, 1, 2), animate=False, force=True)  # the row and the header above it
        if old != new:
            self.post_message(self.RowHighlighted(self, new))

    def move_cursor(self, *, row: int, animate: bool = False) -> None:
        self.cursor_row = row

    def action_move(self, step: int) -> None:
        self.cursor_row += step

    def action_page(self, direction: int) -> None:
        self.cursor_row += direction * max(1, self.scrollable_content_region.height - 2)

    def action_jump(self, where: int) -> None:
        self.cursor_row = self.row_count - 1 if where < 0 else 0

    def on_click(self, event: events.Click) -> None:
        if event.y >= 1:
            position = self.scroll_offset.y + event.y - 1
            if 0 <= position < self.row_count:
                self.cursor_row = position
