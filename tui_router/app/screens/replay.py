"""Replay: every turn of a session re-routed with the current catalog, backend and thresholds.

Each row shows the recorded and the new choice and band; changed rows are marked; the summary line
counts changes, fixes and breaks against the labels (tui_router.evaluate does the diffing).
"""

from __future__ import annotations

import asyncio
import time

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerState

from ...session import Session
from ...textsafe import visible
from ..format import cells, display_path, shorten, shorten_start
from ..messages import ReplayFinished, ReplayRowReady, ReplayStarted
from ..view import BAND_VARIABLE, TurnView
from ..widgets.candidates import CandidatesView
from ..widgets.distribution import DistributionView
from ..widgets.row_table import RowTable
from ..widgets.turn_panes import compose_turn_panes


def change_text(row) -> str:
    marks = []
    if not row.label_in_catalog:
        marks.append("unscored")  # its label is not an option of this catalog (the summary names it)
    if row.broken:
        marks.append("broken")
    elif row.fixed:
        marks.append("fixed")
    elif row.recorded_band is None and row.now_right is False:
        marks.append("wrong")  # hand-written, never routed: nothing to diff, but wrong against its label
    if row.choice_flipped:
        marks.append("flip")
    if row.band_changed:
        marks.append("band")
    return " ".join(marks)


SHORT_BAND = {"medium": "med", "unresolved": "unres"}
PROGRESS_EVERY = 0.1  # seconds between two updates of "Replaying n/N…"


