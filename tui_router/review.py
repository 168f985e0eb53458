"""The labelling loop, without Textual: the review queue, labels with undo, and what-if thresholds.

- The queue: every unlabelled turn of some session files, least certain first. Unresolved turns
  (and turns never routed) lead; then ascending margin between the two most probable options, the
  none option included; ties by file, then turn.
- A `Review` applies labels to those turns, each written at once to its own file (read, change the
  one turn, write atomically, so a console appending to the same file between two labels keeps its
  turns), and undoes them, several levels deep, across files.
- `what_if` re-bands recorded decisions under other thresholds, writing nothing: which turns would
  change action, and each band's accuracy before and after.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .catalog import Catalog, Risk
from .config import Config, PolicyConfig
from .errors import SessionError, UserError
from .gcpause import gc_paused
from .policy import action_of, band_of, confidence_of, margin_of
from .session import (
    LabelSource,
    Session,
    Turn,
    copy_notes,
    dumps_session,
    is_live_file,
    iter_session_files,
    load_session,
    repeated_turns,
)

# ---------------------------------------------------------------------------------------------
# The queue
# ---------------------------------------------------------------------------------------------


@dataclass
class QueueEntry:
    """One unlabelled turn waiting for a label."""

    file: Path
    index: int  # 0-based position in the file
    message: str
    choice: str | None
    band: str  # high | medium | low | unresolved
    margin: float | None  # None: unresolved or never routed
    ranked: list[str] = field(default_factory=list)  # options, most probable first

    @property
    def turn_number(self) -> int:
        """1-based, as the console shows it."""
        return self.index + 1

    @property
    def unresolved(self) -> bool:
        return self.margin is None

    def sort_key(self) -> tuple:
        # rounded: 0.45 - 0.35 and 0.5 - 0.4 are the same margin, a tie broken by file and turn
        return (0 if self.unresolved else 1, round(self.margin or 0.0, 6), str(self.file), self.index)

    def to_json(self) -> dict:
        return {
            "file": str(self.file),
            "turn": self.turn_number,
            "message": self.message,
            "choice": self.choice,
            "band": self.band,
            "margin": None if self.margin is None else round(self.margin, 6),
        }


def entry_of(path: Path, index: int, turn: Turn) -> QueueEntry:
    d = turn.decision
    if d is None:
        return QueueEntry(path, index, turn.message, None, "unresolved", None)
    ranked = [k for k, _ in sorted(d.probabilities.items(), key=lambda kv: (-kv[1], kv[0]))]
    unresolved = d.band == "unresolved" or not d.probabilities
    return QueueEntry(
        path, index, turn.message, d.choice, d.band, None if unresolved else margin_of(d.probabilities), ranked
    )


def build_queue(sessions: Iterable[Session], limit: int | None = None) -> list[QueueEntry]:
    """Unlabelled turns, least certain first (see the module docstring); a followed live file's
    turns come from the console's copy, once (session.repeated_turns)."""
    sessions = list(sessions)
    repeated = repeated_turns(sessions)
    entries = [
        entry_of(s.path or Path(s.id), i, t)
        for s in sessions
        for i, t in enumerate(s.turns)
        if not t.label and (s.path or Path(s.id), i) not in repeated
    ]
    entries.sort(key=QueueEntry.sort_key)
    return entries[:limit] if limit is not None else entries


def session_files(paths: Sequence[str | Path]) -> list[Path]:
    """The session files named or found in folders, each once; SessionError when there is none
    (or a name is neither a file nor a folder). Only names are read: quick, before anything is drawn."""
    files = list({f.resolve(): f for f in iter_session_files(list(paths))}.values())  # a file named twice counts once
    if not files:
        raise SessionError(f"no session files in {', '.join(str(p) for p in paths)}")
    return files


def load_sessions(paths: Sequence[str | Path]) -> list[Session]:
    files = session_files(paths)
    with gc_paused():  # gcpause.py: half the time of a big folder was full collections
        return [load_session(f) for f in files]


def read_sessions(
    files: Sequence[Path], progress: Callable[[int, int], None] | None = None
) -> tuple[list[Session], list[list[str]]]:
    """Every file that reads, and the lines that say why for each file that does not (left as it
    is; the console says them in one notification and queues the rest). `progress(done, total)`
    after each file."""
    sessions: list[Session] = []
    problems: list[list[str]] = []
    with gc_paused():  # gcpause.py: half the time of a big folder was full collections
        for done, file in enumerate(files, 1):
            try:
                sessions.append(load_session(file))
            except UserError as exc:
                problems.append(exc.lines())
            if progress is not None:
                progress(done, len(files))
    return sessions, problems


