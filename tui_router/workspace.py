"""The session controller: turns, outcomes with history, labels, fallback state and autosave.

No Textual here (a test imports it in a subprocess and checks `textual` stays out of
`sys.modules`): the console keeps compose, bindings, workers and messages and calls this for every
rule about what a turn is and how the session file is written, so those rules are testable without
a terminal and the replay screen reads the workspace instead of the app's private fields.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from . import tomlio
from .errors import UserError
from .review import label_from_outcome
from .session import (
    ArgumentsRecord,
    FallbackRecord,
    LabelSource,
    OutcomeStep,
    Session,
    SessionInfo,
    Turn,
    TurnDecision,
    is_live_file,
    new_session_id,
    session_to_dict,
    unused_path,
)
from .storage import create_session_file, release_session_file, write_session_text
from .textsafe import visible

# How each outcome reads on screen (the file keeps the ids).
OUTCOME_TEXT = {
    "proposed": "proposed",
    "approved": "approved",
    "declined": "declined",
    "rerouted": "rerouted",
    "escalated": "escalated",
    "fallback_done": "llm done",
    "pending": "pending",
}


NO_FALLBACK_COMMAND = "No fallback command is configured."


def fallback_pending(decision: TurnDecision | None) -> bool:
    """A turn the fallback LLM command may take: banded fallback, or a proposal the operator declined."""
    return decision is not None and (decision.action == "fallback" or decision.outcome == "declined")


def waits_for_fallback(decision: TurnDecision | None) -> bool:
    """Pending for the fallback and not yet answered by it."""
    return fallback_pending(decision) and decision is not None and decision.outcome != "fallback_done"


def outcome_trail(decision: TurnDecision) -> str:
    """Every outcome of a turn in order, as the operator reads it: "declined → llm done"."""
    steps = [(s.outcome, s.rerouted_to) for s in decision.history] + [(decision.outcome, decision.rerouted_to)]
    return " → ".join(OUTCOME_TEXT.get(o, o) + (f" {r}" if r else "") for o, r in steps)


@dataclass
class Snapshot:
    """The session's file text at one moment, to be written off the UI thread."""

    path: Path
    text: str
    seq: int