class ReplayTable(RowTable):
    """Recorded and new choice and band per turn; changed rows marked in the last column (a
    RowTable: rows arrive one per replayed turn and only those on screen are drawn)."""

    COLUMNS = [
        ("n", "#", 3),
        ("message", "message", 0),
        ("label", "label", 14),
        ("recorded", "recorded", 16),
        ("recorded_band", "band", 10),
        ("new", "new", 16),
        ("new_band", "band", 10),
        ("change", "change", 12),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.rows_data: list = []
        self.compact = False

    def columns_for_width(self) -> list[tuple[str, str, int]]:
        width = self.scrollable_content_region.width or 80
        self.compact = width < 110
        spec = [c for c in self.COLUMNS if not (self.compact and c[0] == "label")]
        if self.compact:  # 80 columns: no label column (fixed/broken still show), short band names
            sizes = {"n": 2, "recorded": 13, "recorded_band": 5, "new": 13, "new_band": 5, "change": 10}
            spec = [(k, h, sizes.get(k, w)) for k, h, w in spec]
        fixed = sum(w for _, _, w in spec) + 2 * len(spec) + 1
        return [(k, h, w or max(10, width - fixed)) for k, h, w in spec]

    @property
    def row_count(self) -> int:
        return len(self.rows_data)

    def headers(self) -> list[str]:
        return [header for _, header, _ in self.columns_for_width()]

    def widths(self) -> list[int]:
        return [width for _, _, width in self.columns_for_width()]

    def _colour(self, band: str | None) -> str:
        return self.app.theme_variables.get(BAND_VARIABLE.get(band or "", ""), "")

    def _band(self, band: str | None) -> str:
        if band is None:
            return "-"
        return SHORT_BAND.get(band, band) if self.compact else band

    def cells(self, position: int) -> list[Text]:
        row = self.rows_data[position]
        columns = self.columns_for_width()
        widths = {k: w for k, _, w in columns}
        change = change_text(row)
        bad = row.broken or change.startswith("wrong")
        change_style = "bold " + self._colour("unresolved" if bad else ("high" if row.fixed else "medium")) if change else ""
        values = {
            "n": (str(row.index + 1), "dim"),
            "message": (row.message, ""),
            # a label no option of this catalog keeps its "(gone)" whatever the column's width
            "label": (f"{shorten(row.label, max(3, widths.get('label', 14) - 7))} (gone)", "italic " + self._colour("medium"))
            if row.label and not row.label_in_catalog
            else (row.label or "", "bold"),
            "recorded": (
                (row.recorded_choice or "-") + ("" if row.recorded_in_catalog else " (gone)") if row.recorded_band else "(not recorded)",
                "" if row.recorded_in_catalog else "italic",
            ),
            "recorded_band": (self._band(row.recorded_band), self._colour(row.recorded_band)),
            "new": (row.new_choice or "-", "bold" if row.choice_flipped else ""),
            "new_band": (self._band(row.new_band), ("bold " if row.band_changed else "") + self._colour(row.new_band)),
            "change": (change, change_style),
        }
        return [Text(shorten(values[k][0], widths[k]), style=values[k][1], no_wrap=True, end="") for k, _, _ in columns]

    def add(self, row) -> None:
        self.rows_data.append(row)
        self.row_added()

    def reset(self) -> None:
        self.rows_data = []
        self.rebuild()


class ReplayScreen(Screen[None]):
    BINDINGS = [
        Binding("r", "rerun", "Run again", id="replay.rerun", tooltip="Re-route every turn again with the current setup"),
        Binding("escape,q", "close", "Back", id="replay.close", tooltip="Leave the replay"),
    ]

    def __init__(self, session: Session, quit_on_close: bool = False) -> None:
        super().__init__(id="replay-screen")
        self.session = session
        self.quit_on_close = quit_on_close
        self.report = None
        self._progress_at = 0.0

    def compose(self) -> ComposeResult:
        yield Static("", id="replay-status")
        with Vertical(id="replay-main"):
            yield from compose_turn_panes("replay")
            with Vertical(id="replay-log-pane", classes="pane") as pane:
                pane.border_title = "Decision log"
                pane.border_subtitle = "replay"
                yield Static("", id="replay-summary")
                yield ReplayTable(id="replay-table")
        yield Footer()

    def on_mount(self) -> None:
        self._header()
        self.query_one("#replay-summary", Static).update(Content.styled("Waiting for the router…", "$text-muted"))
        self.query_one(ReplayTable).focus()
        self.replay()

    def _header(self) -> None:
        app = self.app
        router = getattr(app, "router", None)
        policy = app.config.policy
        source = display_path(self.session.path) if self.session.path else self.session.id
        if router is not None:
            name = f"{router.catalog.name} · {router.backend.name}"
            model = router.backend.model
            # the semantic model's id is about 60 characters: give up its details, then the model
            setups = [f"{name} · {model}", f"{name} · {model.split(' (', 1)[0]}", name]
        else:
            setups = [f"{app.config.catalog} · {app.config.backend}"]
        # one line at 80 columns: compact thresholds below 100, and the file keeps the end of its name
        thresholds = f"high ≥ {policy.high:g} · medium ≥ {policy.medium:g}" if app.size.width >= 100 else f"≥{policy.high:g}/≥{policy.medium:g}"
        turns = f" ({len(self.session.turns)} turns)"
        width = app.size.width - 2
        for setup in setups:  # the longest form that leaves the file name room
            # in terminal cells: a catalog named in CJK is two a character (len() let the line wrap)
            room = width - len("replay ") - len(turns) - len(" │ now: ") - cells(visible(setup, single_line=True)) - len(" │ ") - len(thresholds)
            if room + len(turns) >= 12:
                break
        if room < 12:  # the turn count is in the Decision log's summary too
            room, turns = room + len(turns), ""
        if room < 8:  # still too long (a long catalog name): the setup gives way, never the line
            setup = shorten(setup, max(8, cells(visible(setup, single_line=True)) - (8 - room)))
            room = 8
        self.query_one("#replay-status", Static).update(
            Content.assemble(
                ("replay ", "bold $warning"),
                shorten_start(source, max(8, room)),
                (turns, "$text-muted"),
                (" │ now: ", "$text-muted"),
                visible(setup, single_line=True),
                (" │ ", "$text-muted"),
                thresholds,
            )
        )

    @work(exclusive=True, exit_on_error=False, group="replay")
    async def replay(self) -> None:
        from ...evaluate import none_aliases, replay_report, replay_row

        app = self.app
        router = await app.wait_for_router()
        if router is None:
            raise RuntimeError(app.router_error or "no router is loaded")
        named = self.session.session.catalog
        if named and named != router.catalog.name:
            app.notify(
                f"This session was labelled for catalog '{named}' but the catalog in use is '{router.catalog.name}'.",
                severity="warning",
                markup=False,
            )
        rows = []
        catalog = router.catalog
        aliases = none_aliases(self.session, catalog)  # a renamed none option, read as the current one
        self.post_message(ReplayStarted(router))
        for position, turn in enumerate(self.session.turns):
            # never use a turn as evidence for itself (the local backend learns from labelled sessions)
            decision = await router.aroute(turn.message, holdout=turn.message)
            row = replay_row(position, turn, decision, catalog.none_option, catalog, aliases)
            rows.append(row)
            self.post_message(ReplayRowReady(position, row, decision))
            # in-process backends answer inline (base.adecide): without a pause here the whole replay
            # ran as one step of the event loop, the console frozen until the last of 5,000 turns
            await asyncio.sleep(0)
        self.post_message(ReplayFinished(replay_report(rows)))

    def on_replay_started(self, message: ReplayStarted) -> None:
        # "Waiting for the router…" stayed up while a slow server took its time over the first turn
        if not self.query_one(ReplayTable).rows_data:
            backend = message.router.backend
            note = backend.waiting_note()
            text = f"Replaying 1/{len(self.session.turns)}: waiting for the decision model {backend.name} · {backend.model}{'; ' + note if note else ''}…"
            self.query_one("#replay-summary", Static).update(Content.styled(visible(text), "italic $warning"))

    def on_replay_row_ready(self, message: ReplayRowReady) -> None:
        table = self.query_one(ReplayTable)
        table.add(message.row)
        total = len(self.session.turns)
        now = time.monotonic()
        if message.position == 0 or now - self._progress_at >= PROGRESS_EVERY:  # not a layout pass per row
            self._progress_at = now
            self.query_one("#replay-summary", Static).update(Content.styled(f"Replaying {message.position + 1}/{total}…", "italic $warning"))
        if message.position == 0:
            self.show_row(0)

    def on_replay_finished(self, message: ReplayFinished) -> None:
        self.report = message.report
        self.query_one(ReplayTable).rebuild()  # its exact height: no blank page to scroll into
        text = message.report.summary_line()
        style = "bold $error" if message.report.broken else ("bold $warning" if message.report.changed else "bold $success")
        self.query_one("#replay-summary", Static).update(Content.styled(text, style))

    @on(Worker.StateChanged)
    def _worker_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "replay" and event.state is WorkerState.ERROR:
            self.query_one("#replay-summary", Static).update(Content.styled(visible(f"Replay failed: {event.worker.error}"), "bold $error"))
            self.notify(f"Replay failed: {event.worker.error}", severity="error", markup=False)

    @on(RowTable.RowHighlighted, "#replay-table")
    def _highlighted(self, event: RowTable.RowHighlighted) -> None:
        self.show_row(event.cursor_row)

    def show_row(self, position: int) -> None:
        table = self.query_one(ReplayTable)
        if not 0 <= position < len(table.rows_data):
            return
        row = table.rows_data[position]
        router = self.app.router
        view = TurnView(
            message=row.message,
            decision=row.decision.to_turn_decision(),
            label=row.label,
            acceptable=list(row.acceptable),
            none_option=router.catalog.none_option if router else "defer_to_llm",
            formula=row.decision.formula,
        )
        self.query_one("#replay-candidates", CandidatesView).show(view, router.catalog if router else None)
        self.query_one("#replay-distribution", DistributionView).show(view)
        subtitle = Content(f"turn {position + 1}: new decision")
        self.query_one("#replay-candidates-pane").border_subtitle = subtitle
        self.query_one("#replay-distribution-pane").border_subtitle = subtitle

    def on_router_changed(self) -> None:
        self._header()

    def action_rerun(self) -> None:
        self.report = None
        self.query_one(ReplayTable).reset()
        self._header()
        self.replay()

    def action_close(self) -> None:
        if self.quit_on_close:
            self.app.exit(0)
        else:
            self.dismiss(None)
