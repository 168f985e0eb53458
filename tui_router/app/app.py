"""The console: type a message, see how it is routed, triage it, label it; every turn autosaved.

State lives on the app and changes only in message handlers (TurnSubmitted -> DecisionReady ->
OutcomeRecorded, LabelChanged, FallbackFinished). Workers do the slow parts (loading the router,
routing, the fallback command, writing the file) and post those messages; they never touch widgets.
Routing itself is `Router.aroute` from the core: the console holds no routing logic.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import tomli_w
from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer
from textual.worker import Worker, WorkerState

from ..config import Config, PolicyConfig
from ..errors import UserError
from ..session import (
    Session,
    SessionInfo,
    Turn,
    TurnDecision,
    atomic_write_text,
    dumps_session,
    load_session,
    new_session_id,
    session_to_dict,
    unused_path,
)
from .format import display_path, one_line, shorten
from .messages import (
    DecisionReady,
    FallbackFinished,
    LabelChanged,
    OutcomeRecorded,
    RouterReady,
    SessionSaved,
    TurnSubmitted,
)
from .screens.confirm import ConfirmRequest, ConfirmResult, ConfirmTurnModal
from .screens.help import HelpScreen
from .screens.picker import OptionPicker, PickerItem
from .screens.prompt import PromptModal
from .view import TurnView
from .widgets.candidates import CandidatesView
from .widgets.catalog_pane import CatalogPane
from .widgets.decision_log import DecisionLog
from .widgets.distribution import DistributionView
from .widgets.message_input import MessageInput
from .widgets.status import StatusLine
from .widgets.text import PaneText

if TYPE_CHECKING:
    from ..catalog import Catalog
    from ..route import Decision, Router

NARROW = 110  # below this many columns the Catalog pane collapses (F2 shows it)
WIDE = 140  # from here the Catalog pane is wider and the log shows every column
LOADING_DELAY = 0.08  # show the loading indicator only when a turn takes longer than this
BACKENDS = ("local", "bm25", "systemone", "semantic")


def fallback_pending(decision: TurnDecision | None) -> bool:
    """A turn the fallback LLM command may take: banded fallback, or a proposal the operator declined."""
    return decision is not None and (decision.action == "fallback" or decision.outcome == "declined")


class RouterConsole(App[int]):
    """tui-router's console."""

    CSS_PATH = Path(__file__).parent / "app.tcss"  # absolute, so subclasses elsewhere find it
    TITLE = "tui-router"
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = [
        Binding("f1", "help", "Help", id="app.help", tooltip="Keys, bands and where things are saved"),
        Binding("question_mark", "help", "Help", id="app.help_key", show=False, tooltip="Keys, bands and where things are saved"),
        Binding("ctrl+s", "save_as", "Save as", id="session.save_as", priority=True, show=False, tooltip="Save the session under a new name (it is autosaved anyway)"),
        Binding("f2", "toggle_catalog", "Catalog", id="view.catalog", tooltip="Show or hide the Catalog pane"),
        Binding("q", "quit", "Quit", id="app.quit", tooltip="Quit; every turn and label is already saved"),
    ]

    def __init__(
        self,
        config: Config | None = None,
        *,
        session: Session | None = None,
        replay: Session | None = None,
        router: Router | None = None,
        clock: Callable[[], datetime] | None = None,
        session_id: str | None = None,
    ) -> None:
        super().__init__()
        self.config = config or Config()
        self.clock = clock or (lambda: datetime.now(UTC))
        if session is None:
            created = self.clock().strftime("%Y-%m-%dT%H:%M:%SZ")
            session = Session(session=SessionInfo(id=session_id or new_session_id(), created=created))
        self.session = session
        self.replay_session = replay
        self.router: Router | None = None
        self._injected_router = router
        self._router_error = ""
        self._router_ready = asyncio.Event()  # set once a router is usable (or failed for good)
        self._live: dict[int, Decision] = {}  # decisions routed in this run (recorded ones are TurnDecision)
        self._routing: dict[Worker, int] = {}
        self._fallback_turn: int | None = None
        self._loading_timer: Timer | None = None
        self._save_lock = threading.Lock()
        self._turn_text: dict[int, str] = {}  # each turn's TOML, dropped when the turn changes
        self._save_seq = 0
        self._written_seq = 0
        self._catalog_open: bool | None = None  # None: follow the width
        self._quit_armed = False

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with Horizontal(id="body"):
            catalog = CatalogPane(id="catalog-pane")
            catalog.border_title = "Catalog"
            yield catalog
            with Vertical(id="main"):
                with Horizontal(id="top"):
                    with VerticalScroll(id="candidates-pane") as pane:
                        pane.border_title = "Candidates"
                        yield CandidatesView(id="candidates")
                    with VerticalScroll(id="distribution-pane") as pane:
                        pane.border_title = "Distribution"
                        yield DistributionView(id="distribution")
                with Vertical(id="log-pane") as pane:
                    pane.border_title = "Decision log"
                    header = PaneText("", id="log-header")
                    yield header
                    yield DecisionLog(header, id="log")
                    with VerticalScroll(id="turn-detail-scroll"):
                        yield PaneText("", id="turn-detail")
        yield MessageInput(id="message")
        yield Footer()

    @property
    def log_table(self) -> DecisionLog:
        return self.query_one("#log", DecisionLog)

    def on_mount(self) -> None:
        self._apply_width(self.size.width)
        self._update_status(loading="loading catalog and backend…")
        self.log_table.set_turns(self.session.turns)
        if self.session.turns:
            self.log_table.select(len(self.session.turns) - 1)
        if self.session.path is not None:
            self._written_seq = self._save_seq  # opened from a file: what is on disk is current
        self.show_turn(self.log_table.selected_index)
        self.query_one("#message", MessageInput).focus()
        if self._injected_router is not None:
            self.post_message(RouterReady(self._injected_router))
        else:
            self.call_after_refresh(self.load_router, self.config)
        if self.replay_session is not None:
            self.open_replay(self.replay_session, quit_on_close=True)

    def on_resize(self, event) -> None:
        self._apply_width(event.size.width)

    def _apply_width(self, width: int) -> None:
        main = self.screen_stack[0]  # the console screen, even while a dialog is on top
        narrow = width < NARROW
        main.set_class(narrow, "-narrow")
        main.set_class(width >= WIDE, "-wide")
        open_ = self._catalog_open if self._catalog_open is not None else not narrow
        main.set_class(open_, "-catalog-open")
        log = self.query_one("#log", DecisionLog)
        catalog_width = 0 if narrow or not open_ else (38 if width >= WIDE else 34)
        compact = width - catalog_width < 104
        if compact != log.compact:
            log.compact = compact
            log.rebuild()

    # ------------------------------------------------------------------ status
    def _update_status(self, **extra) -> None:
        router = self.router
        policy = self.config.policy
        fields = dict(
            high=policy.high,
            medium=policy.medium,
            formula=policy.confidence,
            session=display_path(self.session_file()) if self.session_file() else self.session.id,
            saved=None if not self.session.turns and self.session.path is None else self._written_seq >= self._save_seq,
        )
        if router is not None:
            fields.update(
                catalog=router.catalog.name,
                options=len(router.catalog.option_ids),
                backend=router.backend.name,
                model=router.backend.model,
            )
        else:
            fields.update(catalog=str(self.config.catalog), backend=self.config.backend)
        fields.update(extra)
        self.query_one("#status", StatusLine).set(**fields)

    def session_file(self) -> Path | None:
        return self.session.path

    def now_iso(self) -> str:
        return self.clock().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    # ------------------------------------------------------------------ router
    @work(thread=True, exclusive=True, group="router", exit_on_error=False)
    def load_router(self, config: Config, catalog: Catalog | None = None) -> None:
        """Catalog, retrieval index and backend, built off the UI thread after the first frame."""
        from ..route import build_router

        self.post_message(RouterReady(build_router(config, catalog=catalog)))

    def _teach(self, turns: list[Turn]) -> None:
        """Labelled turns reach a backend that learns from them at once (it embeds them lazily,
        on the next routing, in the worker), so the next similar message is routed with them."""
        add = getattr(self.router.backend, "add_exemplar", None) if self.router is not None else None
        if callable(add):
            for turn in turns:
                if turn.label:
                    add(turn.label, turn.message)

    def on_router_ready(self, message: RouterReady) -> None:
        old, self.router = self.router, message.router
        self._teach(self.session.turns)  # a reopened session's labels count from the start
        self.config = message.router.config
        self._router_error = ""
        self._router_ready.set()
        catalog = self.router.catalog
        info = self.session.session
        if info.catalog is None:
            info.catalog = catalog.name
        if info.backend is None:
            info.backend, info.model = self.router.backend.name, self.router.backend.model
        if info.catalog != catalog.name:
            self.notify(
                f"This session was labelled for catalog '{info.catalog}' but the catalog in use is '{catalog.name}'.",
                severity="warning",
                markup=False,
            )
        self.query_one("#catalog-pane", CatalogPane).set_catalog(catalog)
        self._update_status(loading="")
        self.show_turn(self.log_table.selected_index)
        if old is not None and old is not self.router:
            self.notify(f"Backend {self.router.backend.name} ({self.router.backend.model}) in use.", markup=False)
            self.run_worker(old.aclose(), group="close", exit_on_error=False)
        for screen in self.screen_stack:
            if hasattr(screen, "on_router_changed"):
                screen.on_router_changed()

    # ------------------------------------------------------------------ turns
    def on_turn_submitted(self, message: TurnSubmitted) -> None:
        with self.batch_update():
            self._turn_submitted(message)

    def _turn_submitted(self, message: TurnSubmitted) -> None:
        turn = Turn(message=message.message, at=self.now_iso())
        self.session.turns.append(turn)
        index = len(self.session.turns) - 1
        log = self.log_table
        log.upsert(index)
        log.select(index)  # RowHighlighted -> show_turn
        if self.router is None and not self._router_error:
            self.notify("Still loading the catalog and backend; the message will be routed when they are ready.", markup=False)
        worker = self.route_turn(index, turn)
        self._routing[worker] = index
        self._start_loading_timer()

    @work(exclusive=True, exit_on_error=False, group="turn")
    async def route_turn(self, index: int, turn: Turn) -> None:
        """One worker per turn; exclusive, so a stale answer never overwrites a fresh one."""
        await self._router_ready.wait()
        if self.router is None:
            raise RuntimeError(self._router_error or "no router is loaded")
        decision = await self.router.aroute(turn.message)
        self.post_message(DecisionReady(index, decision, turn))

    def _start_loading_timer(self) -> None:
        if self._loading_timer is not None:
            self._loading_timer.stop()
        self._loading_timer = self.set_timer(LOADING_DELAY, self._show_loading)

    def _show_loading(self) -> None:
        if self._routing:
            index = self.log_table.selected_index
            if index is not None and index in self._routing.values():
                self.show_turn(index, in_flight=True)
            self.query_one("#distribution-pane").loading = True

    def _stop_loading(self) -> None:
        if self._loading_timer is not None:
            self._loading_timer.stop()
            self._loading_timer = None
        self.query_one("#distribution-pane").loading = False

    def on_decision_ready(self, message: DecisionReady) -> None:
        index, decision = message.index, message.decision
        if index >= len(self.session.turns) or (message.turn is not None and self.session.turns[index] is not message.turn):
            return  # the session was switched while this turn was routed
        turn = self.session.turns[index]
        turn.decision = decision.to_turn_decision()
        self._live[index] = decision
        with self.batch_update():
            self._turn_changed(index)
        if decision.band.value == "unresolved":
            self.notify(f"Turn {index + 1} is unresolved: {decision.error}", severity="error", timeout=8, markup=False)
        if decision.action.value == "confirm":
            self.open_confirm(index)

    def _unresolved(self, index: int, error: str) -> None:
        """A turn whose routing never finished: kept, unresolved, and fallback pending."""
        turn = self.session.turns[index]
        if turn.decision is not None:
            return
        policy = self.config.policy
        turn.decision = TurnDecision(
            band="unresolved",
            action="fallback",
            outcome="pending",
            error=error,
            backend=self.router.backend.name if self.router else self.config.backend,
            high=policy.high,
            medium=policy.medium,
        )
        self._turn_changed(index)

    def _turn_changed(self, index: int) -> None:
        self.log_table.upsert(index)
        if self.log_table.selected_index == index:
            self.show_turn(index)
        self.autosave(changed=index)

    @on(Worker.StateChanged)
    def worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place worker failures become notifications (and unresolved turns)."""
        try:
            self._worker_state_changed(event)
        except NoMatches:
            pass  # workers cancelled while the app closes: the widgets are already gone

    def _worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker, state = event.worker, event.state
        if state not in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            return
        error = worker.error
        if worker.group == "turn":
            index = self._routing.pop(worker, None)
            if not self._routing:
                self._stop_loading()
            if index is None:
                return
            if state is WorkerState.ERROR:
                self._unresolved(index, f"routing failed: {error}")
                self.notify(f"Turn {index + 1} could not be routed: {error}", severity="error", timeout=8, markup=False)
            elif state is WorkerState.CANCELLED:
                self._unresolved(index, "superseded by a newer message before it was decided")
        elif worker.group == "router" and state is WorkerState.ERROR:
            lines = error.lines() if isinstance(error, UserError) else [str(error)]
            if self.router is None:
                self._router_error = "; ".join(lines)
                self._router_ready.set()  # waiting turns end unresolved instead of hanging
                self._update_status(loading="not loaded: see the notification")
            else:
                self._update_status(loading="")  # a failed switch: the previous router stays
            self.notify("\n".join(lines), title="Could not load the router", severity="error", timeout=15, markup=False)
        elif worker.group == "fallback" and state in (WorkerState.ERROR, WorkerState.CANCELLED):
            index = self._fallback_turn
            self._fallback_done()
            if state is WorkerState.CANCELLED:
                self.notify(f"Fallback for turn {(index or 0) + 1} cancelled; nothing was saved for it.", markup=False)
            else:
                self.notify(f"Fallback failed: {error}", severity="error", markup=False)
        elif worker.group == "save" and state is WorkerState.ERROR:
            self._update_status()
            self.notify(f"Could not save the session: {error}. Your turns are still here; try ctrl+s.", severity="error", timeout=15, markup=False)
        elif worker.group == "replay" and state is WorkerState.ERROR:
            self.notify(f"Replay failed: {error}", severity="error", markup=False)

    # ------------------------------------------------------------------ the selected turn
    def on_decision_log_row_highlighted(self, event: DecisionLog.RowHighlighted) -> None:
        self.show_turn(event.index)

    def on_decision_log_row_selected(self, event: DecisionLog.RowSelected) -> None:
        index = event.index
        decision = self.session.turns[index].decision if 0 <= index < len(self.session.turns) else None
        if decision is not None and decision.action == "confirm" and decision.outcome == "pending":
            self.open_confirm(index)
        elif self.session.turns[index].fallback is not None:
            from .screens.output import FallbackOutputScreen

            self.push_screen(FallbackOutputScreen(index, self.session.turns[index].fallback))
        elif fallback_pending(decision) and decision.outcome != "fallback_done":
            self.notify("This turn waits for the fallback LLM: press f to send it.", markup=False)

    def show_turn(self, index: int | None, *, in_flight: bool = False) -> None:
        """Show a turn in Candidates, Distribution and the detail line.

        A turn still being routed is not drawn at once: a fast backend answers within the frame,
        and drawing "Routing…" first would paint every pane twice. If the answer takes longer
        than LOADING_DELAY, the loading timer draws it (in_flight=True).
        """
        turns = self.session.turns
        if index is not None and 0 <= index < len(turns) and turns[index].decision is None and not in_flight:
            if index in self._routing.values():
                return
        candidates = self.query_one("#candidates", CandidatesView)
        distribution = self.query_one("#distribution", DistributionView)
        detail = self.query_one("#turn-detail", PaneText)
        if index is None or not 0 <= index < len(turns):
            candidates.show(None, self.router.catalog if self.router else None)
            distribution.show(None)
            detail.set_content(Content.styled("Type a user message below and press Enter. Press F1 for help.", "$text-muted"))
            return
        turn = turns[index]
        none_option = self.router.catalog.none_option if self.router else "defer_to_llm"
        live = self._live.get(index)
        view = TurnView.of(
            turn,
            none_option,
            live.formula if live else self.config.policy.confidence,
            routing=turn.decision is None and index in self._routing.values(),
        )
        candidates.show(view, self.router.catalog if self.router else None)
        distribution.show(view)
        subtitle = f"turn {index + 1}"
        for pane in (self.query_one("#candidates-pane"), self.query_one("#distribution-pane")):
            if pane.border_subtitle != subtitle:  # a new subtitle repaints the whole pane
                pane.border_subtitle = Content(subtitle)
        detail.set_content(turn_detail(turn))

    # ------------------------------------------------------------------ confirm
    def open_confirm(self, index: int) -> None:
        turn = self.session.turns[index]
        d = turn.decision
        if d is None or d.choice is None:
            return
        catalog = self.router.catalog if self.router else None
        tool = catalog.get(d.choice) if catalog else None
        others = sorted(((k, v) for k, v in d.probabilities.items() if k != d.choice), key=lambda kv: -kv[1])[:2]
        request = ConfirmRequest(
            index=index,
            message=turn.message,
            choice=d.choice,
            when_to_use=catalog.description_of(d.choice) if catalog else "",
            risk=tool.risk.value if tool else "",
            confidence=d.confidence,
            band=d.band,
            high=d.high,
            medium=d.medium,
            next_options=others,
            picker_items=self.picker_items(),
            reason=(
                f"High confidence, but {tool.risk.value} tools are never executed without a person."
                if d.band == "high" and tool is not None
                else "Medium confidence: a person decides."
            ),
        )

        def decided(result: ConfirmResult | None) -> None:
            if result is None:
                return  # decide later: the row says "pending"; Enter on it reopens the dialog
            outcome, rerouted_to = result
            self.post_message(OutcomeRecorded(index, outcome, rerouted_to))

        self.push_screen(ConfirmTurnModal(request), decided)

    def on_outcome_recorded(self, message: OutcomeRecorded) -> None:
        d = self.session.turns[message.index].decision
        if d is None:
            return
        d.outcome = message.outcome  # type: ignore[assignment]
        d.rerouted_to = message.rerouted_to
        self._turn_changed(message.index)  # the row shows the outcome: no notification needed

    def picker_items(self) -> list[PickerItem]:
        if self.router is None:
            return []
        catalog = self.router.catalog
        return [
            PickerItem(option, catalog.description_of(option), (catalog.risk_of(option).value if catalog.risk_of(option) else "none option"))
            for option in catalog.option_ids
        ]

    # ------------------------------------------------------------------ labelling
    def _selected(self) -> tuple[int, Turn] | None:
        index = self.log_table.selected_index
        if index is None:
            self.notify("No turn selected: route a message first.", severity="warning", markup=False)
            return None
        return index, self.session.turns[index]

    def action_label_accept(self) -> None:
        selected = self._selected()
        if selected is None:
            return
        index, turn = selected
        d = turn.decision
        choice = (d.rerouted_to or d.choice) if d else None
        if d is None or choice is None or d.band == "unresolved":
            self.notify("This turn has no usable choice to accept: press l to pick the label.", severity="warning", markup=False)
            return
        self.post_message(LabelChanged(index, choice))

    def action_label_pick(self) -> None:
        selected = self._selected()
        if selected is None:
            return
        if self.router is None:
            self.notify("The catalog is still loading.", severity="warning", markup=False)
            return
        index, turn = selected
        preselect = turn.label or (turn.decision.choice if turn.decision else None)

        def picked(option: str | None) -> None:
            if option is not None:
                self.post_message(LabelChanged(index, option))

        self.push_screen(OptionPicker(f"Label turn {index + 1}", self.picker_items(), preselect=preselect), picked)

    def action_label_clear(self) -> None:
        selected = self._selected()
        if selected is None:
            return
        index, turn = selected
        if not turn.label:
            self.notify(f"Turn {index + 1} has no label.", markup=False)
            return
        self.post_message(LabelChanged(index, None))

    def on_label_changed(self, message: LabelChanged) -> None:
        turn = self.session.turns[message.index]
        forget = getattr(self.router.backend, "forget_exemplar", None) if self.router is not None else None
        if turn.label and callable(forget):
            forget(turn.label, turn.message)  # a corrected label must stop teaching the old one
        turn.label = message.label
        self._teach([turn])
        self._turn_changed(message.index)  # the row shows the label: no notification needed

    # ------------------------------------------------------------------ fallback
    def action_fallback(self) -> None:
        selected = self._selected()
        if selected is None:
            return
        index, turn = selected
        d = turn.decision
        if d is None:
            self.notify("This turn is still being routed.", severity="warning", markup=False)
            return
        if not fallback_pending(d):
            self.notify(
                f"Turn {index + 1} is not waiting for the fallback (band {d.band}, action {d.action}); "
                "f sends low-band, none-option, unresolved and declined turns.",
                severity="warning",
                markup=False,
            )
            return
        if not self.config.fallback.command:
            self.notify(
                "No fallback command is configured. Add to the config file "
                f"({config_location(self.config)}):\n[fallback]\ncommand = [\"your-llm\", \"--flag\"]\n"
                "The message arrives on stdin and in $TUI_ROUTER_MESSAGE.",
                title="Fallback",
                severity="warning",
                timeout=15,
                markup=False,
            )
            return
        if self._fallback_turn is not None:
            self.notify(f"The fallback is running for turn {self._fallback_turn + 1}; press c to cancel it.", severity="warning", markup=False)
            return
        self._fallback_turn = index
        self.log_table.flags[index] = "llm…"
        self.log_table.upsert(index)
        self.refresh_bindings()
        self.run_fallback_turn(index, turn.message)

    @work(exclusive=True, exit_on_error=False, group="fallback")
    async def run_fallback_turn(self, index: int, message: str) -> None:
        from ..fallback import run_fallback

        result = await run_fallback(message, self.config.fallback, cwd=self.config.base_dir, config_location=config_location(self.config))
        self.post_message(FallbackFinished(index, result))

    def _fallback_done(self) -> None:
        index, self._fallback_turn = self._fallback_turn, None
        if index is not None:
            self.log_table.flags.pop(index, None)
            self.log_table.upsert(index)
        self.refresh_bindings()

    def on_fallback_finished(self, message: FallbackFinished) -> None:
        self._fallback_done()
        turn = self.session.turns[message.index]
        result = message.result
        turn.fallback = result.to_record()
        if result.ok and turn.decision is not None:
            turn.decision.outcome = "fallback_done"
        self._turn_changed(message.index)
        severity = "information" if result.ok else "error"
        self.notify(f"Fallback for turn {message.index + 1}: {result.summary()}", severity=severity, timeout=8, markup=False)

    def action_cancel_fallback(self) -> None:
        if self._fallback_turn is None:
            self.notify("No fallback command is running.", markup=False)
            return
        self.workers.cancel_group(self, "fallback")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_fallback":
            return self._fallback_turn is not None
        if action in ("toggle_catalog", "save_as"):
            return self.screen is self.screen_stack[0]  # console-screen actions, not over dialogs or replay
        return True

    # ------------------------------------------------------------------ saving
    def autosave(self, changed: int | None = None) -> None:
        """Snapshot the session now (on the UI thread, so it is consistent) and write it off-thread.

        Each turn's TOML is made once and kept until the turn changes (`changed`), so saving costs
        the same in a session of 5 turns or 5,000; the text is exactly `session.dumps_session`'s
        (array-of-tables entries concatenate; a test checks it).
        """
        if self.session.path is None:
            self.session.path = unused_path(self.config.sessions_path, self.session.id)
        if changed is not None:
            self._turn_text.pop(changed, None)
        head = tomli_w.dumps({"session": session_to_dict(Session(session=self.session.session))["session"]}, multiline_strings=True)
        text = head + "\n" + "\n".join(self._turn_toml(i) for i in range(len(self.session.turns)))
        self._save_seq += 1
        self._update_status()
        self._write_session(self.session.path, text, self._save_seq)

    def _turn_toml(self, index: int) -> str:
        text = self._turn_text.get(index)
        if text is None:
            one = session_to_dict(Session(session=self.session.session, turns=[self.session.turns[index]]))
            text = self._turn_text[index] = tomli_w.dumps({"turns": one["turns"]}, multiline_strings=True)
        return text

    @work(thread=True, exit_on_error=False, group="save")
    def _write_session(self, path: Path, text: str, seq: int) -> None:
        with self._save_lock:
            if seq <= self._written_seq:
                return  # a newer snapshot is already on disk
            atomic_write_text(path, text)
            self._written_seq = seq
        self.post_message(SessionSaved(path, seq))

    def on_session_saved(self, message: SessionSaved) -> None:
        try:
            self._update_status()
        except NoMatches:
            pass  # the write finished while the app was closing

    def save_now(self) -> bool:
        """Write the session synchronously (quit, save as). False when it could not be written."""
        if not self.session.turns and self.session.path is None:
            return True
        if self.session.path is None:
            self.session.path = unused_path(self.config.sessions_path, self.session.id)
        with self._save_lock:
            try:
                atomic_write_text(self.session.path, dumps_session(self.session))
            except OSError as exc:
                self.notify(f"Could not save {self.session.path}: {exc.strerror or exc}", severity="error", timeout=15, markup=False)
                return False
            self._written_seq = self._save_seq
        self._update_status()
        return True

    def action_save_as(self) -> None:
        suggested = self.session.path.stem if self.session.path else self.session.id

        def chosen(value: str | None) -> None:
            if value:
                self.save_as(value)

        self.push_screen(
            PromptModal(
                "Save session as",
                value=suggested,
                hint=f"A name (saved in {display_path(self.config.sessions_path)}/) or a path ending in .toml. Existing files are never overwritten.",
            ),
            chosen,
        )

    def save_as(self, value: str) -> Path | None:
        target = Path(value).expanduser()
        if target.suffix != ".toml":
            target = target.with_name(target.name + ".toml")
        if not target.is_absolute() and len(target.parts) == 1:
            target = self.config.sessions_path / target
        if target.exists() and (self.session.path is None or target.resolve() != self.session.path.resolve()):
            self.notify(f"{display_path(target)} already exists; choose another name (nothing was overwritten).", severity="error", markup=False)
            return None
        old = self.session.path
        self.session.path = target
        if not self.save_now():
            self.session.path = old
            return None
        self.notify(f"Session saved as {display_path(target)}; further turns are saved there.", markup=False)
        return target

    # ------------------------------------------------------------------ sessions, replay, backend, policy
    def action_open_file(self) -> None:
        def chosen(value: str | None) -> None:
            if value:
                self.open_session_file(value)

        self.push_screen(PromptModal("Open session file", placeholder="path/to/session.toml"), chosen)

    def open_session_file(self, value: str) -> None:
        try:
            session = load_session(Path(value).expanduser())
        except UserError as exc:
            self.notify("\n".join(exc.lines()), title="Cannot open", severity="error", timeout=10, markup=False)
            return
        if self.save_now() and self.switch_session(session):
            self.notify(f"Opened {display_path(session.path)} ({len(session.turns)} turns).", markup=False)

    def action_new_session(self) -> None:
        if not self.save_now():
            return
        info = SessionInfo(id=new_session_id(), created=self.now_iso())
        if self.router is not None:
            info.catalog = self.router.catalog.name
            info.backend, info.model = self.router.backend.name, self.router.backend.model
        if self.switch_session(Session(session=info)):
            self.notify("New session.", markup=False)

    def switch_session(self, session: Session) -> bool:
        if self._fallback_turn is not None:
            self.notify("A fallback command is running for this session: wait for it or cancel it (c) first.", severity="warning", markup=False)
            return False
        self.workers.cancel_group(self, "turn")
        self.session = session
        self._live.clear()
        self._turn_text.clear()
        self._save_seq = self._written_seq = 0
        self.log_table.set_turns(session.turns)
        if session.turns:
            self.log_table.select(len(session.turns) - 1)
        self.show_turn(self.log_table.selected_index)
        self._update_status()
        return True

    def open_replay(self, session: Session, quit_on_close: bool = False) -> None:
        from .screens.replay import ReplayScreen

        self.push_screen(ReplayScreen(session, quit_on_close=quit_on_close))

    def action_replay_session(self) -> None:
        if not self.session.turns:
            self.notify("Nothing to replay yet: this session has no turns.", markup=False)
            return
        self.open_replay(self.session.model_copy(deep=True))

    def action_replay_file(self) -> None:
        def chosen(value: str | None) -> None:
            if not value:
                return
            try:
                session = load_session(Path(value).expanduser())
            except UserError as exc:
                self.notify("\n".join(exc.lines()), title="Cannot replay", severity="error", timeout=10, markup=False)
                return
            self.open_replay(session)

        self.push_screen(PromptModal("Replay session file", placeholder="path/to/session.toml"), chosen)

    def use_backend(self, name: str) -> None:
        if self.router is not None and self.router.backend.name == name:
            self.notify(f"Already using {name}.", markup=False)
            return
        config = self.config.model_copy(update={"backend": name})
        self._update_status(loading=f"loading backend {name}…")
        self.load_router(config, self.router.catalog if self.router else None)

    def action_set_thresholds(self) -> None:
        policy = self.config.policy

        def chosen(value: str | None) -> None:
            if value:
                self.set_thresholds_text(value)

        self.push_screen(
            PromptModal(
                "Set thresholds (high medium)",
                value=f"{policy.high:g} {policy.medium:g}",
                hint="Two numbers between 0 and 1, high first. Applies to new turns and replays, not to recorded ones.",
            ),
            chosen,
        )

    def set_thresholds_text(self, value: str) -> bool:
        parts = value.replace(",", " ").split()
        try:
            high, medium = (float(p) for p in parts)
        except ValueError:
            self.notify("Give two numbers, high first, e.g. 0.75 0.45.", severity="error", markup=False)
            return False
        return self.set_thresholds(high, medium)

    def set_thresholds(self, high: float, medium: float) -> bool:
        from pydantic import ValidationError

        try:
            policy = PolicyConfig.model_validate({**self.config.policy.model_dump(), "high": high, "medium": medium})
        except ValidationError as exc:
            reason = exc.errors()[0]["msg"].removeprefix("Value error, ")
            self.notify(f"Thresholds not changed: {reason}.", severity="error", markup=False)
            return False
        self.config = self.config.model_copy(update={"policy": policy})
        if self.router is not None:
            self.router.config = self.config  # the router reads its policy per turn
        self._update_status()
        self.notify(f"Thresholds: high ≥ {high:g}, medium ≥ {medium:g} for new turns.", markup=False)
        return True

    # ------------------------------------------------------------------ view actions
    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_toggle_catalog(self) -> None:
        open_now = self.screen_stack[0].has_class("-catalog-open")
        self._catalog_open = not open_now
        self._apply_width(self.size.width)
        if self._catalog_open:
            self.query_one("#catalog-filter").focus()
            d = self._selected_decision()
            if d is not None and d.choice:
                self.query_one("#catalog-pane", CatalogPane).show_option(d.rerouted_to or d.choice)
        elif self.focused is None or self.query_one("#catalog-pane") in self.focused.ancestors_with_self:
            self.action_focus_input()

    def _selected_decision(self) -> TurnDecision | None:
        index = self.log_table.selected_index
        return self.session.turns[index].decision if index is not None else None

    def action_focus_log(self) -> None:
        self.log_table.focus()

    def action_focus_input(self) -> None:
        self.query_one("#message", MessageInput).focus()

    def action_confirm_turn(self) -> None:
        selected = self._selected()
        if selected is None:
            return
        index, turn = selected
        d = turn.decision
        if d is None or d.action != "confirm":
            self.notify("The selected turn has nothing to confirm.", markup=False)
            return
        self.open_confirm(index)

    async def action_quit(self) -> None:
        if not self.save_now() and not self._quit_armed:
            self._quit_armed = True
            self.notify("The session could not be saved. Press q again to quit anyway (unsaved turns are lost).", severity="error", timeout=15, markup=False)
            return
        self.exit(0)

    async def on_unmount(self) -> None:
        if self.router is not None:
            try:
                await self.router.aclose()  # e.g. the HTTP client of a systemone backend
            except Exception:
                pass

    # ------------------------------------------------------------------ command palette
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield SystemCommand("turn: route a message", "Focus the message box", self.action_focus_input)
        yield SystemCommand("turn: confirm again", "Reopen the confirm dialog of the selected turn", self.action_confirm_turn)
        yield SystemCommand("turn: send to fallback", "Run the fallback LLM command on the selected turn (f)", self.action_fallback)
        yield SystemCommand("turn: cancel fallback", "Stop the running fallback command (c)", self.action_cancel_fallback)
        yield SystemCommand("label: accept choice", "Label the selected turn with its choice (a)", self.action_label_accept)
        yield SystemCommand("label: pick", "Pick the selected turn's label from every option (l)", self.action_label_pick)
        yield SystemCommand("label: clear", "Clear the selected turn's label (x)", self.action_label_clear)
        yield SystemCommand("session: save as", "Save the session under a new name (ctrl+s)", self.action_save_as)
        yield SystemCommand("session: open file", "Continue another session file", self.action_open_file)
        yield SystemCommand("session: new", "Start a new session (this one stays saved)", self.action_new_session)
        yield SystemCommand("replay: this session", "Re-route every turn with the current catalog, backend and thresholds", self.action_replay_session)
        yield SystemCommand("replay: run file", "Replay a saved session file", self.action_replay_file)
        for name in BACKENDS:
            yield SystemCommand(f"backend: use {name}", f"Route new turns with the {name} backend", lambda name=name: self.use_backend(name))
        yield SystemCommand("policy: set thresholds", "Change the high and medium thresholds", self.action_set_thresholds)
        yield SystemCommand("view: catalog", "Show or hide the Catalog pane (F2)", self.action_toggle_catalog)
        yield SystemCommand("view: decision log", "Move to the decision log (escape)", self.action_focus_log)
        yield SystemCommand("view: help", "Keys, bands and files (F1)", self.action_help)
        yield SystemCommand("app: quit", "Quit; everything is saved (q)", self.action_quit)
        yield from super().get_system_commands(screen)


def config_location(config: Config) -> str:
    if config.source is not None:
        return str(config.source)
    from ..config import user_config_path

    return f"{user_config_path()}, or the path `tui-router locate config` prints"


def turn_detail(turn: Turn) -> Content:
    """The selected turn's full message (shortened to a few lines) and its fallback result."""
    parts: list[Content] = [Content.assemble(("message ", "$text-muted"), shorten(turn.message, 400))]
    d = turn.decision
    if d is not None and d.error:
        parts.append(Content.assemble(("error ", "bold $error"), (d.error, "$error")))
    fb = turn.fallback
    if fb is not None:
        head = "fallback " + (f"exit {fb.exit_code}" if fb.exit_code is not None else "no exit code")
        if fb.duration_ms is not None:
            head += f" · {fb.duration_ms:.0f} ms"
        if fb.truncated:
            head += " · output truncated"
        parts.append(Content.styled(head, "bold" if not fb.error else "bold $error"))
        if fb.error:
            parts.append(Content.styled(fb.error, "$error"))
        if fb.output:
            parts.append(Content(shorten(one_line(fb.output), 600) if len(fb.output) > 600 else fb.output.rstrip()))
    elif fallback_pending(d) and d is not None and d.outcome != "fallback_done":
        parts.append(Content.styled("fallback pending: press f to send it to the fallback LLM command", "$text-muted"))
    return Content("\n").join(parts)