def reviewer_name(config: Config | None = None) -> str | None:
    """The name recorded with each label: config `reviewer`, else $USER, else the login name."""
    if config is not None and config.reviewer:
        return config.reviewer
    name = os.environ.get("USER") or os.environ.get("USERNAME")
    if name:
        return name
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry (containers): record no name rather than fail
        return None


# ---------------------------------------------------------------------------------------------
# Labels with undo
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelState:
    label: str | None
    label_source: str | None
    reviewer: str | None

    @classmethod
    def of(cls, turn: Turn) -> LabelState:
        return cls(turn.label, turn.label_source, turn.reviewer)

    def apply(self, turn: Turn) -> None:
        turn.label = self.label
        turn.label_source = self.label_source  # type: ignore[assignment]
        turn.reviewer = self.reviewer


@dataclass(frozen=True)
class LabelEdit:
    """One change of one turn's label, with what it replaced (for undo)."""

    position: int  # in the queue
    file: Path
    index: int
    before: LabelState
    after: LabelState
    backup: Path | None = None  # the copy of a hand-written file's comments this change made


def live_label_refusal(path: Path) -> str:
    import shlex

    return (
        f"{path} is a live file the MCP server records, so nothing was written to it; label its turns in a "
        f"console that follows it (tui-router open --follow {shlex.quote(str(path))}), which copies them into its own session"
    )


def write_label(path: Path, index: int, message: str, state: LabelState) -> Path | None:
    """Change one turn's label in its file, under the file's lock: claim it (a console writing it
    refuses, with a sentence), read it now, check the turn is still the one queued, set the label,
    write atomically (refused if someone changed the file since the claim), release. Nothing is
    written when the turn moved. Returns the comment backup the write made (storage.keep_comments).

    A live file is refused even when no server holds its lock (one stopped, or rotated to the next
    file): it is the server's recording, and its followed copy, where labels go, counts instead of
    it in every folder scan (session.repeated_turns), so a label written here would be hidden."""
    from .storage import SessionFile

    if is_live_file(path):
        raise SessionError(live_label_refusal(path))

    try:
        handle = SessionFile.claim(path)
    except OSError as exc:  # its folder is gone or is a file now
        raise SessionError(f"{path}: cannot write the label ({exc.strerror or exc}); the file was not changed") from None
    try:
        session = load_session(path)
        if index >= len(session.turns) or session.turns[index].message != message:
            raise SessionError(f"{path}: turn {index + 1} is no longer the queued message (the file changed); nothing was written")
        state.apply(session.turns[index])
        try:
            return handle.write(dumps_session(session))
        except OSError as exc:  # disk full, file-size limit: the write is atomic, the old file stays
            raise SessionError(f"{path}: cannot write the label ({exc.strerror or exc}); the file was not changed") from None
    finally:
        handle.release()


class Review:
    """Walk a queue, label, skip, clear and undo; every change is saved to its own file at once."""

    def __init__(
        self, sessions: Sequence[Session], reviewer: str | None = None, limit: int | None = None, own: Session | None = None
    ) -> None:
        """`own`: the console's open session, one of `sessions`: its labels change in memory only and
        the console writes them (it holds that file's lock); every other file is written here."""
        self.own = own
        self.sessions = {s.path: s for s in sessions if s.path is not None}
        self.entries = build_queue(self.sessions.values(), limit)
        self.copies = copy_notes(list(self.sessions.values()))  # the console says them, one notification each
        self.reviewer = reviewer
        self.position = 0
        self.history: list[LabelEdit] = []
        self._reviewed: int | None = None  # see `reviewed`

    @classmethod
    def of_files(cls, paths: Sequence[str | Path], reviewer: str | None = None, limit: int | None = None) -> Review:
        return cls(load_sessions(paths), reviewer, limit)

    # -- reading
    def turn(self, position: int | None = None) -> Turn:
        entry = self.entries[self.position if position is None else position]
        return self.sessions[entry.file].turns[entry.index]

    @property
    def current(self) -> QueueEntry | None:
        return self.entries[self.position] if 0 <= self.position < len(self.entries) else None

    @property
    def reviewed(self) -> int:
        # counted once, then kept by set_label and undo: the header asks after every key, and the
        # count over the 14,581 queued turns of a 50-file folder took 20 ms of the UI thread each time
        if self._reviewed is None:
            self._reviewed = sum(1 for i in range(len(self.entries)) if self.turn(i).label)
        return self._reviewed

    def _count(self, before: str | None, after: str | None) -> None:
        if self._reviewed is not None:
            self._reviewed += bool(after) - bool(before)

    @property
    def remaining(self) -> int:
        return len(self.entries) - self.reviewed

    def option(self, n: int) -> str | None:
        """The n-th most probable option (1-based) of the current turn."""
        entry = self.current
        if entry is None or not 1 <= n <= len(entry.ranked):
            return None
        return entry.ranked[n - 1]

    # -- moving
    def next(self) -> None:
        self.position = min(self.position + 1, max(len(self.entries) - 1, 0))

    def previous(self) -> None:
        self.position = max(self.position - 1, 0)

    def next_unlabelled(self) -> None:
        """After a label: the next turn still waiting, else stay at the end."""
        for position in range(self.position + 1, len(self.entries)):
            if not self.turn(position).label:
                self.position = position
                return
        self.next()

    # -- changing
    def set_label(self, option: str | None, source: LabelSource = "review") -> LabelEdit:
        entry = self.current
        if entry is None:
            raise UserError("the review queue is empty")
        turn = self.turn()
        after = LabelState(option, source if option else None, self.reviewer if option else None)
        backup = None
        if self.sessions[entry.file] is not self.own:
            backup = write_label(entry.file, entry.index, entry.message, after)
        edit = LabelEdit(self.position, entry.file, entry.index, LabelState.of(turn), after, backup)
        before = turn.label
        after.apply(turn)
        self._count(before, turn.label)
        self.history.append(edit)
        return edit

    def accept(self) -> LabelEdit | None:
        """Label with the recorded choice (the re-routed option when the operator re-routed)."""
        turn = self.turn()
        d = turn.decision
        choice = (d.rerouted_to or d.choice) if d else None
        if d is None or choice is None or d.band == "unresolved":
            return None
        return self.set_label(choice)

    def undo(self) -> LabelEdit | None:
        """Put back the label the last change replaced (in whichever file) and go to that turn."""
        if not self.history:
            return None
        edit = self.history[-1]
        if self.sessions[edit.file] is not self.own:
            write_label(edit.file, edit.index, self.entries[edit.position].message, edit.before)
        self.history.pop()
        turn = self.sessions[edit.file].turns[edit.index]
        before = turn.label
        edit.before.apply(turn)
        self._count(before, turn.label)
        self.position = edit.position
        return edit


