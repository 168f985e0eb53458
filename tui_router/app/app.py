"""The console: type a message, see how it is routed, triage it, label it; every turn autosaved.

State lives on the app and changes only in message handlers (TurnSubmitted -> DecisionReady ->
OutcomeRecorded, LabelChanged, FallbackFinished). Workers do the slow parts (loading the router,
routing, the fallback command, writing the file) and post those messages; they never touch widgets.
Routing itself is `Router.aroute` from the core: the console holds no routing logic.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import stat
import threading
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.timer import Timer
from textual.worker import Worker, WorkerState

from ..config import Config, PolicyConfig
from ..decide import BACKEND_NAMES
from ..errors import SessionError, UserError
from ..session import Session, Turn, TurnDecision, is_live_file, load_session, looks_like_catalog_file, new_session_id
from ..storage import claim_session_file, release_session_file
from ..textsafe import visible
from ..workspace import NO_FALLBACK_COMMAND, Workspace, fallback_pending, typed_path, waits_for_fallback
from .arguments_ui import ARGUMENTS_BINDINGS, ArgumentsActions, arguments_detail, confirm_arguments_text, record_of
from .follow import LiveFollow
from .format import display_path, one_line, shorten
from .label_undo import LabelUndo
from .messages import (
    ArgumentsStarted,
    DecisionReady,
    FallbackFinished,
    FallbackOutput,
    FilesReadProgress,
    LabelChanged,
    LoadProgress,
    OutcomeRecorded,
    ReviewFilesRead,
    ReviewQueueRead,
    RouterReady,
    SessionRead,
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
from .widgets.decision_log import DecisionLog, full_ids
from .widgets.distribution import DistributionView
from .widgets.footer import FittedFooter
from .widgets.message_input import MessageInput
from .widgets.panes import Pane, ScrollPane
from .widgets.status import StatusLine
from .widgets.text import PaneText

T = TypeVar("T")

if TYPE_CHECKING:
    from ..catalog import Catalog
    from ..review import Review
    from ..route import Decision, Router

NARROW = 110  # below this many columns the Catalog pane collapses (F2 shows it)
SHORT = 30  # below this many rows the message box loses its border and the top panes grow
WIDE = 140  # from here the Catalog pane is wider and the log shows every column
LOADING_DELAY = 0.08  # show the loading indicator only when a turn takes longer than this
QUIT_BEFORE_DECISION = "the console quit before the decision arrived"
PREPARE_TURNS = 100  # from this many turns an opened session formats its file text in a worker (workspace.prepare_texts)



# what acts on the session's turns: off (greyed in the footer, left out of the palette) while the
# session `tui-router open FILE` names is still being read, so no key acts on a half-opened console
SESSION_ACTIONS = frozenset({
    "label_accept", "label_pick", "label_clear", "label_undo", "fallback", "cancel_fallback", "confirm_turn",
    "save_as", "build_arguments", "arguments_accept", "arguments_edit", "open_file", "new_session", "follow_file",
    "replay_session", "what_if", "review_queue",
})

# how often the console looks whether the catalog file was edited (one stat call)
CATALOG_POLL_SECONDS = 1.0
# checks in a row without the catalog file before the console says it is gone (an editor's save
# that replaces the file is back by the next one)
CATALOG_GONE_POLLS = 3


def catalog_file(config: Config) -> Path | None:
    """The catalog file a config names (a bundled name resolved), None when there is none to read."""
    from ..catalog import resolve_catalog_path

    try:
        return resolve_catalog_path(config.catalog_spec())
    except UserError:
        return None


def file_stamp(path: Path) -> tuple[int, int] | None:
    """(mtime in ns, size) of a file, None when it cannot be read: what tells an edit apart. A
    folder (or a pipe) in the file's place is stamped by its kind alone: a file added to that folder
    changed its time, and the same "is a folder" was reported again at every change inside it."""
    try:
        info = path.stat()
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return stat.S_IFMT(info.st_mode), -1
    return info.st_mtime_ns, info.st_size


class RouterConsole(LiveFollow, ArgumentsActions, LabelUndo, App[int]):
    """tui-router's console."""

    CSS_PATH = Path(__file__).parent / "app.tcss"  # absolute, so subclasses elsewhere find it
    TITLE = "tui-router"
    ENABLE_COMMAND_PALETTE = True
    # The screen's auto-focus would pick the first focusable widget (the Catalog filter) after our
    # on_mount: keys typed right after launch went there (issue 13). Start in the message box.
    AUTO_FOCUS = "#message"
    _refusals: list[str] | None = None  # while `ask` acts on a prompt's text: the errors said
    BINDINGS = [
        Binding("f1", "help", "Help", id="app.help", tooltip="Keys, bands and where things are saved"),
        Binding("question_mark", "help", "Help", id="app.help_key", show=False, tooltip="Keys, bands and where things are saved"),
        Binding("ctrl+s", "save_as", "Save as", id="session.save_as", priority=True, show=False, tooltip="Save the session under a new name (it is autosaved anyway)"),
        Binding("f2", "toggle_catalog", "Catalog", id="view.catalog", tooltip="Show or hide the Catalog pane"),
        # Harlequin's key for it; Textual's palette has Maximize and Minimize, with no key
        Binding("f10", "toggle_maximize", "Maximize", id="view.maximize", show=False, tooltip="Fill the screen with the focused pane, or restore it"),
        Binding("q", "quit", "Quit", id="app.quit", tooltip="Quit; every turn and label is already saved"),
        *ARGUMENTS_BINDINGS,
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
        follow: Path | None = None,
        review: Review | None = None,
        command_line: Callable[[Config], Config] | None = None,
        notice: str | None = None,
        review_files: list[Path] | None = None,
        open_path: Path | None = None,
    ) -> None:
        super().__init__()
        # `tui-router open FILE`: the file (claimed already) is read in a worker after the first
        # frame; meanwhile the session actions are off and messages sent wait for it (_held)
        self._opening: Path | None = open_path
        self._held: list[str] = []
        # an open from inside the console, read in a worker: (its number, path, already the session's,
        # workspace.changes when asked: a change since to the session's own file means a stale read,
        # the session then in use: another one since means the open was overtaken)
        self._open_request: tuple[int, Path, bool, int, Session] | None = None
        self._open_count = 0
        # `tui-router review FILES`: read in a worker after the first frame (the queue opens then)
        self._review_files = review_files
        self.exit_error: UserError | None = None  # why the console ended at once (exit 2): said after it closes
        self._notice_on_mount = notice  # said once drawn (e.g. why a live file is followed, not opened)
        # --catalog/--backend/--base-url given at start: `config: reload` applies them to the file again
        self._command_line = command_line
        self._follow_on_mount = follow  # a live session file to follow (follow.py)
        self.config = config or Config()
        self.clock = clock or (lambda: datetime.now(UTC))
        from ..review import reviewer_name

        self.workspace = Workspace(
            session, self.config.sessions_path, clock=self.clock, session_id=session_id, reviewer=reviewer_name(self.config)
        )
        self.replay_session = replay
        self.review = review  # `tui-router review FILES`: the review queue opens at start
        self.router: Router | None = None
        self._injected_router = router
        self._router_error = ""
        self._cache_warned = False  # the embedding cache's write problem: one notification per run
        self._load_warned: set[str] = set()  # encoders / reranker that did not load: each said once per run
        # the catalog file the router was last built from, and its (mtime, size) then: an edit on
        # disk reloads it (_check_catalog_file); None: nothing to watch (a router given ready-made)
        self._catalog_seen: tuple[Path, tuple[int, int] | None] | None = None
        self._catalog_warned: tuple[str | None, tuple[str, ...]] | None = None  # warnings said for this catalog
        self._catalog_gone = 0  # checks in a row that found no catalog file (said once, at CATALOG_GONE_POLLS)
        # a reload the watch started (an edit on disk): its failure is said only if the file is still
        # as it was read at the next check (an editor's save in two steps is whole by then), and the
        # same problem only once until a reload works or the problem changes
        self._watch_reload: Worker | None = None
        self._catalog_pending: list[str] | None = None
        self._catalog_said: list[str] | None = None
        self._router_ready = asyncio.Event()  # set once a router is usable (or failed for good)
        self._live: dict[int, Decision] = {}  # decisions routed in this run (recorded ones are TurnDecision)
        self._routing: dict[Worker, list[int]] = {}  # the turns each routing worker decides, in order
        self._loading_timer: Timer | None = None
        self._waiting_timer: Timer | None = None  # redraws "waiting for ..., N s" while a turn is routed
        self._routing_since = 0.0
        self._questions = 1  # how many questions the turn being routed asks (2: two stages)
        self._building_arguments: dict[int, str] = {}  # turn -> the arguments command it waits for
        self._catalog_open: bool | None = None  # None: follow the width
        self._quit_armed = False
        self._config_note = ""
        self._kept_theme = ""  # the theme the config keeps between runs (set on mount)
        self._fallback_started = 0.0  # monotonic time the running fallback command started
        self._fallback_output = ""  # what it printed so far, shown while it runs
        self._fallback_timer: Timer | None = None  # said once the reloaded config's router is in use

    @property
    def session(self) -> Session:
        return self.workspace.session

    @property
    def router_error(self) -> str:
        return self._router_error

    async def wait_for_router(self) -> Router | None:
        """The router once loaded (None when it failed to load; router_error says why)."""
        await self._router_ready.wait()
        return self.router

    def notify(self, message: str, *, title: str = "", **kwargs) -> None:
        """Every notification (the app's and its screens') shows untrusted text with control
        characters made visible, never acted on by the terminal. While `ask` acts on a prompt's
        text, an error is that text refused: kept for the prompt to show, not a notification."""
        if self._refusals is not None and kwargs.get("severity") == "error":
            self._refusals.append(message)
            return
        super().notify(visible(message), title=visible(title), **kwargs)

    def ask(self, prompt: PromptModal, act: Callable[[str], object]) -> None:
        """Push `prompt`; Enter gives its text to `act`. When `act` refuses the text at once (an
        error: the file exists, no such file, not a usable path) the prompt opens again holding the
        text as typed, the refusal under it: corrected in place, not typed again; escape cancels.
        What fails later (a catalog that does not load, in a worker) is a notification as before."""

        def chosen(value: str | None) -> None:
            if not value:
                return
            self._refusals = []
            try:
                act(value)
            finally:
                refusals, self._refusals = self._refusals, None
            if refusals:
                self.ask(prompt.again(value, "\n".join(refusals)), act)

        self.push_screen(prompt, chosen)

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with Horizontal(id="body"):
            catalog = CatalogPane(id="catalog-pane")
            catalog.border_title = "Catalog"
            yield catalog
            with Vertical(id="main"):
                with Horizontal(id="top"):
                    with ScrollPane(id="candidates-pane") as pane:
                        pane.border_title = "Candidates"
                        yield CandidatesView(id="candidates")
                    with ScrollPane(id="distribution-pane") as pane:
                        pane.border_title = "Distribution"
                        yield DistributionView(id="distribution")
                with Pane(id="log-pane") as pane:
                    pane.border_title = "Decision log"
                    header = PaneText("", id="log-header")
                    yield header
                    yield DecisionLog(header, id="log")
                    with ScrollPane(id="turn-detail-scroll"):  # maximizes its pane
                        yield PaneText("", id="turn-detail")
        yield MessageInput(id="message")
        yield FittedFooter()

    @property
    def log_table(self) -> DecisionLog:
        return self.query_one("#log", DecisionLog)

    def on_mount(self) -> None:
        self._kept_theme = self.theme  # Textual's default, unless the config names one
        self._apply_config_theme(self.config)
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        self._apply_width(self.size.width)
        self._update_status(loading="loading catalog and backend…")
        self.log_table.set_turns(self.session.turns)
        if self.session.turns:
            self.log_table.select(len(self.session.turns) - 1)
        self.show_turn(self.log_table.selected_index)
        self.query_one("#message", MessageInput).focus()
        self.set_interval(CATALOG_POLL_SECONDS, self._check_catalog_file)  # an edit saved to the catalog reloads it
        if self._injected_router is not None:
            self.post_message(RouterReady(self._injected_router))
        elif self._review_files is None:  # (review FILES: once they are read, not competing with the read)
            self.call_after_refresh(self.load_router, self.config)
        if self.replay_session is not None:
            self.open_replay(self.replay_session, quit_on_close=True)
        if self.review is not None:
            from .screens.review import ReviewScreen

            self.push_screen(ReviewScreen(self.review, quit_on_close=True))
        if self._review_files is not None:
            from .screens.review import ReviewReadingScreen

            self.push_screen(ReviewReadingScreen(len(self._review_files)))
            self.call_after_refresh(self._read_review_files, self._review_files)
        if self._notice_on_mount:
            self.notify(self._notice_on_mount, timeout=12, markup=False)
        if self._opening is not None:
            self.call_after_refresh(self._read_session_file, self._opening, 0)
        elif self._follow_on_mount is not None:
            self.follow_file(self._follow_on_mount)
        if not self.is_headless:
            self._handle_termination_signals()

    def _apply_config_theme(self, config: Config) -> None:
        """The config's `theme` (already checked against Textual's names); none: the theme stays."""
        if config.theme is not None and config.theme in self.available_themes:
            self._kept_theme = config.theme
            self.theme = config.theme

    def _theme_changed(self, theme) -> None:
        # the console never writes the config file: say which line keeps a theme picked in the palette
        if theme.name == self._kept_theme:
            return
        where = display_path(self.config.source) if self.config.source else "a config file (`tui-router locate config` tells where)"
        self.notify(f'Theme {theme.name} for this run; to keep it, add theme = "{theme.name}" to {where}.', timeout=10, markup=False)

    def _handle_termination_signals(self) -> None:
        # `kill` (SIGTERM) or a closed terminal (SIGHUP) killed the console on the spot: the terminal
        # stayed in the alternate screen with mouse reporting on. End like q instead: write the
        # session once more, restore the terminal, exit 128 + the signal's number.
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
            if sig is None:
                continue
            try:
                loop.add_signal_handler(sig, self._terminate, int(sig))
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or Windows
                return

    def _terminate(self, number: int) -> None:
        self.save_now()
        self.exit(return_code=128 + number)

    def on_resize(self, event) -> None:
        self._apply_width(event.size.width, event.size.height)

    def _apply_width(self, width: int, height: int | None = None) -> None:
        main = self.screen_stack[0]  # the console screen, even while a dialog is on top
        narrow = width < NARROW
        main.set_class(narrow, "-narrow")
        # short terminals (80x24, 60x20): a borderless message box and a taller top row, so the
        # Candidates and Distribution panes show their rows and the log still shows the selected turn
        # the resize event's height: self.size still has the old one while the event is handled
        short = (self.size.height if height is None else height) < SHORT
        main.set_class(short, "-short")
        message = self.query_one("#message", MessageInput)
        if message.compact != short:
            message.compact = short
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
            # the file, or where the first turn will be saved: the sessions folder is always on screen
            session=display_path(self.session_file() or self.workspace.sessions_dir / f"{self.session.id}.toml"),
            saved=self.workspace.saved,
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
        if self._opening is not None:  # the file named, not the new session that stands in until it is read
            fields.update(session=display_path(self._opening), saved=True, mode="reading")
        else:
            fields.update(mode="")
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
        from ..progress import set_progress_hook
        from ..route import build_router

        drawn, done_loading, lock = [0.0], [False], threading.Lock()

        def report(done: int, total: int) -> None:  # from the embedding threads: post, never touch widgets
            with lock:  # nothing after RouterReady: a late message would leave the status saying "embedding"
                now = time.monotonic()
                if not done_loading[0] and (done in (0, total) or now - drawn[0] >= 0.25):
                    drawn[0] = now
                    self.post_message(LoadProgress(done, total))

        previous = set_progress_hook(report)
        if catalog is None:  # read from its file now: an edit after this point is a change to reload
            path = catalog_file(config)
            self._catalog_seen = (path, file_stamp(path)) if path is not None else None
        try:
            router = build_router(config, catalog=catalog)
            with lock:
                done_loading[0] = True
                self.post_message(RouterReady(router))
        finally:
            set_progress_hook(previous)

    def on_load_progress(self, message: LoadProgress) -> None:
        share = 100 * message.done // max(1, message.total)
        self._update_status(loading=f"embedding {message.total:,} texts (a first start; cached afterwards): {share}%")

    def _teach(self, turns: list[Turn]) -> None:
        """Labelled turns reach a backend that learns from them at once (it embeds them lazily,
        on the next routing, in the worker), so the next similar message is routed with them."""
        backend = self.router.backend if self.router is not None else None
        if backend is not None and backend.learns_from_examples:
            for turn in turns:
                if turn.label:
                    backend.add_exemplar(turn.label, turn.message)

    def _relabel(self, index: int, change: Callable[[], T]) -> T:
        """Run `change` (which may set turn `index`'s label) and keep the backend in step: it
        forgets the old label and learns the new one."""
        turn = self.session.turns[index] if index < len(self.session.turns) else None
        old = turn.label if turn is not None else None
        result = change()
        backend = self.router.backend if self.router is not None else None
        if turn is None or backend is None or not backend.learns_from_examples or turn.label == old:
            return result
        if old:
            backend.forget_exemplar(old, turn.message)  # a corrected label must stop teaching the old one
        self._teach([turn])
        return result

    def _session_meets_catalog(self) -> None:
        """The session's facts checked against the catalog in use (at each load, and when the
        session opened at start has been read)."""
        assert self.router is not None
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
        else:
            self._note_missing_options(catalog)

    def on_router_ready(self, message: RouterReady) -> None:
        old, self.router = self.router, message.router
        message.router.backend.learn_in_background()  # slow refits (the logistic label term) off the UI and routing
        self._teach(self.session.turns)  # a reopened session's labels count from the start
        self.config = message.router.config
        self._apply_config_theme(self.config)  # `config: reload` after adding the theme line
        self.workspace.sessions_dir = self.config.sessions_path
        self._router_error = ""
        self._router_ready.set()
        self._catalog_pending = self._catalog_said = None  # a catalog that loads: its next problem is news
        catalog = self.router.catalog
        if self._opening is None:  # else once the session is read (_opened_at_start)
            self._session_meets_catalog()
        self.query_one("#catalog-pane", CatalogPane).set_catalog(catalog)
        self._update_status(loading="")
        if self._opening is None:
            self._prepare_saving()  # after start-up's work, not competing with the first frame for the GIL
        self.show_turn(self.log_table.selected_index)
        if catalog.warnings and self._catalog_warned != (catalog.path, catalog.warnings):
            # an unknown field is ignored: say so once per catalog (a backend switch would repeat it)
            self._catalog_warned = (catalog.path, catalog.warnings)
            shown = list(catalog.warnings[:5]) + ([f"... and {len(catalog.warnings) - 5} more"] if len(catalog.warnings) > 5 else [])
            self.notify("\n".join(shown), title="Catalog warnings", severity="warning", timeout=15, markup=False)
        if (problem := self.router.backend.cache_problem()) and not self._cache_warned:
            # fails soft (vectors kept in memory); said once: a reload or backend switch would repeat it
            self._cache_warned = True
            self.notify(problem, title="Warning", severity="warning", timeout=20, markup=False)
        for problem in self.router.backend.load_problems():
            if problem not in self._load_warned:  # a reload names the same part again: said once
                self._load_warned.add(problem)
                self.notify(problem, title="Warning", severity="warning", timeout=20, markup=False)
        if old is not None and old is not self.router:
            note, self._config_note = self._config_note, ""
            self.notify(f"{note} Catalog {catalog.name}, backend {self.router.backend.name} ({self.router.backend.model}) in use.".strip(), markup=False)
            # a turn still waiting on the old backend finishes there: closing its client under the
            # request ended the turn "the server broke off its reply", blaming a server that was fine
            self.run_worker(self._close_after(old, list(self._routing)), group="close", exit_on_error=False)
        for screen in self.screen_stack:
            if hasattr(screen, "on_router_changed"):
                screen.on_router_changed()

    @staticmethod
    async def _close_after(old: Router, workers: list[Worker]) -> None:
        for worker in workers:
            with contextlib.suppress(Exception):  # cancelled or failed: either way done with `old`
                await worker.wait()
        await old.aclose()

    # ------------------------------------------------------------------ turns
    def on_turn_submitted(self, message: TurnSubmitted) -> None:
        if self._opening is not None:  # added to the session being read, once it is there
            if not self._held:
                self.notify(f"Still reading {display_path(self._opening)}: the message is added to it and routed once it is open.", markup=False)
            self._held.append(message.message)
            return
        with self.batch_update():
            self._turn_submitted(message)

    def _turn_submitted(self, message: TurnSubmitted) -> None:
        index = self.workspace.add_turn(message.message)
        log = self.log_table
        log.upsert(index)
        log.select(index)  # RowHighlighted -> show_turn
        if self.router is None and not self._router_error:
            self.notify("Still loading the catalog and backend; the message will be routed when they are ready.", markup=False)
        carried: list[int] = []
        for earlier in self._routing.values():
            if self.router is None:
                carried += earlier  # never reached a backend: routed, in order, with this one
            else:
                for i in earlier:  # in a backend: superseded (the exclusive worker cancels it)
                    self._unresolved(i, "superseded by a newer message before it was decided")
        self._routing.clear()  # a worker cancelled before it started never reports a state change
        indexes = [*carried, index]
        worker = self.route_turns(indexes, [self.workspace.turn(i) for i in indexes])
        self._routing[worker] = indexes
        self._routing_since = time.monotonic()
        self._start_loading_timer()

    @work(exclusive=True, exit_on_error=False, group="turn")
    async def route_turns(self, indexes: list[int], turns: list[Turn]) -> None:
        """Exclusive, so a stuck backend call is given up when a newer message comes."""
        await self._router_ready.wait()
        if self.router is None:
            raise RuntimeError(self._router_error or "no router is loaded")
        for index, turn in zip(indexes, turns, strict=True):
            self._questions = 1
            # the route, then (arguments.auto) the arguments step whose invalid arguments demote an
            # execute to confirm: Router.aroute_turn, the one policy `route --args` and mcp-serve share
            decision = await self.router.aroute_turn(
                turn.message,
                arguments=self.config.arguments.auto,
                questions=self._count_questions,
                building=lambda index=index: self.post_message(ArgumentsStarted(index, list(self.config.arguments.command))),
            )
            self.post_message(DecisionReady(index, decision, turn))

    def _count_questions(self, count: int) -> None:
        # on the app's loop (the routing worker is async): the waiting note reads it at its next redraw
        self._questions = count

    def on_arguments_started(self, message: ArgumentsStarted) -> None:
        if message.command and self._in_flight(message.index):  # the built-in extractor takes no time
            self._building_arguments[message.index] = " ".join(message.command)
            self._routing_since = time.monotonic()

    def _in_flight(self, index: int) -> bool:
        return any(index in indexes for indexes in self._routing.values())

    def _start_loading_timer(self) -> None:
        if self._loading_timer is not None:
            self._loading_timer.stop()
        self._loading_timer = self.set_timer(LOADING_DELAY, self._show_loading)

    def _show_loading(self) -> None:
        if self._routing:
            index = self.log_table.selected_index
            if index is not None and self._in_flight(index):
                self.show_turn(index, in_flight=True)
            self.query_one("#distribution-pane").loading = True
            if self._waiting_timer is None:  # a slow server: say what the turn waits for, and for how long
                self._waiting_timer = self.set_interval(1.0, self._show_waiting)

    def _show_waiting(self) -> None:
        index = self.log_table.selected_index
        if index is not None and self._in_flight(index):
            self.show_turn(index, in_flight=True)

    def _waiting_note(self, index: int) -> str:
        """What a turn in flight waits for: the loading router, the backend (its server and bounds), or
        the command that builds the decided turn's arguments."""
        elapsed = f"{time.monotonic() - self._routing_since:.0f} s so far"
        command = self._building_arguments.get(index)
        if command is not None:
            limit = self.config.arguments.timeout
            return f"Decided; building its arguments: waiting for [arguments] command {shorten(command, 80)}: {elapsed}, stopped after {limit:g} s ([arguments] timeout)."
        if self.router is None:
            return f"Routing: waiting for the catalog and backend to load ({elapsed})."
        backend = self.router.backend
        note = backend.waiting_note(self._questions)
        return f"Routing: waiting for the decision model {backend.name} · {backend.model}: {elapsed}{'; ' + note if note else ''}. A new message supersedes this one."

    def _stop_loading(self) -> None:
        if self._loading_timer is not None:
            self._loading_timer.stop()
            self._loading_timer = None
        if self._waiting_timer is not None:
            self._waiting_timer.stop()
            self._waiting_timer = None
        self.query_one("#distribution-pane").loading = False

    def on_decision_ready(self, message: DecisionReady) -> None:
        index, decision = message.index, message.decision
        self._building_arguments.pop(index, None)
        if not self.workspace.set_decision(index, decision.to_turn_decision(), message.turn, arguments=record_of(decision)):
            return  # the session was switched while this turn was routed
        self._live[index] = decision
        with self.batch_update():
            self._turn_changed(index)
        if decision.band.value == "unresolved":
            self.notify(f"Turn {index + 1} is unresolved: {decision.error}", severity="error", timeout=8, markup=False)
        if decision.caution:
            self.notify(f"Turn {index + 1}: {decision.caution}", severity="warning", timeout=10, markup=False)
        if decision.action.value == "confirm":
            box = self.query_one("#message", MessageInput)
            if box.has_focus and box.typing():
                # a dialog popping up mid-sentence would take the next y/n/c as an answer
                self.notify(f"Turn {index + 1} waits for confirmation: Enter on its row in the Decision log opens it.", markup=False)
            else:
                self.open_confirm(index)

    def _unresolved(self, index: int, error: str) -> None:
        """A turn whose routing never finished: kept, unresolved, and fallback pending."""
        policy = self.config.policy
        backend = self.router.backend.name if self.router else self.config.backend
        if self.workspace.unresolved(index, error, backend=backend, high=policy.high, medium=policy.medium):
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
            indexes = self._routing.pop(worker, None)
            if not self._routing:
                self._stop_loading()
            for index in indexes or []:  # turns the worker decided already keep their decision
                self._building_arguments.pop(index, None)
                if state is WorkerState.ERROR and self.session.turns[index].decision is None:
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
                self.query_one("#catalog-pane", CatalogPane).failed(self._router_error)
            else:
                self._update_status(loading="")  # a failed switch: the previous router stays
            if worker is self._watch_reload:
                self._catalog_pending = lines  # said at the next check if the file stays as read
                return
            self._say_router_failure(lines)
        elif worker.group == "fallback" and state in (WorkerState.ERROR, WorkerState.CANCELLED):
            index = self.workspace.fallback_turn
            self._fallback_done()
            if state is WorkerState.CANCELLED:
                self.notify(f"Fallback for turn {(index or 0) + 1} cancelled; nothing was saved for it.", markup=False)
            else:
                self.notify(f"Fallback failed: {error}", severity="error", markup=False)
        elif worker.group == "save" and state is WorkerState.ERROR:
            self._update_status()
            self.notify(self.workspace.save_failure(error), severity="error", timeout=15, markup=False)
        elif worker.group == "replay" and state is WorkerState.ERROR:
            self.notify(f"Replay failed: {error}", severity="error", markup=False)

    def _say_router_failure(self, lines: list[str]) -> None:
        if self.router is not None:  # say what is in use, so a failed reload does not read as a dead console
            lines = [*lines, f"Still routing with catalog '{self.router.catalog.name}' as loaded before."]
        self.notify("\n".join(lines), title="Could not load the router", severity="error", timeout=15, markup=False)

    # ------------------------------------------------------------------ the selected turn
    def _note_missing_options(self, catalog) -> None:
        """A session whose catalog changed since (a tool removed or renamed): say which ids its turns
        name that the catalog no longer has, once, instead of showing them as if nothing changed."""
        known = {*catalog.option_ids, catalog.none_option}
        missing: dict[str, int] = {}
        for turn in self.session.turns:
            named = {turn.label, turn.decision.choice if turn.decision else None} - {None}
            for option in sorted(named - known):
                missing[option] = missing.get(option, 0) + 1
        if missing:
            ids = ", ".join(f"'{option}'" for option in sorted(missing)[:5]) + (" ..." if len(missing) > 5 else "")
            self.notify(
                f"This session names options catalog '{catalog.name}' does not have ({ids}): it changed since. "
                "Those turns cannot be approved; relabel them with l or replay the session.",
                severity="warning",
                timeout=12,
                markup=False,
            )

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
        elif index == self.workspace.fallback_turn:  # not "press f to send it": it is being sent
            self.notify("The fallback command is running for this turn; Enter shows its output when it ends, c cancels it.", markup=False)
        elif waits_for_fallback(decision):
            self.notify("This turn waits for the fallback LLM: press f to send it.", markup=False)

    def show_turn(self, index: int | None, *, in_flight: bool = False) -> None:
        """Show a turn in Candidates, Distribution and the detail line.

        A turn still being routed is not drawn at once: a fast backend answers within the frame,
        and drawing "Routing…" first would paint every pane twice. If the answer takes longer
        than LOADING_DELAY, the loading timer draws it (in_flight=True).
        """
        turns = self.session.turns
        if index is not None and 0 <= index < len(turns) and turns[index].decision is None and not in_flight:
            if self._in_flight(index):
                return
        candidates = self.query_one("#candidates", CandidatesView)
        distribution = self.query_one("#distribution", DistributionView)
        detail = self.query_one("#turn-detail", PaneText)
        if index is None or not 0 <= index < len(turns):
            candidates.show(None, self.router.catalog if self.router else None)
            distribution.show(None)
            for pane in (self.query_one("#candidates-pane"), self.query_one("#distribution-pane")):
                pane.border_subtitle = ""  # no "turn 5" left from the session before
            detail.set_content(Content.styled(
                f"Reading {display_path(self._opening)}…  Type meanwhile: a message sent is added to it once it is open."
                if self._opening is not None
                else "Type a user message below and press Enter. Press F1 for help.",
                "$text-muted",
            ))
            return
        turn = turns[index]
        none_option = self.router.catalog.none_option if self.router else "defer_to_llm"
        live = self._live.get(index)
        view = TurnView.of(
            turn,
            none_option,
            live.formula if live else self.config.policy.confidence,
            routing=turn.decision is None and self._in_flight(index),
            waiting=self._waiting_note(index) if turn.decision is None and self._in_flight(index) else "",
        )
        candidates.show(view, self.router.catalog if self.router else None)
        distribution.show(view)
        subtitle = f"turn {index + 1}"
        d = turn.decision
        # the turn's own thresholds stay visible even when its bars fill a short pane
        thresholds = f" · ≥{d.high:g}/≥{d.medium:g}" if d is not None and d.high is not None and d.medium is not None else ""
        for pane, text in ((self.query_one("#candidates-pane"), subtitle), (self.query_one("#distribution-pane"), subtitle + thresholds)):
            if pane.border_subtitle != text:  # a new subtitle repaints the whole pane
                pane.border_subtitle = Content(text)
        running = self._fallback_running() if index == self.workspace.fallback_turn else None
        detail.set_content(turn_detail(turn, running, self.log_table.id_room()))

    # ------------------------------------------------------------------ confirm
    def open_confirm(self, index: int) -> None:
        turn = self.session.turns[index]
        d = turn.decision
        if d is None or d.choice is None:
            return
        catalog = self.router.catalog if self.router else None
        tool = catalog.get(d.choice) if catalog else None
        if catalog is not None and tool is None and d.choice != catalog.none_option:
            # a session opened on a catalog that lost this tool: the dialog proposed it, blank, and
            # approving labelled the turn with an id eval then refuses
            self.notify(
                f"Turn {index + 1} proposed '{d.choice}', which is not in catalog '{catalog.name}' any more: nothing to "
                "approve. Pick its label with l, or replay the session to re-route it.",
                severity="warning",
                markup=False,
            )
            return
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
                "High confidence, but the arguments are invalid or incomplete: a person checks them."
                if turn.arguments is not None and turn.arguments.demoted
                else f"High confidence, but {tool.risk.value} tools are never executed without a person."
                if d.band == "high" and tool is not None
                else "Medium confidence: a person decides."
            ),
            arguments=confirm_arguments_text(turn),
        )

        def decided(result: ConfirmResult | None) -> None:
            if result is None:
                return  # decide later: the row says "pending"; Enter on it reopens the dialog
            outcome, rerouted_to = result
            self.post_message(OutcomeRecorded(index, outcome, rerouted_to))

        self.push_screen(ConfirmTurnModal(request), decided)

    def on_outcome_recorded(self, message: OutcomeRecorded) -> None:
        if (gone := self._gone_option(message.index, message.outcome, message.rerouted_to)) is not None:
            # the catalog was reloaded under an open dialog and lost the tool: approving it labelled
            # the turn with an id the catalog no longer has (and built its arguments)
            self.notify(
                f"Turn {message.index + 1}: '{gone}' is not in catalog '{self.router.catalog.name}' any more (it was "
                "reloaded while the dialog was open): nothing recorded, the turn stays pending. Pick its label with l.",
                severity="warning",
                markup=False,
            )
            return
        if not self._relabel(
            message.index, lambda: self.workspace.record_outcome(message.index, message.outcome, message.rerouted_to)
        ):
            return
        self._turn_changed(message.index)  # the row shows the outcome: no notification needed
        self.arguments_after_outcome(message.index, message.outcome, message.rerouted_to)

    def _gone_option(self, index: int, outcome: str, rerouted_to: str | None) -> str | None:
        """The option an approve or re-route names that the catalog in use does not have, else None."""
        d = self.session.turns[index].decision if 0 <= index < len(self.session.turns) else None
        named = rerouted_to if rerouted_to else (d.choice if outcome == "approved" and d is not None else None)
        if named is None or self.router is None:
            return None
        catalog = self.router.catalog
        return None if named in catalog.option_ids or named == catalog.none_option else named

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
        index, _turn = selected
        choice = self.workspace.accept_choice(index)
        if choice is None:
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
        catalog = self.router.catalog if self.router is not None else None
        if message.label is not None and catalog is not None and message.label not in catalog.option_ids:
            # accepted from a turn routed on a catalog since edited, or picked in a picker opened
            # before a reload: a label eval would refuse
            self.notify(
                f"Turn {message.index + 1}: '{message.label}' is not in catalog '{catalog.name}' any more: no label "
                "set. Pick one with l.",
                severity="warning",
                markup=False,
            )
            return
        self.remember_label(message.index)  # u puts it back (label_undo.py)
        self._relabel(message.index, lambda: self.workspace.set_label(message.index, message.label))
        self._turn_changed(message.index)  # the row shows the label: no notification needed

    # ------------------------------------------------------------------ fallback
    def action_fallback(self) -> None:
        selected = self._selected()
        if selected is None:
            return
        index, turn = selected
        refusal = self.workspace.fallback_refusal(index, bool(self.config.fallback.command))
        if refusal == NO_FALLBACK_COMMAND:
            self.notify(
                "No fallback command is configured. Add to the config file "
                f"({config_location(self.config)}):\n[fallback]\ncommand = [\"your-llm\", \"--flag\"]\n"
                "then run 'config: reload' from the palette (ctrl+p). "
                "The message arrives on stdin and in $TUI_ROUTER_MESSAGE.",
                title="Fallback",
                severity="warning",
                timeout=15,
                markup=False,
            )
            return
        if refusal is not None:
            self.notify(refusal, severity="warning", markup=False)
            return
        self.workspace.start_fallback(index)
        self._fallback_started, self._fallback_output = time.monotonic(), ""
        self._fallback_timer = self.set_interval(0.5, self._fallback_tick)
        self._fallback_tick()
        self.refresh_bindings()
        self.run_fallback_turn(index, turn.message)

    def action_fallback_while_running(self) -> None:
        self.action_fallback()  # the refusal: which turn's command runs, and that c cancels it

    def _fallback_running(self) -> tuple[float, str] | None:
        if self.workspace.fallback_turn is None:
            return None
        return time.monotonic() - self._fallback_started, self._fallback_output

    def _fallback_tick(self) -> None:
        """Elapsed time on the row and in the detail while the command runs."""
        index = self.workspace.fallback_turn
        running = self._fallback_running()
        if index is None or running is None:
            return
        self.log_table.flags[index] = f"llm {running[0]:.0f}s"
        self.log_table.upsert(index)
        if self.log_table.selected_index == index:
            self.query_one("#turn-detail", PaneText).set_content(turn_detail(self.session.turns[index], running))

    def on_fallback_output(self, message: FallbackOutput) -> None:
        if message.index == self.workspace.fallback_turn:
            self._fallback_output = message.text
            self._fallback_tick()

    @work(exclusive=True, exit_on_error=False, group="fallback")
    async def run_fallback_turn(self, index: int, message: str) -> None:
        from ..fallback import run_fallback

        result = await run_fallback(
            message,
            self.config.fallback,
            cwd=self.config.base_dir,
            config_location=config_location(self.config),
            secret_env=self.config.secret_env_names(),
            progress=lambda text: self.post_message(FallbackOutput(index, text)),  # streamed into the view
        )
        self.post_message(FallbackFinished(index, result))

    def _fallback_done(self) -> None:
        index = self.workspace.end_fallback()
        if self._fallback_timer is not None:
            self._fallback_timer.stop()
            self._fallback_timer = None
        if index is not None:
            self.log_table.flags.pop(index, None)
            self.log_table.upsert(index)
            if self.log_table.selected_index == index:
                self.show_turn(index)  # the running line and partial output go
        self.refresh_bindings()

    def on_fallback_finished(self, message: FallbackFinished) -> None:
        self._fallback_done()
        result = message.result
        self.workspace.finish_fallback(message.index, result.to_record(), result.ok)
        self._turn_changed(message.index)
        severity = "information" if result.ok else "error"
        self.notify(f"Fallback for turn {message.index + 1}: {result.summary()}", severity=severity, timeout=8, markup=False)

    def action_cancel_fallback(self) -> None:
        if self.workspace.fallback_turn is None:
            self.notify("No fallback command is running.", markup=False)
            return
        self.workers.cancel_group(self, "fallback")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self._opening is not None and action in SESSION_ACTIONS:
            return None  # shown greyed: the session is still being read
        if action in ("cancel_fallback", "fallback_while_running"):
            return self.workspace.fallback_turn is not None
        if action == "fallback":  # key f: c Cancel takes its place in the footer while one runs
            return self.workspace.fallback_turn is None
        if action in ("toggle_catalog", "save_as"):
            return self.screen is self.screen_stack[0]  # console-screen actions, not over dialogs or replay
        return True

    # ------------------------------------------------------------------ saving
    def autosave(self, changed: int | None = None) -> None:
        """Snapshot the session now (on the UI thread, so it is consistent) and write it off-thread."""
        snap = self.workspace.snapshot(changed)
        self._update_status()
        self._write_session(snap)

    def _prepare_saving(self) -> None:
        if len(self.session.turns) >= PREPARE_TURNS:
            self._prepare_texts()

    @work(thread=True, exclusive=True, exit_on_error=False, group="prepare")
    def _prepare_texts(self) -> None:
        self.workspace.prepare_texts()  # the first save of a long session reuses these

    @work(thread=True, exit_on_error=False, group="save")
    def _write_session(self, snap) -> None:
        if self.workspace.write(snap):
            self.post_message(SessionSaved(snap.path, snap.seq))

    def on_session_saved(self, message: SessionSaved) -> None:
        try:
            self._update_status()
        except NoMatches:
            pass  # the write finished while the app was closing
        self._say_comments_backup()

    def _say_comments_backup(self) -> None:
        backup = self.workspace.take_comments_backup()
        if backup is not None:
            self.notify(
                f"The session file had comments, which saving cannot keep: the file as it was is in {display_path(backup)}.",
                severity="warning", timeout=15, markup=False,
            )

    def save_now(self) -> bool:
        """Write the session synchronously (quit, save as). False when it could not be written."""
        problem = self._save_problem()
        if problem is not None:
            self.notify(problem, severity="error", timeout=15, markup=False)
            return False
        return True

    def _save_problem(self) -> str | None:
        """save_now without the notification: None when written, else why not (one sentence)."""
        try:
            self.workspace.save_now()
        except OSError as exc:
            return f"Could not save {self.session.path} ({exc.strerror or exc})."
        except UserError as exc:  # another console writes the file, or it changed on disk
            return str(exc)
        self._update_status()
        self._say_comments_backup()
        return None

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None, time_format: str | None = None) -> str | None:
        """Textual's "Screenshot", saved whole or not at all, with a sentence either way (screenshot.py).
        Textual writes into the Downloads folder; on a machine without one (a server, a container) it
        goes beside the sessions."""
        from platformdirs import user_downloads_path

        from .screenshot import screenshot_target

        if path is None and not user_downloads_path().is_dir():
            path = str(self.config.sessions_path)
            with contextlib.suppress(OSError):  # unwritable: save_screenshot says why
                Path(path).mkdir(parents=True, exist_ok=True)
        self._save_screenshot(screenshot_target(path, filename), self.export_screenshot())
        return None

    @work(thread=True, exit_on_error=False, group="screenshot")
    def _save_screenshot(self, target: Path, svg: str) -> None:
        from .screenshot import save_screenshot

        said, ok = save_screenshot(target, svg)
        self.call_from_thread(self.notify, said, title="Screenshot", severity="information" if ok else "error", timeout=10, markup=False)

    def action_save_as(self) -> None:
        suggested = self.session.path.stem if self.session.path else self.session.id

        self.ask(
            PromptModal(
                "Save session as",
                value=suggested,
                hint=f"A name (saved in {display_path(self.config.sessions_path)}/) or a path ending in .toml. Existing files are never overwritten.",
            ),
            self.save_as,
        )

    def save_as(self, value: str) -> Path | None:
        before = self.session.path
        try:
            target = self.workspace.save_as(value)
        except UserError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return None
        except OSError as exc:
            self.notify(f"Could not save {value}: {exc.strerror or exc}", severity="error", timeout=15, markup=False)
            return None
        self._update_status()
        if before is not None and target.resolve() == before.resolve():  # its own name: no new file
            self.notify(f"Saved in place: {display_path(target)} is already this session's file.", markup=False)
        else:
            self.notify(f"Session saved as {display_path(target)}; further turns are saved there.", markup=False)
        return target

    # ------------------------------------------------------------------ sessions, replay, backend, policy
    def action_open_file(self) -> None:
        self.ask(PromptModal("Open session file", placeholder="path/to/session.toml"), self.open_session_file)

    def action_follow_file(self) -> None:
        def chosen(value: str) -> None:
            path = self._path_from_prompt(value)
            if path is not None:
                self.follow_file(path)

        self.ask(PromptModal("Follow live session file or folder", placeholder="sessions/live or sessions/live/mcp-2026-11-30.toml"), chosen)

    def _path_from_prompt(self, value: str) -> Path | None:
        """The path typed in a prompt, or None after a notification saying why it cannot be one."""
        try:
            return typed_path(value)
        except UserError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return None

    def open_session_file(self, value: str) -> None:
        """Claim the file now, read it in a worker (5,000 turns took a second of the UI thread),
        then switch to it; the session in use stays usable meanwhile and is saved before the switch."""
        path = self._path_from_prompt(value)
        if path is None:
            return
        if is_live_file(path):
            self.open_live_file(path)
            return
        already = self.session.path is not None and path.resolve() == self.session.path.resolve()
        try:
            if path.is_file() and not looks_like_catalog_file(path):  # (a catalog: the reader refuses it)
                claim_session_file(path)  # a file another console writes is refused, before it is read
            else:
                load_session(path)  # no such file, a folder, a catalog: the reader's sentence at once
        except UserError as exc:
            if not already:
                release_session_file(path)
            self.notify("\n".join(exc.lines()), title="Cannot open", severity="error", timeout=10, markup=False)
            return
        if already and not self.save_now():  # the file in use: read back what is on screen
            return
        previous = self._open_request
        if previous is not None and not previous[2] and previous[1].resolve() != path.resolve():
            release_session_file(previous[1])  # asked for before and not read yet: dropped when it comes
        self._open_count += 1
        self._open_request = (self._open_count, path, already, self.workspace.changes, self.session)
        self._update_status(loading=f"reading {shorten(path.name, 40)}…")
        self._read_session_file(path, self._open_count)

    @work(thread=True, group="open-session", exit_on_error=False)
    def _read_session_file(self, path: Path, request: int) -> None:
        """Request 0: the file `tui-router open FILE` named; others: open_session_file's."""
        from ..gcpause import gc_paused

        try:
            with gc_paused():  # gcpause.py: a session of months of turns reads in half the time
                session = load_session(path)
        except UserError as exc:
            self.post_message(SessionRead(path, request, None, exc.lines()))
            return
        self.post_message(SessionRead(path, request, session))

    def on_session_read(self, message: SessionRead) -> None:
        if message.request == 0:
            self._opened_at_start(message)
            return
        request = self._open_request
        if request is None or request[0] != message.request:
            return  # another file was asked for since (this one was let go then)
        self._open_request = None
        _, path, already, changes, then = request
        if then is not self.session:  # a new session (or a followed file) was started meanwhile: it stays
            if not already and (self.session.path is None or self.session.path.resolve() != path.resolve()):
                release_session_file(path)
            self._update_status(**({"loading": ""} if self.router is not None else {}))
            self.notify(f"{display_path(path)} was not opened: another session was started while it was read.", severity="warning", markup=False)
            return
        if already and message.problem is None and self.workspace.changes != changes:
            self.open_session_file(str(path))  # turns added to it while it was read: read it again
            return
        self._update_status(**({"loading": ""} if self.router is not None else {}))
        if message.problem is not None:
            if not already:
                release_session_file(path)
            self.notify("\n".join(message.problem), title="Cannot open", severity="error", timeout=10, markup=False)
            return
        session = message.session
        assert session is not None
        if self.save_now() and self.switch_session(session):
            self.notify(f"Opened {display_path(session.path)} ({len(session.turns)} turns).", markup=False)
        elif not already:
            release_session_file(path)

    def _opened_at_start(self, message: SessionRead) -> None:
        if message.problem is not None:
            # as when it was read before the console drew: the reader's sentence on stderr, exit 2,
            # the file untouched (its lock goes at unmount)
            self.exit_error = SessionError(message.problem[0], problems=message.problem)
            self.exit(return_code=2)
            return
        session = message.session
        assert session is not None
        self.workspace.switch(session)  # the stand-in: no file, no turns
        self._opening = None
        with self.batch_update():
            self.log_table.set_turns(session.turns)
            if session.turns:
                self.log_table.select(len(session.turns) - 1)
            self.show_turn(self.log_table.selected_index)
            if self.router is not None:
                self._teach(session.turns)
                self._session_meets_catalog()
                self._prepare_saving()
            self._update_status()
        self.refresh_bindings()
        held, self._held = self._held, []
        for text in held:  # sent while it was read: added now, in order
            self.on_turn_submitted(TurnSubmitted(text))
        if self._follow_on_mount is not None:
            self.follow_file(self._follow_on_mount)

    def open_live_file(self, path: Path) -> None:
        """A live file is the MCP server's recording and the console never writes it: opening one
        follows it into a new session of this console's own (as `tui-router open --follow` does)."""
        from . import live_open_notice

        if not path.is_file():
            self.notify(f"{path}: no such live file to follow.", title="Cannot open", severity="error", markup=False)
            return
        followed = self.follow_path.resolve() if self.follow_path is not None else None
        if followed is not None and followed in (path.resolve(), path.resolve().parent):
            self.notify(f"Already following {path}: its turns are copied into this session.", markup=False)
            return
        if not self.save_now():
            return
        router = self.router
        session_id = new_session_id(f"follow-{path.stem}")
        session = (
            self.workspace.new_session(router.catalog.name, router.backend.name, router.backend.model, session_id=session_id)
            if router is not None
            else self.workspace.new_session(session_id=session_id)
        )
        if not self.switch_session(session):
            return
        # follow_file starts afresh on another path: the new session copies every turn of the file
        self.notify(live_open_notice(path), timeout=12, markup=False)
        self.follow_file(path)

    def action_new_session(self) -> None:
        if not self.save_now():
            return
        router = self.router
        session = (
            self.workspace.new_session(router.catalog.name, router.backend.name, router.backend.model)
            if router is not None
            else self.workspace.new_session()
        )
        if self.switch_session(session):
            self.notify("New session.", markup=False)

    def switch_session(self, session: Session) -> bool:
        try:
            self.workspace.switch(session)
        except UserError as exc:
            self.notify(str(exc), severity="warning", markup=False)
            return False
        self.workers.cancel_group(self, "turn")
        self._routing.clear()  # their turns belong to the session left behind
        self._stop_loading()
        self._live.clear()
        self.log_table.set_turns(session.turns)
        if session.turns:
            self.log_table.select(len(session.turns) - 1)
        self.show_turn(self.log_table.selected_index)
        self._update_status()
        self._prepare_saving()
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
        self.ask(PromptModal("Replay session file", placeholder="path/to/session.toml"), self.replay_file)

    def replay_file(self, value: str) -> None:
        try:
            session = load_session(typed_path(value))
            gaps = None
            if self.router is not None:  # the checks `tui-router replay` makes (a changed catalog is what replay is for)
                from ..evaluate import check_sessions

                gaps = check_sessions([session], self.router.catalog, strict=False)
        except UserError as exc:
            self.notify("\n".join(exc.lines()), title="Cannot replay", severity="error", timeout=10, markup=False)
            return
        if gaps is not None and self.router is not None:
            lines = gaps.lines(self.router.catalog, verb="replayed but not scored")
            if lines:
                self.notify("\n".join(lines), title="Replay", severity="warning", timeout=10, markup=False)
        self.open_replay(session)

    def use_backend(self, name: str) -> None:
        if self.router is not None and self.router.backend.name == name:
            self.notify(f"Already using {name}.", markup=False)
            return
        config = self.config.model_copy(update={"backend": name})
        self._update_status(loading=f"loading backend {name}…")
        self.load_router(config, self.router.catalog if self.router else None)

    def action_open_catalog(self) -> None:
        from ..resources import bundled_catalogs

        names = ", ".join(bundled_catalogs())
        self.ask(
            PromptModal("Open catalog", placeholder="path/to/catalog.toml", hint=f"A catalog file, or a bundled name ({names}). Enter loads it; escape cancels."),
            self.use_catalog,
        )

    def use_catalog(self, value: str) -> None:
        from ..resources import bundled_catalogs

        value = value.strip()
        path = self._path_from_prompt(value)
        if path is None:
            return
        if not (value in bundled_catalogs() and not path.exists()):
            if not path.is_file():
                self.notify(f"{value}: no such catalog file (nothing changed).", severity="error", markup=False)
                return
            value = str(path.resolve())
        config = self.config.model_copy(update={"catalog": value})
        self._update_status(loading=f"loading catalog {shorten(value, 40)}…")
        self.load_router(config)

    def action_reload_config(self) -> None:
        self.use_config_file(self.config.source)

    def action_reload_catalog(self) -> None:
        """Read the catalog file in use again (edited in another window); a broken edit leaves the
        catalog as loaded in use, with the problems in a notification."""
        self._config_note = "Catalog reloaded."
        self._update_status(loading="reloading the catalog…")
        self.load_router(self.config)

    def _check_catalog_file(self) -> None:
        """An edit saved to the catalog file reloads it (the router is rebuilt in a worker; a
        broken file keeps the previous catalog and says why, file and line)."""
        seen = self._catalog_seen
        if seen is None or (self.router is None and not self._router_error):
            return  # nothing read from a file, or the first load still running (a failed one is watched: the fix loads)
        path, stamp = seen
        now = file_stamp(path)
        pending, self._catalog_pending = self._catalog_pending, None
        if now is None:  # gone for a moment (an editor's save replaces the file), or for good: said once
            self._catalog_gone += 1
            if self._catalog_gone == CATALOG_GONE_POLLS and self.router is not None:
                self.notify(
                    f"{display_path(path)} is gone from disk (deleted, moved or a broken link): the catalog as loaded "
                    "stays in use; saving the file there again loads it.",
                    severity="warning",
                    timeout=15,
                    markup=False,
                )
            return
        self._catalog_gone = 0
        if now == stamp:
            if pending is not None and pending != self._catalog_said:  # the file stayed as read: broken indeed
                self._catalog_said = pending
                self._say_router_failure(pending)
            return
        if now[1] == 0 and path.is_file():
            return  # emptied: an editor writing in two steps (truncate, then fill); no catalog is empty
        self._catalog_seen = (path, now)
        self._config_note = f"{display_path(path)} changed on disk: reloaded."
        self._update_status(loading="reloading the catalog…")
        self._watch_reload = self.load_router(self.config)

    def action_open_config(self) -> None:
        def chosen(value: str) -> None:
            path = self._path_from_prompt(value)
            if path is not None:
                self.use_config_file(path)

        self.ask(PromptModal("Open config file", placeholder="path/to/tui-router.toml", hint="Enter loads it; escape cancels."), chosen)

    def use_config_file(self, path: Path | None) -> None:
        """Re-read a config file and rebuild the router; a bad file changes nothing."""
        from ..config import load_config

        try:
            config = load_config(path)
            from_file = config
            if self._command_line is not None:
                # the command line wins over the file, as at start: `tui-router --catalog my.toml`
                # reloaded onto the demo catalog and `--backend bm25` onto the default backend
                config = self._command_line(config)
        except UserError as exc:
            self.notify("\n".join(exc.lines()), title="Config not loaded", severity="error", timeout=15, markup=False)
            return
        self._config_note = f"Config {'reloaded from ' + display_path(config.source) if config.source else 'reset to the defaults (no config file)'}."
        if config is not from_file:
            self._config_note += " The command line's options still apply."
        self._update_status(loading="reloading the config…")
        self.load_router(config)

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

    # ------------------------------------------------------------------ review queue
    def action_review_queue(self) -> None:
        """The unlabelled turns of every session in the sessions folder (this one included). The
        folder is read in a worker: 50 files of months of turns took seconds, the console frozen."""
        # the session's file text is taken now (the turns as they are) and written by the worker
        # before it reads the folder: a 5,000-turn file took 0.55 s of the UI thread to write here
        snap = self.workspace.snapshot() if self.session.turns else None
        folder = self.config.sessions_path
        current = self.session.path.resolve() if self.session.path else None
        own = self.session if current is not None else None
        self._read_review_queue(folder, current, own, snap)

    @work(thread=True, exclusive=True, group="review-read", exit_on_error=False)
    def _read_review_queue(self, folder: Path, current: Path | None, own: Session | None, snap=None) -> None:
        from ..gcpause import gc_paused
        from ..review import Review, read_sessions, reviewer_name

        if snap is not None:
            try:
                self.workspace.write_now(snap)
            except OSError as exc:
                self.post_message(ReviewQueueRead(problem=[f"Could not save {snap.path} ({exc.strerror or exc}); the review queue was not opened and your turns are kept here."]))
                return
            except UserError as exc:  # another console writes the file, or it changed on disk
                self.post_message(ReviewQueueRead(problem=[f"{exc} The review queue was not opened; your turns are kept here."]))
                return
        # full collections in this thread hold the GIL 100-300 ms each while a big folder is read
        with gc_paused():
            files = [f for f in sorted(folder.glob("*.toml")) if f.resolve() != current] if folder.is_dir() else []
            # a file that does not read is said and left out (before, one such file closed the queue)
            sessions, unread = read_sessions(files)
            if own is not None:
                sessions.insert(0, own)  # labelled in memory; the console writes its own (locked) file
            review = Review(sessions, reviewer=reviewer_name(self.config), own=own)
        self.post_message(ReviewQueueRead(review, own, unread=unread))

    @work(thread=True, exclusive=True, group="review-files", exit_on_error=False)
    def _read_review_files(self, files: list[Path]) -> None:
        """`tui-router review FILES`: 50 files of 20,000 turns took a second before the first frame."""
        from ..gcpause import gc_paused
        from ..review import Review, read_sessions, reviewer_name

        drawn = [0.0]

        def progress(done: int, total: int) -> None:
            now = time.monotonic()
            if done == total or now - drawn[0] >= 0.25:
                drawn[0] = now
                self.post_message(FilesReadProgress(done, total))

        with gc_paused():
            sessions, problems = read_sessions(files, progress)
            review = Review(sessions, reviewer=reviewer_name(self.config))
        self.post_message(ReviewFilesRead(review, problems))

    def on_files_read_progress(self, message: FilesReadProgress) -> None:
        from .screens.review import ReviewReadingScreen

        if isinstance(self.screen, ReviewReadingScreen):
            self.screen.progress(message.done)

    def on_review_files_read(self, message: ReviewFilesRead) -> None:
        from .screens.review import ReviewReadingScreen, ReviewScreen

        review, problems = message.review, message.problems
        if not review.sessions and problems:
            # not one file read: the console ends as it did when the files were read before it
            # drew, with the reasons on stderr and exit 2 (every file left as it is)
            lines = [line for lines in problems for line in lines]
            self.exit_error = SessionError(lines[0], problems=lines)
            self.exit(return_code=2)
            return
        self.review = review
        if self._injected_router is None and self.router is None:
            self.load_router(self.config)  # the queue is drawn first; the panes take the catalog when it comes
        screen = ReviewScreen(review, quit_on_close=True)
        if isinstance(self.screen, ReviewReadingScreen):
            self.switch_screen(screen)
        else:  # a dialog opened over the loading screen (F1): the queue goes under it
            self.push_screen(screen)
        self._say_unread(problems, len(review.sessions))

    def _say_unread(self, problems: list[list[str]], read: int) -> None:
        """Files the review queue could not read: said once, in one notification; not queued and
        left as they are."""
        if not problems:
            return
        shown = [lines[0] for lines in problems[:6]] + ([f"... and {len(problems) - 6} more"] if len(problems) > 6 else [])
        self.notify(
            "\n".join([f"{len(problems)} of {len(problems) + read} files could not be read: not queued, left as they are.", *shown]),
            title="Review queue",
            severity="warning",
            timeout=20,
            markup=False,
        )

    def on_review_queue_read(self, message: ReviewQueueRead) -> None:
        from .screens.review import ReviewScreen

        with contextlib.suppress(NoMatches):  # the session written first (or not): the status says
            self._update_status()
        self._say_comments_backup()
        if message.problem is not None:
            self.notify("\n".join(message.problem), title="Cannot open the review queue", severity="error", timeout=10, markup=False)
            return
        if message.own is not None and message.own is not self.session:
            # another session was opened meanwhile: the queue's labels would go to the one left
            self.notify("Another session was opened while the review queue was read: open the queue again.", severity="warning", markup=False)
            return
        self.push_screen(ReviewScreen(message.review))
        self._say_unread(message.unread, len(message.review.sessions))

    def action_what_if(self) -> None:
        if not self.session.turns:  # as replay says: the dialog spoke of "hand-written cases"
            self.notify("Nothing to compare yet: this session has no turns.", markup=False)
            return
        policy = self.config.policy

        def chosen(value: str | None) -> None:
            if value:
                self.show_what_if(value)

        self.push_screen(
            PromptModal(
                "What if the thresholds were (high medium)",
                value=f"{policy.high:g} {policy.medium:g}",
                hint="Shows the turns of this session whose band or action would change; writes nothing.",
            ),
            chosen,
        )

    def show_what_if(self, value: str) -> bool:
        """The recorded turns re-banded under other thresholds, in a dialog; nothing changes."""
        from ..review import parse_what_if, what_if
        from .screens.review import WhatIfScreen

        parts = value.replace(",", " ").split()
        try:
            if len(parts) != 2:
                raise UserError("give two numbers, high first, e.g. 0.8 0.5")
            after = parse_what_if(f"high={parts[0]},medium={parts[1]}", self.config.policy)
        except UserError as exc:
            reason = str(exc).removeprefix("--what-if: ")
            self.notify(f"{reason[:1].upper()}{reason[1:]}.", severity="error", markup=False)
            return False
        report = what_if([self.session], self.config.policy, after, self.router.catalog if self.router else None)
        title = f"What if: high ≥ {after.high:g}, medium ≥ {after.medium:g} (now {self.config.policy.high:g} / {self.config.policy.medium:g})"
        self.push_screen(WhatIfScreen(title, report.lines()))
        return True

    def review_label_written(self, path: Path, index: int) -> None:
        """The review queue changed a label: if it is this session's, redraw the turn and save it."""
        if self.session.path is not None and path.resolve() == self.session.path.resolve() and index < len(self.session.turns):
            self._turn_changed(index)

    # ------------------------------------------------------------------ view actions
    def action_command_palette(self) -> None:
        from textual.command import CommandPalette

        from .widgets.safe_input import safe_command_palette

        if self.use_command_palette and not CommandPalette.is_open(self):
            self.push_screen(safe_command_palette(id="--command-palette"))

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_toggle_maximize(self) -> None:
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
        elif self.focused is not None and not screen.maximize(self.focused):
            self.notify("F10 fills the screen with a pane: Tab to one first (escape or F10 restores it).", markup=False)

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

    def action_leave_catalog(self) -> None:
        """Escape in the Catalog: to the message box; below NARROW the pane covers the console, so it closes."""
        if self.screen_stack[0].has_class("-narrow"):
            self.action_toggle_catalog()
        else:
            self.action_focus_input()

    def _selected_decision(self) -> TurnDecision | None:
        index = self.log_table.selected_index
        return self.session.turns[index].decision if index is not None else None

    # Focus moves at once, not through Widget.focus (which defers it to after the messages already
    # queued): keys typed right after escape / i must reach the widget they were typed for.
    def action_focus_log(self) -> None:
        self.log_table.screen.set_focus(self.log_table)

    def action_focus_input(self) -> None:
        box = self.query_one("#message", MessageInput)
        box.screen.set_focus(box)

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
        running = self.workspace.fallback_turn
        if running is not None and not self._quit_armed:  # q stopped it silently, its output lost
            self._quit_armed = True
            self.notify(f"The fallback command is running for turn {running + 1}. Press q again to quit and stop it (its output is not saved), or wait for it.", severity="warning", timeout=10, markup=False)
            return
        # a turn still being decided is saved as what it is: unresolved, with why (FORMATS: band,
        # error), not as a message with no decision; an answer arriving before the exit replaces it
        policy = self.config.policy
        backend = self.router.backend.name if self.router else self.config.backend
        for index in sorted({i for indexes in self._routing.values() for i in indexes}):
            self.workspace.unresolved(index, QUIT_BEFORE_DECISION, backend=backend, high=policy.high, medium=policy.medium)
        problem = self._save_problem()
        if problem is not None and not self._quit_armed:
            self._quit_armed = True
            self.notify(f"{problem} Press q again to quit anyway (the unsaved turns are lost), or ctrl+s to save them under another name.", severity="error", timeout=15, markup=False)
            return
        self.exit(0)

    async def on_unmount(self) -> None:
        self.workspace.close()  # the lock goes, and its .lock file with it (storage.py)
        release_session_file(self._opening)  # quit before the file named at start was read
        if self._open_request is not None and not self._open_request[2]:
            release_session_file(self._open_request[1])
        if self.router is not None:
            try:
                await self.router.aclose()  # e.g. the HTTP client of a systemone backend
            except Exception:
                pass

    # ------------------------------------------------------------------ command palette
    def _system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield SystemCommand("turn: route a message", "Focus the message box (i in the Decision log)", self.action_focus_input)
        yield SystemCommand("turn: confirm again", "Reopen the confirm dialog of the selected turn (enter on its row)", self.action_confirm_turn)
        yield SystemCommand("turn: send to fallback", "Run the fallback LLM command on the selected turn (f)", self.action_fallback)
        yield SystemCommand("turn: cancel fallback", "Stop the running fallback command (c)", self.action_cancel_fallback)
        yield SystemCommand("label: accept choice", "Label the selected turn with its choice (a)", self.action_label_accept)
        yield SystemCommand("label: pick", "Pick the selected turn's label from every option (l)", self.action_label_pick)
        yield SystemCommand("label: clear", "Clear the selected turn's label (x)", self.action_label_clear)
        yield from self.label_undo_commands()
        yield from self.arguments_commands()
        yield SystemCommand("session: save as", "Save the session under a new name (ctrl+s)", self.action_save_as)
        yield SystemCommand("session: open file", "Continue another session file", self.action_open_file)
        yield SystemCommand("session: new", "Start a new session (this one stays saved)", self.action_new_session)
        yield SystemCommand("session: follow live file", "Add the turns an MCP server appends to a live file, as they arrive", self.action_follow_file)
        yield SystemCommand("replay: this session", "Re-route every turn with the current catalog, backend and thresholds", self.action_replay_session)
        yield SystemCommand("replay: run file", "Replay a saved session file", self.action_replay_file)
        for name in BACKEND_NAMES:
            yield SystemCommand(f"backend: use {name}", f"Route new turns with the {name} backend", lambda name=name: self.use_backend(name))
        yield SystemCommand("catalog: open file", "Route with another catalog file or bundled catalog", self.action_open_catalog)
        yield SystemCommand("catalog: reload", "Read the catalog file in use again (an edit saved to it also reloads it by itself)", self.action_reload_catalog)
        yield SystemCommand("config: reload", "Re-read the config file (fallback command, thresholds, backend, catalog)", self.action_reload_config)
        yield SystemCommand("config: open file", "Use another config file", self.action_open_config)
        yield SystemCommand("policy: set thresholds", "Change the high and medium thresholds", self.action_set_thresholds)
        yield SystemCommand("policy: what if", "Which turns of this session would change under other thresholds (writes nothing)", self.action_what_if)
        yield SystemCommand("view: catalog", "Show or hide the Catalog pane (F2)", self.action_toggle_catalog)
        yield SystemCommand("view: decision log", "Move to the decision log (escape)", self.action_focus_log)
        yield SystemCommand("view: review queue", "Label unlabelled turns of every session file, least certain first", self.action_review_queue)
        yield SystemCommand("view: help", "Keys, bands and files (F1)", self.action_help)
        yield SystemCommand("app: quit", "Quit; everything is saved (q)", self.action_quit)
        # Textual's own Quit and Keys would sit beside ours ("app: quit", "view: help"): left out
        yield from (c for c in super().get_system_commands(screen) if c.title not in ("Quit", "Keys"))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        for command in self._system_commands(screen):
            name = getattr(command.callback, "__name__", "").removeprefix("action_")
            if self._opening is None or name not in SESSION_ACTIONS:
                yield command


