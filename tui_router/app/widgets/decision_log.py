"""Decision log: one row per turn (a DataTable), plus the turn's full message and fallback output."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from ...session import Turn
from ..format import OUTCOME_TEXT, clock_time, fmt_prob, shorten
from ..view import BAND_VARIABLE

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
COMPACT_COLUMNS = [  # no turn number: the panes' subtitles and notifications name it
    ("message", "message", 0),
    ("choice", "choice", 13),
    ("conf", "conf", 4),
    ("band", "band", 10),
    ("outcome", "outcome", 8),
    ("label", "label", 11),
]
MIN_MESSAGE = 12


class DecisionLog(DataTable):
    """The turns of the session; the highlighted row is the selected turn."""

    BINDINGS = [
        Binding("a", "app.label_accept", "Accept", id="label.accept", tooltip="Label the turn with its choice"),
        Binding("l", "app.label_pick", "Label", id="label.pick", tooltip="Pick the label from every option"),
        Binding("x", "app.label_clear", "Clear", id="label.clear", tooltip="Clear the turn's label"),
        Binding("f", "app.fallback", "Fallback", id="turn.fallback", tooltip="Send the turn to the fallback LLM command"),
        Binding("c", "app.cancel_fallback", "Cancel", id="turn.cancel_fallback", tooltip="Stop the running fallback command"),
        Binding("i", "app.focus_input", "Type", id="focus.input", tooltip="Type a new message", show=False),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.compact = False
        self.turns: list[Turn] = []
        self.flags: dict[int, str] = {}  # index -> "routing" / "fallback running"
        self._columns_for_width = -1

    # -- layout --------------------------------------------------------------------------
    def column_spec(self) -> list[tuple[str, str, int]]:
        spec = COMPACT_COLUMNS if self.compact else WIDE_COLUMNS
        width = self.content_region.width or self.size.width or 80
        fixed = sum(w for _, _, w in spec) + 2 * len(spec) + 1  # cell padding + scrollbar slack
        message = max(MIN_MESSAGE, width - fixed)
        return [(k, h, w or message) for k, h, w in spec]

    def rebuild(self) -> None:
        """Re-create columns for the current width, then every row (keeps the cursor)."""
        row = self.cursor_row
        self.clear(columns=True)
        cols = self.column_spec()
        self._columns_for_width = self.content_region.width
        for key, header, width in cols:
            self.add_column(header, key=key, width=width)
        for index, turn in enumerate(self.turns):
            self.add_row(*self._cells(index, turn), key=str(index))
        if self.turns:
            self.move_cursor(row=min(max(row, 0), len(self.turns) - 1), animate=False)

    def on_resize(self) -> None:
        if self.content_region.width != self._columns_for_width:
            self.rebuild()

    # -- rows ----------------------------------------------------------------------------
    def _colour(self, variable: str) -> str:
        return self.app.theme_variables.get(variable, "")

    def _cells(self, index: int, turn: Turn) -> list[Text]:
        widths = {k: w for k, _, w in self.column_spec()}
        d = turn.decision
        flag = self.flags.get(index, "")

        def cell(key: str, value: str, style: str = "") -> Text:
            return Text(shorten(value, widths[key]) if key in widths else value, style=style, no_wrap=True, end="")

        values: dict[str, Text] = {
            "n": cell("n", str(index + 1), "dim"),
            "time": cell("time", clock_time(turn.at), "dim"),
            "message": cell("message", turn.message),
        }
        if d is None:
            values["choice"] = cell("choice", flag or "routing…", "dim italic")
            for key in ("conf", "band", "action", "outcome"):
                values[key] = cell(key, "")
        else:
            choice = d.rerouted_to or d.choice or "-"
            values["choice"] = cell("choice", choice, "bold" if d.rerouted_to else "")
            values["conf"] = cell("conf", fmt_prob(d.confidence))
            values["band"] = cell("band", d.band, f"bold {self._colour(BAND_VARIABLE.get(d.band, 'foreground'))}")
            values["action"] = cell("action", d.action)
            outcome = flag or OUTCOME_TEXT.get(d.outcome, d.outcome)
            if d.outcome == "pending" and d.action == "fallback" and not flag:
                outcome = "llm?"  # fallback pending: `f` sends it
            values["outcome"] = cell("outcome", outcome, "italic" if flag else "")
        values["label"] = cell("label", turn.label or "", f"bold {self._colour('success')}")
        return [values[key] for key, _, _ in self.column_spec()]

    def set_turns(self, turns: list[Turn]) -> None:
        self.turns = turns
        self.rebuild()

    def upsert(self, index: int) -> None:
        """Add or refresh the row of turn `index` (already in self.turns)."""
        key = str(index)
        cells = self._cells(index, self.turns[index])
        if key in self.rows:
            for (col, _, _), value in zip(self.column_spec(), cells, strict=True):
                self.update_cell(key, col, value)
        else:
            self.add_row(*cells, key=key)

    def select(self, index: int) -> None:
        if 0 <= index < self.row_count:
            self.move_cursor(row=index, animate=False)

    @property
    def selected_index(self) -> int | None:
        if not self.turns or self.cursor_row < 0 or self.cursor_row >= self.row_count:
            return None
        return self.cursor_row