def label_from_outcome(turn: Turn, outcome: str, rerouted_to: str | None, reviewer: str | None) -> bool:
    """An approved confirm labels the turn with its choice, a re-route with the option chosen,
    unless it already has a label; a decline records the choice as "not this". True if changed."""
    d = turn.decision
    if d is None or d.choice is None:
        return False
    if outcome == "declined":
        if d.choice in turn.not_this:
            return False
        turn.not_this = [*turn.not_this, d.choice]
        return True
    target = rerouted_to if outcome == "rerouted" else d.choice if outcome == "approved" else None
    if target is None or turn.label:
        return False
    turn.label, turn.label_source, turn.reviewer = target, "confirm", reviewer
    return True


# ---------------------------------------------------------------------------------------------
# What-if thresholds
# ---------------------------------------------------------------------------------------------


def parse_what_if(text: str, policy: PolicyConfig) -> PolicyConfig:
    """"high=0.8,medium=0.5" (either or both) applied to a policy; one sentence when it is wrong."""
    from pydantic import ValidationError

    values: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in ("high", "medium"):
            raise UserError(f"--what-if: '{part}' is not high=<number> or medium=<number>")
        try:
            values[key] = float(value)
        except ValueError:
            raise UserError(f"--what-if: '{value.strip()}' is not a number") from None
    if not values:
        raise UserError('--what-if needs at least one threshold, e.g. "high=0.8,medium=0.5"')
    try:
        return PolicyConfig.model_validate({**policy.model_dump(), **values})
    except ValidationError as exc:
        reason = exc.errors()[0]["msg"].removeprefix("Value error, ")
        raise UserError(f"--what-if: {reason}") from None


@dataclass
class WhatIfRow:
    file: str
    index: int
    message: str
    label: str | None
    choice: str | None
    confidence: float | None
    before_band: str
    before_action: str
    after_band: str
    after_action: str
    correct: bool | None  # None: no label

    @property
    def changed(self) -> bool:
        return self.before_action != self.after_action or self.before_band != self.after_band

    def to_json(self) -> dict:
        return {
            "file": self.file,
            "turn": self.index + 1,
            "message": self.message,
            "label": self.label,
            "choice": self.choice,
            "confidence": None if self.confidence is None else round(self.confidence, 6),
            "before": {"band": self.before_band, "action": self.before_action},
            "after": {"band": self.after_band, "action": self.after_action},
            "correct": self.correct,
        }


BANDS = ("high", "medium", "low", "unresolved")