def config_location(config: Config) -> str:
    if config.source is not None:
        return str(config.source)
    from ..config import user_config_path

    return f"{user_config_path()}, or the path `tui-router locate config` prints"


def turn_detail(turn: Turn, running: tuple[float, str] | None = None, id_room: tuple[int, int] = (12, 12)) -> Content:
    """The selected turn's full message (shortened to a few lines) and its fallback result."""
    parts: list[Content] = [Content.assemble(("message ", "$text-muted"), shorten(turn.message, 400))]
    ids = full_ids(turn, id_room)  # ids the log cuts with …, in full
    if ids is not None:
        parts.append(ids)
    d = turn.decision
    if d is not None and d.action == "execute":
        parts.append(Content.styled("execute is a proposal for your application's dispatcher: this console never runs a tool", "$text-muted"))
    if d is not None and d.error:
        parts.append(Content.assemble(("error ", "bold $error"), (visible(d.error), "$error")))
    fb = turn.fallback
    if running is not None:
        elapsed, output = running
        parts.append(Content.styled(f"fallback running · {elapsed:.1f} s (c in the Decision log cancels)", "bold $warning"))
        if output:
            tail = output.rstrip()[-1200:]  # the newest output; the full text is saved when it ends
            parts.append(Content(tail))
    elif fb is not None:
        head = "fallback " + (f"exit {fb.exit_code}" if fb.exit_code is not None else "no exit code")
        if fb.duration_ms is not None:
            head += f" · {fb.duration_ms:.0f} ms"
        if fb.truncated:
            head += f" · {fb.cut_note()}"
        parts.append(Content.styled(head, "bold" if not fb.error else "bold $error"))
        if fb.error:
            parts.append(Content.styled(visible(fb.error), "$error"))
        if fb.output:
            parts.append(Content(shorten(one_line(fb.output), 600) if len(fb.output) > 600 else visible(fb.output.rstrip())))
    elif fallback_pending(d) and d is not None and d.outcome != "fallback_done":
        # the message box has focus most of the time, and there f types an f: say how to get there
        parts.append(Content.styled("fallback pending: f in the Decision log sends it to the fallback LLM command (escape moves there from the message box)", "$text-muted"))
    parts += arguments_detail(turn)
    return Content("\n").join(parts)
