"""The review queue: unlabelled turns from several session files, least certain first, labelled by key.

The queue, the labels and the undo history are tui_router.review.Review (no Textual); this screen
draws them and maps keys to it. Each label is written to its own file as it is given.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Static

from ...errors import UserError
from ...review import LabelEdit, Review
from ...textsafe import visible
from ..format import cells, shorten, shorten_start
from ..view import BAND_VARIABLE, TurnView
from ..widgets.candidates import CandidatesView
from ..widgets.distribution import DistributionView
from ..widgets.row_table import RowTable
from ..widgets.turn_panes import compose_turn_panes
from ..widgets.wrapped_lines import WrappedLines


@dataclass
class Step:
    """What one key did: the label change (if any) and a note for the operator."""

    edit: LabelEdit | None = None
    note: str = ""
    severity: Literal["information", "warning", "error"] = "information"
    title: str = ""


class ReviewStepDone(Message):
    """A review key's step finished (its file written, if it changed a label)."""

    def __init__(self, step: Step) -> None:
        super().__init__()
        self.step = step


class QueueTable(RowTable):
    """One row per queued turn: file, turn, margin, band, choice, label, message (a RowTable: only
    the rows on screen are formatted, whatever the length of the queue)."""

    COLUMNS = [("file", 14), ("#", 3), ("margin", 6), ("band", 10), ("choice", 16), ("label", 16), ("message", 0)]

    def __init__(self, review: Review, **kwargs) -> None:
        super().__init__(**kwargs)
        self.review = review

    @property
    def row_count(self) -> int:
        return len(self.review.entries)

    def headers(self) -> list[str]:
        return [name for name, _ in self.COLUMNS]

    def widths(self) -> list[int]:
        width = self.scrollable_content_region.width or 80
        widths = [w for _, w in self.COLUMNS]
        spare = width - (sum(widths) + 2 * len(self.COLUMNS) + 1)  # what is left for the message
        # at 80 columns the fixed columns alone filled the row and the message was drawn off screen:
        # narrow the band, label, choice and file columns (ids end in …) before the message goes
        for i, low in ((3, 7), (5, 10), (4, 12), (0, 10)):
            if spare >= 24:
                break
            cut = min(widths[i] - low, 24 - spare)
            widths[i] -= cut
            spare += cut
        widths[-1] = max(10, spare)
        return widths

    def cells(self, position: int) -> list[Text]:
        entry = self.review.entries[position]
        label = self.review.turn(position).label
        band_colour = self.app.theme_variables.get(BAND_VARIABLE.get(entry.band, ""), "")
        widths = self.widths()
        values = [
            (shorten_start(entry.file.name, widths[0]), "dim"),  # names differ at the end
            (str(entry.turn_number), "dim"),
            ("-" if entry.margin is None else f"{entry.margin:.2f}", ""),
            (entry.band, band_colour),
            (entry.choice or "-", ""),
            (label or "", "bold"),
            (entry.message, ""),
        ]
        return [Text(shorten(v, w), style=s, no_wrap=True, end="") for (v, s), w in zip(values, widths, strict=True)]


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
        self._pending: deque[Callable[[], Step]] = deque()
        self._draining = False
        self._moved_here: set[int] = set()  # rows the screen moved the cursor to (not the operator)

    def compose(self) -> ComposeResult:
        yield Static("", id="review-status")
        with Vertical(id="review-main"):
            yield from compose_turn_panes("review")
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
        for note in self.review.copies:  # a file copied under another name: its turns are queued once
            self.notify(f"{note}.", timeout=12, markup=False)
        if not self.review.entries:
            self.notify(self.empty_note(), markup=False)

    def empty_note(self) -> str:
        """Why the queue is empty. "Every turn in these files has a label" was said of no files at all."""
        if not self.review.sessions:
            return "Nothing to review: there is no session file yet. Route some messages in the console first."
        return "Nothing to review: every turn in these files has a label."

    # -- drawing
    def _header(self) -> None:
        r = self.review
        files = len(r.sessions)
        entry = r.current
        counts = f"{r.reviewed} reviewed · {r.remaining} remaining"
        queued = f" of {len(r.entries)} queued in {files} file{'' if files == 1 else 's'}"
        room = self.app.size.width - 2 - len("review ") - len(counts) - len(queued) - len(" │ ")
        # the whole message of the turn being labelled (the queue's column cuts it short); an empty
        # queue says why on this line, where it stays, not only in a notification that fades
        second: list[str | tuple[str, str]] = (
            [("\nmessage ", "$text-muted"), shorten(entry.message, max(20, 2 * self.app.size.width - 12)) if entry else "-"]
            if r.entries
            else ["\n", (self.empty_note(), "$text-muted")]
        )
        self.query_one("#review-status", Static).update(
            Content.assemble(
                ("review ", "bold $accent"),
                (counts, "bold"),
                (queued, "$text-muted"),
                (" │ ", "$text-muted"),
                self._where(room),  # one line at 80 columns
                *second,
            )
        )

    def _where(self, room: int) -> str:
        """The current file and turn (and reviewer when there is room) in `room` cells: a file name
        keeps its end, where time-named files differ."""
        r, entry = self.review, self.review.current
        if entry is None:
            return "empty"
        tail = f" turn {entry.turn_number}"
        # in terminal cells: a reviewer or file named in CJK is two a character, and by len() the
        # line wrapped at 110 to 120 columns
        who = visible(f" · reviewer {r.reviewer}", single_line=True) if r.reviewer else ""
        name = visible(entry.file.name, single_line=True)
        if cells(name) + cells(tail) + cells(who) > room:
            who = ""
        return shorten_start(name, max(8, room - cells(tail) - cells(who))) + tail + who

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
            self._moved_here.add(self.review.position)
            self.table.move_cursor(row=self.review.position, animate=False)
        view = TurnView.of(
            self.review.turn(),
            router.catalog.none_option if router else "defer_to_llm",
            self.app.config.policy.confidence,
            heading=f"review {self.review.position + 1}",
        )
        candidates.show(view, router.catalog if router else None)
        distribution.show(view)
        subtitle = Content(visible(f"{entry.file.name} turn {entry.turn_number}", single_line=True))  # a file name: untrusted
        for pane in ("#review-candidates-pane", "#review-distribution-pane"):
            self.query_one(pane).border_subtitle = subtitle

    @on(RowTable.RowHighlighted, "#review-queue")
    def _highlighted(self, event: RowTable.RowHighlighted) -> None:
        row = event.cursor_row
        if row in self._moved_here:  # the screen moved the cursor to follow the queue
            self._moved_here.discard(row)
            return
        if 0 <= row < len(self.review.entries):  # the operator moved it (arrows, mouse): a step too

            def go() -> None:
                self.review.position = row

            self._move(go)

    def on_router_changed(self) -> None:
        self.show_current()

    # -- changing
    # Every key is one step on a queue drained in order by one worker: a label is a file read and
    # an atomic write (with fsync), so it runs off the UI thread, and a key pressed meanwhile (u
    # right after 1) still applies to the state the previous key left.
    def _step(self, op: Callable[[], Step]) -> None:
        self._pending.append(op)
        if not self._draining:
            self._draining = True
            self._drain()

    @work(group="review", exit_on_error=False)
    async def _drain(self) -> None:
        try:
            while self._pending:
                op = self._pending.popleft()
                try:
                    step = await asyncio.to_thread(op)
                except UserError as exc:  # the file cannot be read or written, or its turn moved
                    step = Step(note="\n".join(exc.lines()), severity="error", title="Label not saved")
                self.post_message(ReviewStepDone(step))
        finally:
            self._draining = False

    def on_review_step_done(self, message: ReviewStepDone) -> None:
        step = message.step
        if step.edit is not None:
            self.touched.add((str(step.edit.file), step.edit.index))
            self.table.redraw_row(step.edit.position)
            hook = getattr(self.app, "review_label_written", None)
            if hook is not None:
                hook(step.edit.file, step.edit.index)
            if step.edit.backup is not None:
                self.notify(
                    f"{step.edit.file.name} had comments, which saving cannot keep: the file as it was is in {step.edit.backup.name}.",
                    severity="warning", timeout=15, markup=False,
                )
        if step.note:
            self.notify(step.note, title=step.title, severity=step.severity, timeout=10 if step.severity == "error" else 5, markup=False)
        self.show_current()

    def _label_and_go_on(self, option: str) -> Step:
        edit = self.review.set_label(option)
        self.review.next_unlabelled()
        return Step(edit)

    def action_label_nth(self, n: int) -> None:
        def op() -> Step:
            option = self.review.option(n)
            if option is None:
                return Step(note=f"This turn has no option {n}.", severity="warning")
            return self._label_and_go_on(option)

        self._step(op)

    def action_accept(self) -> None:
        def op() -> Step:
            if self.review.current is None:
                return Step()
            edit = self.review.accept()
            if edit is None:
                return Step(note="This turn has no usable choice to accept: press a number or l.", severity="warning")
            self.review.next_unlabelled()
            return Step(edit)

        self._step(op)

    def action_pick(self) -> None:
        if self.review.current is None:
            return
        items = self.app.picker_items() if hasattr(self.app, "picker_items") else []
        if not items:
            self.notify("The catalog is still loading.", severity="warning", markup=False)
            return
        from .picker import OptionPicker

        entry = self.review.current
        position = self.review.position

        def picked(option: str | None) -> None:
            if option is not None:
                def op() -> Step:
                    self.review.position = position  # the turn the picker was opened for
                    return self._label_and_go_on(option)

                self._step(op)

        preselect = self.review.turn().label or entry.choice
        self.app.push_screen(OptionPicker(f"Label {entry.file.name} turn {entry.turn_number}", items, preselect=preselect), picked)

    def action_clear(self) -> None:
        def op() -> Step:
            if self.review.current is None:
                return Step()
            if not self.review.turn().label:
                return Step(note="This turn has no label.")
            return Step(self.review.set_label(None))

        self._step(op)

    def _move(self, how: Callable[[], None]) -> None:
        def op() -> Step:
            how()
            return Step()

        self._step(op)

    def action_skip(self) -> None:
        self._move(self.review.next)

    def action_next(self) -> None:
        self._move(self.review.next)

    def action_previous(self) -> None:
        self._move(self.review.previous)

    def action_undo(self) -> None:
        def op() -> Step:
            if not self.review.history:
                return Step(note="Nothing to undo.")
            edit = self.review.undo()
            assert edit is not None
            return Step(edit, note=f"Undone: {edit.file.name} turn {edit.index + 1}.")

        self._step(op)

    def action_close(self) -> None:
        if self.quit_on_close:
            self.app.exit(0)
        else:
            self.dismiss(None)


