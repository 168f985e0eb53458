"""Decision log: one row per turn, drawn by one line-API widget with a cache per row.

Not a DataTable (nor an OptionList): both re-render every visible row whenever any row changes,
which cost most of a turn's time. Here a new or changed turn re-renders only its own line, so the
log stays cheap at thousands of rows. The header is a separate line above, with the same widths.
"""

from __future__ import annotations

from textual import events
from textual.binding import Binding
from textual.content import Content
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ...session import Turn
from ...textsafe import visible
from ..format import OUTCOME_TEXT, clock_time, fmt_prob, shorten
from ..label_undo import UNDO_BINDING
from ..view import BAND_STYLE
from .text import PaneText

# (key, header, width); the message column takes whatever width is left.
WIDE_COLUMNS = [
    ("n", "#", 3),
    ("time", "time", 8),
    ("message", "message", 0),
    ("choice", "choice", 18),
    ("conf", "conf", 4),
    ("band", "band", 10),
    ("action", "action", 8),
    ("outcome", "outcome", 9),
    ("label", "label", 16),
]
# At 80 columns: no number, time and action; narrower ids (cut with an ellipsis, never silently).
# The band column is narrow here ("unres" for unresolved) so ids and outcomes ("escalated") fit.
COMPACT_COLUMNS = [
    ("message", "message", 0),
    ("choice", "choice", 16),
    ("conf", "conf", 4),
    ("band", "band", 6),
    ("outcome", "outcome", 9),
    ("label", "label", 12),
]
SHORT_BAND = {"unresolved": "unres"}
GAP = 2
MIN_MESSAGE = 12
NARROWEST = 8  # a column cut to this still shows a word and its ellipsis
NARROWEST_ID = min(w for k, _, w in COMPACT_COLUMNS if k in ("choice", "label"))  # longer ids may be cut


