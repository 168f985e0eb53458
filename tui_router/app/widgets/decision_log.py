"""Decision log: one row per turn, drawn as one OptionList (each row a pre-formatted line).

Not a DataTable: a DataTable re-renders every visible cell whenever any cell changes, which cost
most of a turn's time; here a new or changed turn re-renders only its own line. The header is a
separate line above, formatted with the same column widths.
"""

from __future__ import annotations

from textual.binding import Binding
from textual.content import Content
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from ...session import Turn
from ..format import OUTCOME_TEXT, clock_time, fmt_prob, shorten
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
COMPACT_COLUMNS = [
    ("message", "message", 0),
    ("choice", "choice", 13),
    ("conf", "conf", 4),
    ("band", "band", 10),
    ("outcome", "outcome", 8),
    ("label", "label", 11),
]
GAP = 2
MIN_MESSAGE = 12


class DecisionLog(OptionList):
    """The turns of the session; the highlighted row is the selected turn."""

    BINDINGS = [
        Binding("a", "app.label_accept", "Accept", id="label.accept", tooltip="Label the turn with its choice"),
        Binding("l", "app.label_pick", "Label", id="label.pick", tooltip="Pick the label from every option"),
        Binding("x", "app.label_clear", "Clear", id="label.clear", tooltip="Clear the turn's label"),
        Binding("f", "app.fallback", "Fallback", id="turn.fallback", tooltip="Send the turn to the fallback LLM command"),
        Binding("c", "app.cancel_fallback", "Cancel", id="turn.cancel_fallback", tooltip="Stop the running fallback command"),
        Binding("i", "app.focus_input", "Type", id="focus.input", tooltip="Type a new message", show=False),
    ]

    def __init__(self, header: PaneText, **kwargs) -> None:
        super().__init__(**kwargs)
        self.header = header
        self.compact = False
        self.turns: list[Turn] = []
        self.flags: dict[int, str] = {}  # index -> "llm…" while its fallback command runs
        self.cells: dict[int, dict[str, str]] = {}  # what each row shows, by column key
        self._built_for = -1

    # -- layout --------------------------------------------------------------------------
    def column_spec(self) -> list[tuple[str, str, int]]:
        spec = COMPACT_COLUMNS if self.compact else WIDE_COLUMNS
        width = self.content_region.width or self.size.width or 80
        fixed = sum(w for _, _, w in spec) + GAP * (len(spec) - 1) + 1
        message = max(MIN_MESSAGE, width - fixed)
        return [(k, h, w or message) for k, h, w in spec]

    def rebuild(self) -> None:
        """Re-format every row for the current width (keeps the highlighted turn)."""
        highlighted = self.highlighted
        self._built_for = self.content_region.width
        spec = self.column_spec()
        self.header.set_content(
            Content.assemble(*self._line({k: (h, "bold $text-muted") for k, h, _ in spec}, spec))
        )
        self.clear_options()
        self.add_options([Option(self._prompt(i, spec), id=str(i)) for i in range(len(self.turns))])
        if self.turns:
            self.highlighted = min(highlighted if highlighted is not None else len(self.turns) - 1, len(self.turns) - 1)

    def on_resize(self) -> None:
        if self.content_region.width != self._built_for:
            self.rebuild()

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
            values.update(choice=(flag or "routing…", "italic $text-muted"), conf=("", ""), band=("", ""), action=("", ""), outcome=("", ""))
            return values
        outcome = flag or OUTCOME_TEXT.get(d.outcome, d.outcome)
        if d.outcome == "pending" and d.action == "fallback" and not flag:
            outcome = "llm?"  # fallback pending: `f` sends it
        values.update(
            choice=(d.rerouted_to or d.choice or "-", "bold" if d.rerouted_to else ""),
            conf=(fmt_prob(d.confidence), ""),
            band=(d.band, BAND_STYLE.get(d.band, "")),
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
        self.cells.clear()
        self.flags.clear()
        self.highlighted = None
        self.rebuild()

    def upsert(self, index: int) -> None:
        """Add or re-draw the row of turn `index` (already in self.turns); only that line re-renders."""
        prompt = self._prompt(index, self.column_spec())
        if index < self.option_count:
            self.replace_option_prompt_at_index(index, prompt)
        else:
            self.add_option(Option(prompt, id=str(index)))

    def select(self, index: int) -> None:
        if 0 <= index < self.option_count:
            self.highlighted = index

    @property
    def selected_index(self) -> int | None:
        if not self.turns or self.highlighted is None or self.highlighted >= len(self.turns):
            return None
        return self.highlighted

    def row_cells(self, index: int) -> dict[str, str]:
        """What row `index` shows, by column key (for tests and people reading the code)."""
        return dict(self.cells.get(index, {}))


def _cells(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)