def typed_path(value: str) -> Path:
    """A path typed or pasted in a console prompt, or a UserError sentence. A pasted NUL (ValueError),
    an unknown ~user (RuntimeError) or a name too long for the file system (OSError) escaped the
    prompts' callbacks and killed the console; ESC in a file name is refused too."""
    value = value.strip()
    shown = visible(value, single_line=True)
    if shown != value:
        raise UserError(f"A path or name cannot hold control characters: {shown[:80]}; nothing changed.")
    try:
        path = Path(value).expanduser()
        path.exists()  # the file system's refusals (ENAMETOOLONG...) surface here, as a sentence
    except (OSError, RuntimeError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise UserError(f"{shown[:80]}: not a usable path ({reason}); nothing changed.") from None
    return path


class Workspace:
    """One open session and the rules for changing it. Not thread-safe except `write`."""

    def __init__(
        self,
        session: Session | None,
        sessions_dir: Path,
        *,
        clock: Callable[[], datetime] | None = None,
        session_id: str | None = None,
        reviewer: str | None = None,
    ) -> None:
        self.clock = clock or (lambda: datetime.now(UTC))
        self.reviewer = reviewer  # recorded with each label (config `reviewer`, else $USER)
        self.sessions_dir = sessions_dir
        if session is None:
            session = Session(session=SessionInfo(id=session_id or new_session_id(), created=self.now_iso()))
        self.session = session
        self.fallback_turn: int | None = None  # the turn whose fallback command is running
        self._turn_text: dict[int, str] = {}  # each turn's TOML, dropped when the turn changes
        # prepare_texts fills _turn_text from a thread: a turn's generation (bumped by every change)
        # and the session's epoch (bumped by a switch) tell it when a text it made is already stale
        self._text_lock = threading.Lock()
        self._text_gen: dict[int, int] = {}
        self._epoch = 0
        self._save_seq = 0
        self._written_seq = 0
        self._lock = threading.Lock()
        self._closed = False  # the console is gone: a late autosave must not claim the file again
        self.comments_backup: Path | None = None  # set when a write kept a hand-written file's comments aside

    def take_comments_backup(self) -> Path | None:
        """The backup a write made since the last call (the console says where it is, once)."""
        with self._lock:
            backup, self.comments_backup = self.comments_backup, None
        return backup

    # -- facts -----------------------------------------------------------------------------
    def now_iso(self) -> str:
        return self.clock().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    @property
    def turns(self) -> list[Turn]:
        return self.session.turns

    @property
    def path(self) -> Path | None:
        return self.session.path

    def turn(self, index: int) -> Turn:
        return self.session.turns[index]

    def decision(self, index: int | None) -> TurnDecision | None:
        if index is None or not 0 <= index < len(self.turns):
            return None
        return self.turns[index].decision

    @property
    def changes(self) -> int:
        """A count that moves with every snapshot taken (each change is autosaved through one): an
        open of this session's own file read in a worker compares it to know the read is current."""
        return self._save_seq

    @property
    def saved(self) -> bool | None:
        """None: nothing to save yet; True: the file holds every change; False: a write is due."""
        if not self.turns and self.session.path is None:
            return None
        return self._written_seq >= self._save_seq

    # -- turns -----------------------------------------------------------------------------
    def add_turn(self, message: str) -> int:
        self.turns.append(Turn(message=message, at=self.now_iso()))
        return len(self.turns) - 1

    def append_turn(self, turn: Turn) -> int:
        """A turn decided elsewhere (a live file the MCP server writes), kept as it came."""
        self.turns.append(turn)
        return len(self.turns) - 1

    def set_decision(
        self, index: int, decision: TurnDecision, turn: Turn | None = None, arguments: ArgumentsRecord | None = None
    ) -> bool:
        """Record the router's answer (and the arguments built after it); False when `turn` is no
        longer that turn (session switched)."""
        if index >= len(self.turns) or (turn is not None and self.turns[index] is not turn):
            return False
        self.turns[index].decision = decision
        self.turns[index].arguments = arguments
        self._changed(index)
        return True

    def unresolved(self, index: int, error: str, *, backend: str | None, high: float, medium: float) -> bool:
        """A turn whose routing never finished: kept, unresolved, and waiting for the fallback."""
        if index >= len(self.turns) or self.turns[index].decision is not None:
            return False
        self.turns[index].decision = TurnDecision(
            band="unresolved", action="fallback", outcome="pending", error=error, backend=backend, high=high, medium=medium
        )
        self._changed(index)
        return True

    def record_outcome(self, index: int, outcome: str, rerouted_to: str | None = None) -> bool:
        """A new outcome; the one it replaces goes to the history (a decline is never erased)."""
        d = self.decision(index)
        if d is None:
            return False
        if d.outcome not in ("pending", "proposed") or d.rerouted_to:
            d.history.append(OutcomeStep(outcome=d.outcome, rerouted_to=d.rerouted_to))
        d.outcome = outcome  # type: ignore[assignment]
        d.rerouted_to = rerouted_to
        # an approved or re-routed confirm labels the turn (unless labelled); a decline is "not this"
        label_from_outcome(self.turns[index], outcome, rerouted_to, self.reviewer)
        self._changed(index)
        return True

    def set_label(self, index: int, label: str | None, source: LabelSource = "hand") -> None:
        """A label with where it came from and who gave it; clearing drops both."""
        turn = self.turns[index]
        turn.label = label
        turn.label_source, turn.reviewer = (source, self.reviewer) if label else (None, None)
        self._changed(index)

    def accept_choice(self, index: int) -> str | None:
        """The label `accept` gives: the re-routed or chosen option of a resolved turn."""
        d = self.decision(index)
        choice = (d.rerouted_to or d.choice) if d else None
        if d is None or choice is None or d.band == "unresolved":
            return None
        return choice

    # -- fallback --------------------------------------------------------------------------
    def fallback_refusal(self, index: int, command_configured: bool) -> str | None:
        """Why turn `index` cannot go to the fallback now (one sentence), or None when it can."""
        d = self.decision(index)
        if d is None:
            return "This turn is still being routed."
        if not fallback_pending(d):
            return (
                f"Turn {index + 1} is not waiting for the fallback (band {d.band}, action {d.action}); "
                "f sends low-band, none-option, unresolved and declined turns."
            )
        if self.fallback_turn is not None:
            return f"The fallback is running for turn {self.fallback_turn + 1}; press c to cancel it."
        if not command_configured:
            return NO_FALLBACK_COMMAND
        return None

    def start_fallback(self, index: int) -> None:
        self.fallback_turn = index

    def end_fallback(self) -> int | None:
        index, self.fallback_turn = self.fallback_turn, None
        return index

    def finish_fallback(self, index: int, record: FallbackRecord, ok: bool) -> None:
        turn = self.turns[index]
        turn.fallback = record
        if ok and turn.decision is not None:
            self.record_outcome(index, "fallback_done")  # keeps the decline (or pending) in the history
        else:
            self._changed(index)

    # -- saving ----------------------------------------------------------------------------
    def _changed(self, index: int | None) -> None:
        if index is not None:
            with self._text_lock:
                self._turn_text.pop(index, None)
                self._text_gen[index] = self._text_gen.get(index, 0) + 1

    @staticmethod
    def _render_turn(info: SessionInfo, turn: Turn) -> str:
        one = session_to_dict(Session(session=info, turns=[turn]))
        text = tomlio.dumps({"turns": one["turns"]})
        if not text.startswith("[[turns]]"):
            # tomli_w writes a short turn without sub-tables inline (`turns = [{...}]`), which
            # after the [session] header would read back as session.turns: force a table.
            text = "[[turns]]\n" + tomlio.dumps(one["turns"][0])
        return text

    def _turn_toml(self, index: int) -> str:
        text = self._turn_text.get(index)
        if text is None:
            text = self._turn_text[index] = self._render_turn(self.session.session, self.turns[index])
        return text

    def prepare_texts(self) -> int:
        """Make the TOML of every turn not made yet, from a worker thread, so the first save of a
        session opened with thousands of turns does not format all of them on the UI thread (about
        0.8 s at 5,000 turns, the console frozen after the first label). Safe beside the UI
        thread: a text is kept only if its turn did not change (nor the session switch) while it
        was made; a turn changed meanwhile is made by the next snapshot, as before. Returns how
        many texts it made."""
        with self._text_lock:
            epoch, session = self._epoch, self.session
        made = 0
        for index in range(len(session.turns)):
            with self._text_lock:
                if self._epoch != epoch:
                    break
                if index in self._turn_text:
                    continue
                gen = self._text_gen.get(index, 0)
            try:
                text = self._render_turn(session.session, session.turns[index])
            except Exception:  # read while the UI thread changed it: stale anyway, the snapshot makes it
                continue
            with self._text_lock:
                if self._epoch == epoch and self._text_gen.get(index, 0) == gen and index not in self._turn_text:
                    self._turn_text[index] = text
                    made += 1
        return made

    @property
    def texts_ready(self) -> int:
        """How many turns' TOML the next save can reuse."""
        return len(self._turn_text)

    def ensure_path(self) -> Path:
        """The session's file; a new one is made with O_EXCL and claimed (storage.py)."""
        if self.session.path is None:
            try:
                self.session.path = create_session_file(self.sessions_dir, self.session.id)
            except (OSError, UserError):  # the write that follows fails again and says why
                self.session.path = unused_path(self.sessions_dir, self.session.id)
        return self.session.path

    def snapshot(self, changed: int | None = None) -> Snapshot:
        """The file text now (on the UI thread, so it is consistent); `write` puts it on disk.

        Each turn's TOML is made once and kept until the turn changes, so saving costs the same in
        a session of 5 turns or 5,000; the text reads back as `session.dumps_session`'s does.
        """
        path = self.ensure_path()
        self._changed(changed)
        head = tomlio.dumps({"session": session_to_dict(Session(session=self.session.session))["session"]})
        text = head + "\n" + "\n".join(self._turn_toml(i) for i in range(len(self.turns)))
        self._save_seq += 1
        return Snapshot(path, text, self._save_seq)

    def write(self, snap: Snapshot) -> bool:
        """Write a snapshot unless a newer one is already on disk (safe from any thread).

        Raises OSError, or UserError when another process writes the file or it changed on disk.
        """
        with self._lock:
            if self._closed or snap.seq <= self._written_seq:
                return False
            backup = write_session_text(snap.path, snap.text)  # locked; refused when the file changed on disk
            self._written_seq = snap.seq
            if backup is not None:
                self.comments_backup = backup
        return True

    def save_failure(self, error: BaseException | None) -> str:
        """What the console says when an autosave failed: why, and that the turns are kept."""
        if not isinstance(error, OSError):  # another console writes the file, or it changed on disk
            return f"Could not save the session: {error}. Your turns are still here; try ctrl+s."
        count = len(self.turns)
        kept = "The turn is kept here" if count == 1 else f"The {count} turns are kept here"
        them = "it" if count == 1 else "them"
        return f"Could not save {self.path} ({error.strerror or error}). {kept} and saved again with the next change; ctrl+s saves {them} under another name."

    def save_now(self) -> None:
        """Write the whole session synchronously (quit, save as); raises OSError or UserError
        (another process writes the file, or it changed on disk)."""
        if not self.turns and self.session.path is None:
            return
        # the snapshot's text, byte for byte dumps_session's, reuses each unchanged turn's TOML: the
        # whole-session format took 0.55 s of the UI thread at 5,000 turns (save as, switching files)
        self.write_now(self.snapshot())

    def write_now(self, snap: Snapshot) -> None:
        """Write a snapshot (save as, quit, before the review queue reads the folder), even after
        `close`; raises as `write`. Safe from any thread: when a snapshot as new or newer is already
        on disk (or the session was switched since), this one is dropped."""
        with self._lock:
            if snap.seq <= self._written_seq:
                return
            backup = write_session_text(snap.path, snap.text)
            self._written_seq = snap.seq
            if backup is not None:
                self.comments_backup = backup

    def save_as_target(self, value: str) -> Path:
        """Where "save as <value>" writes: a bare name goes to the sessions folder; never an existing file."""
        value = value.strip()
        if not value:
            raise UserError("Give a name or a path ending in .toml.")
        target = typed_path(value)
        if target.suffix != ".toml":
            target = target.with_name(target.name + ".toml")
        if not target.is_absolute() and len(target.parts) == 1:
            target = self.sessions_dir / target
        if is_live_file(target):
            raise UserError(f"{target.name} is the name of a live file the MCP server records (mcp-YYYY-MM-DD.toml); choose another name (nothing was written).")
        current = self.session.path
        if target.exists() and (current is None or target.resolve() != current.resolve()):
            raise UserError(f"{target} already exists; choose another name (nothing was overwritten).")
        return target

    def save_as(self, value: str) -> Path:
        """Save under a new name; later turns go there. Raises UserError or OSError (path unchanged)."""
        target = self.save_as_target(value)
        old = self.session.path
        same = old is not None and target.resolve() == old.resolve()
        self.session.path = target
        try:
            self.save_now()
        except (OSError, UserError):
            if not same:
                release_session_file(target)
            self.session.path = old
            raise
        if old is not None and not same:
            release_session_file(old)  # further turns go to the new file only
        return target

    def close(self) -> None:
        """The console is leaving (after its last save): let the session file go and remove its lock
        file; writes still in flight are dropped instead of claiming the file again."""
        with self._lock:
            self._closed = True
        release_session_file(self.session.path)

    # -- switching sessions ------------------------------------------------------------------
    def new_session(
        self, catalog: str | None = None, backend: str | None = None, model: str | None = None, session_id: str | None = None
    ) -> Session:
        return Session(session=SessionInfo(id=session_id or new_session_id(), created=self.now_iso(), catalog=catalog, backend=backend, model=model))

    def switch(self, session: Session) -> None:
        """Continue another session (the caller saved this one first); this one's file is released."""
        if self.fallback_turn is not None:
            raise UserError("A fallback command is running for this session: wait for it or cancel it (c) first.")
        old = self.session.path
        self.session = session
        if old is not None and (session.path is None or old.resolve() != session.path.resolve()):
            release_session_file(old)
        with self._text_lock:
            self._turn_text.clear()
            self._epoch += 1
        # the sequence goes on: an autosave of the old session still in flight is stale (it would
        # write an older text and claim the released file again)
        with self._lock:
            self._written_seq = self._save_seq