class ReviewReadingScreen(Screen[None]):
    """What `tui-router review FILES` shows while a worker reads the files: how many, how far. The
    review keys are not bound here: a 1 or an a typed before the queue is drawn labels nothing (the
    operator has not seen the turn it would label); escape or q leaves."""

    DEFAULT_CSS = """
    ReviewReadingScreen { align: center middle; }
    #review-reading { width: 76; max-width: 100%; height: 6; padding: 1 2; border: round $primary; }
    """
    BINDINGS = [Binding("escape,q", "app.quit", "Quit", id="review.reading.quit", tooltip="Leave; nothing was changed")]

    def __init__(self, total: int) -> None:
        super().__init__(id="review-reading-screen")
        self.total = total

    def compose(self) -> ComposeResult:
        yield Static(self.note(0), id="review-reading")
        yield Footer()

    def note(self, done: int) -> Content:
        files = f"{self.total:,} session file{'' if self.total == 1 else 's'}"
        return Content.assemble(
            (f"Reading {files}…", "bold"),
            (f" {done:,} of {self.total:,}" if done else "", "$text-muted"),
            ("\nThe review queue opens once they are read; its keys wait until then.", "$text-muted"),
        )

    def progress(self, done: int) -> None:
        self.query_one("#review-reading", Static).update(self.note(done))


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
            dialog.border_subtitle = "escape: close"
            # messages come from session files: untrusted, shown as plain text; drawn a screen at a time
            # a row wider than the dialog (80 columns) goes on under its own text, not at column 0
            yield WrappedLines(visible("\n".join(self.lines)).split("\n"), hanging=2, id="whatif-scroll")
        # without its own footer the console's showed through (a Accept, l Label: keys this dialog ignores)
        yield Footer()

    def on_mount(self) -> None:
        # a long diff is taller than the dialog: focus its scroll so the keys read the rest
        self.query_one("#whatif-scroll", WrappedLines).focus()

    def action_close(self) -> None:
        self.dismiss(None)