class DecisionLog(ScrollView, can_focus=True):
    """The turns of the session; the row under the cursor is the selected turn."""

    COMPONENT_CLASSES = {"decision-log--row", "decision-log--cursor"}
    BINDINGS = [
        Binding("a", "app.label_accept", "Accept", id="label.accept", tooltip="Label the turn with its choice"),
        Binding("l", "app.label_pick", "Pick", id="label.pick", tooltip="Pick the label from every option"),
        Binding("x", "app.label_clear", "Clear", id="label.clear", tooltip="Clear the turn's label"),
        UNDO_BINDING,
        Binding("f", "app.fallback", "Fallback", id="turn.fallback", tooltip="Send the turn to the fallback LLM command"),
        # while a fallback runs the footer shows `c Cancel` instead of `f Fallback` (with both, at 80
        # columns it cut "f2 Catalog" to "f"); f still says why it cannot start another one
        Binding("f", "app.fallback_while_running", "Fallback", id="turn.fallback_running", show=False, tooltip="Say that a fallback command is running"),
        Binding("c", "app.cancel_fallback", "Cancel", id="turn.cancel_fallback", tooltip="Stop the running fallback command"),
        # priority: run when the app reads the key, before the keys after it are sent to a widget,
        # so "ihello" typed fast puts "hello" in the message box (see app.action_focus_input)
        Binding("i", "app.focus_input", "Type", id="focus.input", tooltip="Type a new message", show=False, priority=True),
        Binding("up", "move(-1)", "Up", id="log.up", show=False, tooltip="Previous turn"),
        Binding("down", "move(1)", "Down", id="log.down", show=False, tooltip="Next turn"),
        Binding("pageup", "page(-1)", "Page up", id="log.page_up", show=False, tooltip="A page of turns up"),
        Binding("pagedown", "page(1)", "Page down", id="log.page_down", show=False, tooltip="A page of turns down"),
        Binding("home", "jump(0)", "First", id="log.first", show=False, tooltip="The first turn"),
        Binding("end", "jump(-1)", "Last", id="log.last", show=False, tooltip="The last turn"),
        Binding("enter", "select_row", "Open", id="log.open", show=False, tooltip="Confirm a waiting turn or read its fallback output"),
    ]

    class RowHighlighted(Message):
        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    class RowSelected(Message):
        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    cursor: reactive[int | None] = reactive(None, always_update=True)

    def __init__(self, header: PaneText, **kwargs) -> None:
        super().__init__(**kwargs)
        self.header = header
        self.compact = False
        self.turns: list[Turn] = []
        self.flags: dict[int, str] = {}  # index -> "llm…" while its fallback command runs
        # turns that came from the file without a decision (a hand-written eval case): the console
        # never routes them, so their row says so instead of "routing…"
        self.unrouted: set[int] = set()
        self.cells: dict[int, dict[str, str]] = {}  # what each row shows, by column key
        self._prompts: dict[int, Content] = {}
        self._strips: dict[tuple[int, bool, bool, int], Strip] = {}
        self._built_for = -1

    # -- layout --------------------------------------------------------------------------
    def column_spec(self) -> list[tuple[str, str, int]]:
        spec = COMPACT_COLUMNS if self.compact else WIDE_COLUMNS
        width = self.scrollable_content_region.width or self.size.width or 80
        fixed = sum(w for _, _, w in spec) + GAP * (len(spec) - 1) + 1
        least = MIN_MESSAGE
        short = fixed + MIN_MESSAGE - width
        if self.compact and short > 0:
            # below 72 columns (60x20) the label column fell off the right edge, cut silently: the
            # choice and label columns give way down to NARROWEST, then the message
            widths = {k: w for k, _, w in spec}
            for key in ("choice", "label"):
                take = min(short, widths[key] - NARROWEST)
                widths[key] -= take
                short -= take
                fixed -= take
            spec = [(k, h, widths[k]) for k, h, _ in spec]
            least = NARROWEST
        message = max(least, width - fixed)
        return [(k, h, w or message) for k, h, w in spec]

    def id_room(self) -> tuple[int, int]:
        """Cells of the choice and label columns: a longer id is cut there."""
        widths = {k: w for k, _, w in self.column_spec()}
        return widths["choice"], widths["label"]

    def rebuild(self) -> None:
        """Re-format every row for the current width."""
        self._built_for = self.scrollable_content_region.width
        spec = self.column_spec()
        self.header.set_content(Content.assemble(*self._line({k: (h, "bold $text-muted") for k, h, _ in spec}, spec)))
        self._prompts = {i: self._prompt(i, spec) for i in range(len(self.turns))}
        self._strips.clear()
        self._sync_size()
        self.refresh()

    def on_resize(self) -> None:
        self._fit_width()
        self._sync_size()  # the page the virtual height grows by is the new height
        # a shorter log (80x24 -> 60x20) kept its scroll offset: the selected turn, the last one,
        # was below the fold while the panes showed it
        self.call_after_refresh(self._show_cursor)

    def _show_cursor(self) -> None:
        # and a taller log (the header back to one line, a bigger terminal) kept it too: blank rows
        # under the last turn while turns above it were out of view
        rows, height = len(self.turns), self.scrollable_content_region.height
        if height and self.scroll_offset.y + height > rows:
            self.scroll_to(y=max(0, rows - height), animate=False, force=True, immediate=True)
        if self.cursor is not None:
            self.scroll_to_region(Region(0, self.cursor, 1, 1), animate=False, force=True, immediate=True)

    def watch_show_vertical_scrollbar(self, old: bool, new: bool) -> None:
        # The scrollbar that comes with the first row past a page takes two cells without a Resize:
        # the rows drawn before it stayed two cells too wide (the label column under the scrollbar,
        # cut silently, and a horizontal scrollbar taking a row of the log), the new rows narrower.
        if old != new:
            self.call_after_refresh(self._fit_width)

    def _fit_width(self) -> None:
        if self.scrollable_content_region.width != self._built_for:
            self.rebuild()
            if self.cursor is not None:  # new column widths: the detail names the ids they now cut
                self.post_message(self.RowHighlighted(self.cursor))

    def notify_style_update(self) -> None:
        # a new theme (palette: Theme) restyles the widget, but rows drawn before kept the old
        # theme's colours: a dark stripe of rows in a light theme, until each row was redrawn
        super().notify_style_update()
        self._strips.clear()
        self.refresh()

    def _sync_size(self) -> None:
        # A new virtual size costs a layout pass of the whole screen: grow in steps of a page, so
        # most new rows only repaint their own line.
        page = max(self.scrollable_content_region.height, 1)
        rows = len(self.turns)
        height = max(1, -(-rows // page)) * page
        size = Size(self.scrollable_content_region.width or 1, height)
        if size != self.virtual_size:
            self.virtual_size = size

    # -- rows ----------------------------------------------------------------------------
    @staticmethod
    def _line(values: dict[str, tuple[str, str]], spec: list[tuple[str, str, int]]) -> list[tuple[str, str]]:
        parts: list[tuple[str, str]] = []
        for position, (key, _, width) in enumerate(spec):
            text, style = values[key]
            text = shorten(text, width)
            right = key in ("n", "conf")
            padded = text.rjust(width) if right else text + " " * max(0, width - _cells(text))
            parts.append((padded, style))
            if position < len(spec) - 1:
                parts.append((" " * GAP, ""))
        return parts

    def _values(self, index: int, turn: Turn) -> dict[str, tuple[str, str]]:
        d = turn.decision
        flag = self.flags.get(index, "")
        values: dict[str, tuple[str, str]] = {
            "n": (str(index + 1), "$text-muted"),
            "time": (clock_time(turn.at), "$text-muted"),
            "message": (turn.message, ""),
            "label": (turn.label or "", "bold $text-success"),
        }
        if d is None:
            if "mcp:search_tools" in turn.tags:
                waiting = "search"  # an agent's tool search has no decision
            else:
                waiting = "not routed" if index in self.unrouted else "routing…"
            values.update(choice=(flag or waiting, "italic $text-muted"), conf=("", ""), band=("", ""), action=("", ""), outcome=("", ""))
            return values
        outcome = flag or OUTCOME_TEXT.get(d.outcome, d.outcome)
        if d.outcome == "pending" and d.action == "fallback" and not flag:
            outcome = "llm?"  # fallback pending: `f` sends it
        if d.band == "unresolved" and not d.rerouted_to:
            # an invalid or missing answer chose nothing: its choice field (the server's, refused)
            # read in this column as a pick of that option, the none option most often
            choice = ("-", "italic $text-muted")
        else:
            choice = (d.rerouted_to or d.choice or "-", "bold" if d.rerouted_to else "")
        values.update(
            choice=choice,
            conf=(fmt_prob(d.confidence), ""),
            band=(SHORT_BAND.get(d.band, d.band) if self.compact else d.band, BAND_STYLE.get(d.band, "")),
            action=(d.action, ""),
            outcome=(outcome, "italic" if flag else ""),
        )
        return values

    def _prompt(self, index: int, spec: list[tuple[str, str, int]]) -> Content:
        values = self._values(index, self.turns[index])
        self.cells[index] = {k: shorten(values[k][0], w) for k, _, w in spec}
        return Content.assemble(*self._line(values, spec))

    def set_turns(self, turns: list[Turn]) -> None:
        self.turns = turns
        self.unrouted = {i for i, turn in enumerate(turns) if turn.decision is None}
        self.cells.clear()
        self.flags.clear()
        self.rebuild()
        self.cursor = len(turns) - 1 if turns else None

    def upsert(self, index: int) -> None:
        """Add or re-draw the row of turn `index` (already in self.turns); only that line re-renders."""
        self._prompts[index] = self._prompt(index, self.column_spec())
        for key in [k for k in self._strips if k[0] == index]:
            del self._strips[key]
        self._sync_size()
        self.refresh_line(index)

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        if index >= len(self.turns) or index not in self._prompts:
            return Strip.blank(width, self.get_visual_style("decision-log--row").rich_style)
        key = (index, index == self.cursor, self.has_focus, width)
        strip = self._strips.get(key)
        if strip is None:
            classes = ("decision-log--row", "decision-log--cursor") if index == self.cursor else ("decision-log--row",)
            style = self.get_visual_style(*classes)
            prompt = self._prompts[index]
            if index == self.cursor:
                # the cursor row in the cursor's own colours: a band colour on the cursor background
                # was unreadable ("low" vanished in it, issue 13); the band is spelled out anyway
                prompt = Content(prompt.plain)
            strip = prompt.to_strips(self, prompt, width, 1, style)[0].extend_cell_length(width, style.rich_style)
            self._strips[key] = strip
        return strip.crop(self.scroll_offset.x, self.scroll_offset.x + width)

    # -- the cursor ----------------------------------------------------------------------
    def watch_cursor(self, old: int | None, new: int | None) -> None:
        for index in (old, new):
            if index is not None:
                self.refresh_line(index)
        if new is not None:
            self.scroll_to_region(Region(0, new, 1, 1), animate=False, force=True)
            self.post_message(self.RowHighlighted(new))

    def validate_cursor(self, value: int | None) -> int | None:
        if value is None or not self.turns:
            return None
        return max(0, min(len(self.turns) - 1, value))

    def on_focus(self) -> None:
        self._strips.clear()  # the cursor style differs with focus
        self.refresh()

    def on_blur(self) -> None:
        self._strips.clear()
        self.refresh()

    def action_move(self, step: int) -> None:
        if self.turns:
            self.cursor = (self.cursor if self.cursor is not None else len(self.turns) - 1) + step

    def action_page(self, direction: int) -> None:
        self.action_move(direction * max(1, self.scrollable_content_region.height - 1))

    def action_jump(self, where: int) -> None:
        if self.turns:
            self.cursor = len(self.turns) - 1 if where < 0 else where

    def action_select_row(self) -> None:
        if self.cursor is not None:
            self.post_message(self.RowSelected(self.cursor))

    def on_click(self, event: events.Click) -> None:
        index = self.scroll_offset.y + event.y
        if 0 <= index < len(self.turns):
            if index == self.cursor and event.chain >= 2:
                self.post_message(self.RowSelected(index))
            self.cursor = index

    def select(self, index: int) -> None:
        if 0 <= index < len(self.turns):
            self.cursor = index

    @property
    def selected_index(self) -> int | None:
        return self.cursor if self.turns and self.cursor is not None and self.cursor < len(self.turns) else None

    @property
    def row_count(self) -> int:
        return len(self.turns)

    def row_cells(self, index: int) -> dict[str, str]:
        """What row `index` shows, by column key (for tests and people reading the code)."""
        return dict(self.cells.get(index, {}))


def full_ids(turn: Turn, room: tuple[int, int] = (NARROWEST_ID, NARROWEST_ID)) -> Content | None:
    """The turn's choice, re-routed option and label in full, for the detail below the log, when
    the log cuts one: `room` is the width of its choice and label columns (DecisionLog.id_room).
    A 64-character id was cut there with … and could be read in full nowhere but the Catalog pane."""
    d = turn.decision
    chosen = d.choice if d and d.band != "unresolved" else None  # an unresolved turn chose nothing
    shown_choice = (d.rerouted_to or chosen) if d else None  # what the choice column shows
    if (not shown_choice or _cells(shown_choice) <= room[0]) and (not turn.label or _cells(turn.label) <= room[1]):
        return None
    ids = [("choice ", chosen), ("re-routed to ", d.rerouted_to if d else None), ("label ", turn.label)]
    parts = [Content.assemble((head, "$text-muted"), visible(value, single_line=True)) for head, value in ids if value]
    return Content(" · ").join(parts)


def _cells(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)