@dataclass
class WhatIfReport:
    rows: list[WhatIfRow]  # every turn with a recorded decision

    @property
    def changed(self) -> list[WhatIfRow]:
        return [r for r in self.rows if r.changed]

    def accuracy(self, when: str) -> dict[str, tuple[int, int]]:
        """Per band: (correct, labelled) among labelled turns, before or after."""
        out = {band: (0, 0) for band in BANDS}
        for r in self.rows:
            if r.correct is None:
                continue
            band = r.before_band if when == "before" else r.after_band
            hits, total = out[band]
            out[band] = (hits + r.correct, total + 1)
        return out

    def counts(self, when: str) -> dict[str, int]:
        key = "before_action" if when == "before" else "after_action"
        out = {a: 0 for a in ("execute", "confirm", "escalate", "fallback")}
        for r in self.rows:
            out[getattr(r, key)] += 1
        return out

    def to_json(self) -> dict:
        def acc(when: str) -> dict:
            return {b: {"correct": h, "labelled": t, "accuracy": (h / t if t else None)} for b, (h, t) in self.accuracy(when).items()}

        return {
            "turns": len(self.rows),
            "changed": [r.to_json() for r in self.changed],
            "actions": {"before": self.counts("before"), "after": self.counts("after")},
            "band_accuracy": {"before": acc("before"), "after": acc("after")},
        }

    def lines(self) -> list[str]:
        """The diff as plain lines (CLI and console notification)."""
        changed = self.changed
        if not self.rows:  # hand-written cases: no recorded decision to re-band (not "0 of 0" and an empty table)
            return ["what-if: no turn has a recorded decision to re-band (hand-written cases); route them in the console or replay them first"]
        out = [f"what-if: {len(changed)} of {len(self.rows)} routed turns would change band or action"]
        for r in changed:
            conf = "-" if r.confidence is None else f"{r.confidence:.2f}"
            mark = "" if r.correct is None else (" (right)" if r.correct else " (wrong)")
            message = r.message if len(r.message) <= 48 else r.message[:47] + "…"
            out.append(
                f"  {Path(r.file).name}:{r.index + 1}  {r.before_band}/{r.before_action} -> {r.after_band}/{r.after_action}"
                f"  conf {conf}  {r.choice or '-'}{mark}  {message!r}"
            )
        before, after = self.accuracy("before"), self.accuracy("after")
        out.append("  band accuracy (labelled turns), before -> after:")
        for band in BANDS:
            if before[band][1] or after[band][1]:
                out.append(f"    {band:<10} {_ratio(*before[band])} -> {_ratio(*after[band])}")
        return out


def _ratio(hits: int, total: int) -> str:
    return f"{hits}/{total} ({hits / total:.0%})" if total else "n/a"


def _rebanded(turn: Turn, policy: PolicyConfig, none_option: str, risk: Risk | None) -> tuple[str, str, float | None]:
    d = turn.decision
    assert d is not None
    if d.band == "unresolved" or d.choice is None:
        return "unresolved", "fallback", None
    confidence = confidence_of(d.probabilities, policy.confidence, d.reported_confidence) if d.probabilities else d.confidence
    if confidence is None:
        return "unresolved", "fallback", None
    band = band_of(confidence, policy.thresholds_for(risk))
    return band.value, action_of(band, d.choice == none_option, risk, policy).value, confidence


def what_if(sessions: Iterable[Session], before: PolicyConfig, after: PolicyConfig, catalog: Catalog | None = None) -> WhatIfReport:
    """Re-band every recorded decision under `before` and `after` (recorded confidence, or the
    policy's formula over the recorded probabilities); nothing is routed, nothing written."""
    from .evaluate import recorded_none_option

    none_option = catalog.none_option if catalog is not None else "defer_to_llm"
    sessions = list(sessions)
    repeated = repeated_turns(sessions)  # a followed live file's turns count once
    rows = []
    for session in sessions:
        for index, turn in enumerate(session.turns):
            d = turn.decision
            if d is None or (session.path or Path(session.id), index) in repeated:
                continue
            risk = catalog.risk_of(d.choice) if catalog is not None and d.choice else None
            # the none option this decision was asked with: a catalog that renamed it since made a
            # recorded "no tool fits" read as a tool, and a high one as an execute
            asked = recorded_none_option(d) or none_option
            b_band, b_action, _ = _rebanded(turn, before, asked, risk)
            a_band, a_action, conf = _rebanded(turn, after, asked, risk)
            answers = ({turn.label} | set(turn.acceptable)) if turn.label else set()
            correct = None if not turn.label else (d.band != "unresolved" and d.choice in answers)
            rows.append(
                WhatIfRow(str(session.path or session.id), index, turn.message, turn.label, d.choice, conf, b_band, b_action, a_band, a_action, correct)
            )
    return WhatIfReport(rows)


__all__ = [
    "LabelEdit",
    "QueueEntry",
    "Review",
    "WhatIfReport",
    "build_queue",
    "label_from_outcome",
    "parse_what_if",
    "reviewer_name",
    "what_if",
]
