"""The review queue: unlabelled turns from several session files, least certain first, labelled by key.

The queue, the labels and the undo history are tui_router.review.Review (no Textual); this screen
draws them and maps keys to it. Each label is written to its own file as it is given.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Static

from ...errors import UserError
from ...review import LabelEdit, Review
from ...textsafe import visible
from ..format import shorten
from ..view import BAND_VARIABLE, TurnView
from ..widgets.candidates import CandidatesView
from ..widgets.distribution import DistributionView


class QueueTable(DataTable):
    """One row per queued turn: file, turn, margin, band, choice, label, message."""

    COLUMNS = [("file", 14), ("#", 3), ("margin", 6), ("band", 10), ("choice", 16), ("label", 16), ("message", 0)]

    def __init__(self, review: Review, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.review = review
        self._built_for = -1

    def widths(self) -> list[int]:
        width = self.content_region.width or 80
        fixed = sum(w for _, w in self.COLUMNS) + 2 * len(self.COLUMNS) + 1
        return [w or max(10, width - fixed) for _, w in self.COLUMNS]

    def cells(self, position: int) -> list[Text]:
        entry = self.review.entries[position]
        label = self.review.turn(position).label
        band_colour = self.app.theme_variables.get(BAND_VARIABLE.get(entry.band, ""), "")
        values = [
            (entry.file.name, "dim"),
            (str(entry.turn_number), "dim"),
            ("-" if entry.margin is None else f"{entry.margin:.2f}", ""),
            (entry.band, band_colour),
            (entry.choice or "-", ""),
            (label or "", "bold"),
            (entry.message, ""),
        ]
        return [Text(shorten(v, w), style=s, no_wrap=True, end="") for (v, s), w in zip(values, self.widths(), strict=True)]

    def rebuild(self) -> None:
        row = self.cursor_row
        self.clear(columns=True)
        self._built_for = self.content_region.width
        for (header, _), width in zip(self.COLUMNS, self.widths(), strict=True):
            self.add_column(header, key=header, width=width)
        for position in range(len(self.review.entries)):
            self.add_row(*self.cells(position), key=str(position))
        if self.review.entries:
            self.move_cursor(row=min(max(row, 0), len(self.review.entries) - 1), animate=False)

    def redraw_row(self, position: int) -> None:
        for column, cell in zip(self.ordered_columns, self.cells(position), strict=True):
            self.update_cell(str(position), column.key, cell)

    def on_resize(self) -> None:
        if self.content_region.width != self._built_for:
            self.rebuild()


class ReviewScreen(Screen[None]):
    """Walk the queue: 1-9 label with the n-th most probable option, a accept, l pick, x clear,
    s skip, u undo, n/p next/previous."""

    DEFAULT_CSS = """
    #review-main { height: 1fr; }
    #review-top { height: 45%; min-height: 8; }
    #review-candidates-pane, #review-distribution-pane { width: 1fr; }
    #review-queue-pane { height: 1fr; }
    #review-queue { height: 1fr; background: transparent; }
    #review-status { height: auto; max-height: 3; padding: 0 1; background: $panel; }
    #review-candidates, #review-distribution { min-height: 100%; }
    """

    BINDINGS = [
        *(Binding(str(n), f"label_nth({n})", f"Option {n}", id=f"review.option{n}", show=n == 1, tooltip=f"Label with the {n}. most probable option") for n in range(1, 10)),
        Binding("a", "accept", "Accept", id="review.accept", tooltip="Label with the turn's choice"),
        Binding("l", "pick", "Pick", id="review.pick", show=False, tooltip="Label with any option"),
        Binding("x", "clear", "Clear", id="review.clear", show=False, tooltip="Clear the turn's label"),
        Binding("s", "skip", "Skip", id="review.skip", tooltip="Leave the turn unlabelled and go on"),
        Binding("u", "undo", "Undo", id="review.undo", tooltip="Undo the last label (several levels)"),
        Binding("n", "next", "Next", id="review.next", show=False, tooltip="Next queued turn"),
        Binding("p", "previous", "Previous", id="review.previous", show=False, tooltip="Previous queued turn"),
        Binding("escape,q", "close", "Back", id="review.close", tooltip="Leave the review queue; every label is saved"),
    ]

    def __init__(self, review: Review, quit_on_close: bool = False) -> None:
        super().__init__(id="review-screen")
        self.review = review
        self.quit_on_close = quit_on_close
        self.touched: set[tuple[str, int]] = set()  # (file, index) the review wrote

    def compose(self) -> ComposeResult:
        yield Static("", id="review-status")
        with Vertical(id="review-main"):
            with Horizontal(id="review-top"):
                with VerticalScroll(id="review-candidates-pane", classes="pane") as pane:
                    pane.border_title = "Candidates"
                    yield CandidatesView(id="review-candidates")
                with VerticalScroll(id="review-distribution-pane", classes="pane") as pane:
                    pane.border_title = "Distribution"
                    yield DistributionView(id="review-distribution")
            with Vertical(id="review-queue-pane", classes="pane") as pane:
                pane.border_title = "Review queue"
                pane.border_subtitle = "least certain first"
                yield QueueTable(self.review, id="review-queue")
        yield Footer()

    @property
    def table(self) -> QueueTable:
        return self.query_one(QueueTable)

    def on_mount(self) -> None:
        self.table.rebuild()
        self.table.focus()
        self.show_current()
        if not self.review.entries:
            self.notify("Nothing to review: every turn in these files has a label.", markup=False)

    # -- drawing
    def _header(self) -> None:
        r = self.review
        files = len(r.sessions)
        entry = r.current
        where = f"{entry.file.name} turn {entry.turn_number}" if entry else "empty"
        who = f" · reviewer {r.reviewer}" if r.reviewer else ""
        self.query_one("#review-status", Static).update(
            Content.assemble(
                ("review ", "bold $accent"),
                (f"{r.reviewed} reviewed · {r.remaining} remaining", "bold"),
                (f" of {len(r.entries)} queued in {files} file{'' if files == 1 else 's'}", "$text-muted"),
                (" │ ", "$text-muted"),
                visible(where + who, single_line=True),
            )
        )

    def show_current(self) -> None:
        self._header()
        entry = self.review.current
        router = getattr(self.app, "router", None)
        candidates = self.query_one("#review-candidates", CandidatesView)
        distribution = self.query_one("#review-distribution", DistributionView)
        if entry is None:
            candidates.show(None, router.catalog if router else None)
            distribution.show(None)
            return
        if self.table.cursor_row != self.review.position:
            self.table.move_cursor(row=self.review.position, animate=False)
        view = TurnView.of(
            self.review.turn(),
            router.catalog.none_option if router else "defer_to_llm",
            self.app.config.policy.confidence,
            heading=f"review {self.review.position + 1}",
        )
        candidates.show(view, router.catalog if router else None)
        distribution.show(view)
        subtitle = Content(f"{entry.file.name} turn {entry.turn_number}")
        for pane in ("#review-candidates-pane", "#review-distribution-pane"):
            self.query_one(pane).border_subtitle = subtitle

    @on(DataTable.RowHighlighted, "#review-queue")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row != self.review.position and 0 <= event.cursor_row < len(self.review.entries):
            self.review.position = event.cursor_row
            self.show_current()

    def on_router_changed(self) -> None:
        self.show_current()

    # -- changing
    def _apply(self, change) -> LabelEdit | None:
        """Run one label change; a file that cannot be written is a notification, nothing lost."""
        try:
            edit = change()
        except UserError as exc:
            self.notify("\n".join(exc.lines()), title="Label not saved", severity="error", timeout=10, markup=False)
            return None
        if edit is not None:
            self.touched.add((str(edit.file), edit.index))
            self.table.redraw_row(edit.position)
            hook = getattr(self.app, "review_label_written", None)
            if hook is not None:
                hook(edit.file, edit.index)
        return edit

    def _labelled(self, edit: LabelEdit | None) -> None:
        if edit is not None:
            self.review.next_unlabelled()
        self.show_current()

    def action_label_nth(self, n: int) -> None:
        option = self.review.option(n)
        if option is None:
            self.notify(f"This turn has no option {n}.", severity="warning", markup=False)
            return
        self._labelled(self._apply(lambda: self.review.set_label(option)))

    def action_accept(self) -> None:
        if self.review.current is None:
            return
        edit = self._apply(self.review.accept)
        if edit is None and self.review.turn().label is None:
            self.notify("This turn has no usable choice to accept: press a number or l.", severity="warning", markup=False)
        self._labelled(edit)

    def action_pick(self) -> None:
        if self.review.current is None:
            return
        items = self.app.picker_items() if hasattr(self.app, "picker_items") else []
        if not items:
            self.notify("The catalog is still loading.", severity="warning", markup=False)
            return
        from .picker import OptionPicker

        entry = self.review.current
        turn = self.review.turn()

        def picked(option: str | None) -> None:
            if option is not None:
                self._labelled(self._apply(lambda: self.review.set_label(option)))

        self.app.push_screen(OptionPicker(f"Label {entry.file.name} turn {entry.turn_number}", items, preselect=turn.label or entry.choice), picked)

    def action_clear(self) -> None:
        if self.review.current is None:
            return
        if not self.review.turn().label:
            self.notify("This turn has no label.", markup=False)
            return
        self._apply(lambda: self.review.set_label(None))
        self.show_current()

    def action_skip(self) -> None:
        self.review.next()
        self.show_current()

    def action_next(self) -> None:
        self.review.next()
        self.show_current()

    def action_previous(self) -> None:
        self.review.previous()
        self.show_current()

    def action_undo(self) -> None:
        if not self.review.history:
            self.notify("Nothing to undo.", markup=False)
            return
        edit = self._apply(self.review.undo)
        if edit is not None:
            self.notify(f"Undone: {edit.file.name} turn {edit.index + 1}.", markup=False)
        self.show_current()

    def action_close(self) -> None:
        if self.quit_on_close:
            self.app.exit(0)
        else:
            self.dismiss(None)


class WhatIfScreen(ModalScreen[None]):
    """What would change under other thresholds (tui_router.review.what_if); nothing is written."""

    DEFAULT_CSS = """
    WhatIfScreen { align: center middle; }
    #whatif-dialog { width: 110; max-width: 100%; height: 80%; border: thick $primary; border-title-color: $text-accent; padding: 0 1; background: $surface; }
    #whatif-scroll { height: 1fr; }
    """
    BINDINGS = [Binding("escape,q,enter", "close", "Close", id="whatif.close", tooltip="Close")]

    def __init__(self, title: str, lines: list[str]) -> None:
        super().__init__(id="whatif-modal")
        self.title_text = title
        self.lines = lines

    def compose(self) -> ComposeResult:
        with Vertical(id="whatif-dialog") as dialog:
            dialog.border_title = self.title_text
            with VerticalScroll(id="whatif-scroll"):
                # messages come from session files: untrusted, shown as plain text
                yield Static(Content(visible("\n".join(self.lines))), id="whatif-text")

    def action_close(self) -> None:
        self.dismiss(None)
