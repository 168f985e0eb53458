"""Sessions: every turn the console routed, which doubles as a labelled eval set.

Files are TOML (tomllib / tomli-w), written atomically (temp file in the same folder + fsync +
os.replace) so a crash never leaves half a file, and diff-friendly: None, empty and default
values are left out and key order is kept. A file that cannot be read is reported, never
overwritten.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
import tempfile
import tomllib
from collections.abc import Sequence
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, field_validator

from . import tomlio
from .errors import SessionError, did_you_mean
from .textsafe import bounded_name

FORMAT_VERSION = 1

Outcome = Literal["proposed", "approved", "declined", "rerouted", "escalated", "fallback_done", "pending"]
# Where a label came from: an approved or re-routed confirm, the review queue, or a person by hand
# (console keys or a hand-written file; a label without a source counts as "hand").
LabelSource = Literal["confirm", "review", "hand"]


def _stamp_text(value: Any) -> Any:
    """A TOML date-time literal (`at = 2026-11-30T10:04:20Z`, unquoted) as the text the writer uses:
    a person writing a file by hand may use TOML's own type, and it must not sink the file."""
    if isinstance(value, datetime):
        if value.tzinfo is not None and value.utcoffset() == UTC.utcoffset(None):
            return value.strftime("%Y-%m-%dT%H:%M:%S") + (f".{value.microsecond:06d}" if value.microsecond else "") + "Z"
        return value.isoformat()
    if isinstance(value, (date, time)):
        return value.isoformat()
    return value


Stamp = Annotated[str, BeforeValidator(_stamp_text)]


def _one_is_a_list(value: Any) -> Any:
    """`tags = "notify"` / `acceptable = "send_sms"`: one value written alone, as an author of a
    labelled set may, is the list of it (it refused the whole file)."""
    return [value] if isinstance(value, str) else value


def _tag_texts(value: Any) -> Any:
    """Tags as text: a number or a boolean (`tags = [2024, true]`) is the tag its TOML spelling reads."""
    value = _one_is_a_list(value)
    if isinstance(value, list):
        return [("true" if item else "false") if isinstance(item, bool) else str(item) if isinstance(item, (int, float)) else item for item in value]
    return value


OneOrMore = Annotated[list[str], BeforeValidator(_one_is_a_list)]
Tags = Annotated[list[str], BeforeValidator(_tag_texts)]


class _Record(BaseModel):
    # extra="allow": keys a newer version or a person added survive a load/save round trip.
    model_config = ConfigDict(extra="allow")


def _clean_model(value: str | None) -> str | None:
    """A model name as a session keeps it: a server's name (or one in a file an older version wrote)
    may be any length and hold control characters; the file stores it bounded and clean. Nothing
    left (control characters alone, or "") is no name: None, as the file reads back."""
    return None if value is None else bounded_name(value) or None


class OutcomeStep(_Record):
    """One earlier outcome of a turn (e.g. declined, before the fallback took it)."""

    outcome: Outcome
    rerouted_to: str | None = None
    at: Stamp | None = None


class TurnDecision(_Record):
    candidates: list[str] = []
    scores: dict[str, float] = {}
    choice: str | None = None
    probabilities: dict[str, float] = {}
    confidence: float | None = None
    reported_confidence: float | None = None
    band: Literal["high", "medium", "low", "unresolved"] = "unresolved"
    action: Literal["execute", "confirm", "escalate", "fallback"] = "fallback"
    outcome: Outcome = "pending"
    rerouted_to: str | None = None
    history: list[OutcomeStep] = []  # earlier outcomes, oldest first; `outcome` is the latest
    error: str = ""
    caution: str | None = None  # the router's note that the message claims authority or names a tool
    latency_ms: float | None = None
    model: str | None = None
    backend: str | None = None
    retrieval: str | None = None
    path: str | None = None
    stage_category: str | None = None
    high: float | None = None  # thresholds that decided the band
    medium: float | None = None

    @field_validator("model")
    @classmethod
    def _bounded_model(cls, value: str | None) -> str | None:
        return _clean_model(value)


class FallbackRecord(_Record):
    command: list[str] = []
    exit_code: int | None = None
    output: str = ""
    stderr: str = ""
    error: str = ""
    duration_ms: float | None = None
    truncated: bool = False
    output_cap: int | None = None  # with truncated: the cap the output was cut at, in bytes
    at: Stamp | None = None

    def cut_note(self) -> str:
        """What the console shows beside output that was cut ("" when it was not); a file written
        before `output_cap` was recorded gets the cap's name and unit without the number."""
        if not self.truncated:
            return ""
        return f"output cut at the {self.output_cap:,}-byte output_cap" if self.output_cap else "output cut at the output_cap (bytes)"


class ArgumentsRecord(_Record):
    """[turns.arguments]: what the arguments step built for the routed tool (arguments.py)."""

    tool: str | None = None
    values: dict[str, Any] = {}
    valid: bool = False
    errors: list[str] = []  # "path: reason", one per validation problem
    source: Literal["command", "extractor"] = "extractor"
    error: str = ""  # why the command gave no arguments
    duration_ms: float | None = None
    demoted: bool = False  # an execute became a confirm because of them
    at: Stamp | None = None


class Turn(_Record):
    message: str
    label: str | None = None
    label_source: LabelSource | None = None
    reviewer: str | None = None
    not_this: list[str] = []  # options a person declined for this turn ("not this")
    acceptable: OneOrMore = []
    tags: Tags = []
    at: Stamp | None = None
    decision: TurnDecision | None = None
    fallback: FallbackRecord | None = None
    arguments: ArgumentsRecord | None = None
    expected_arguments: dict[str, Any] | None = None  # the label for the arguments (every key must match)


class SessionInfo(_Record):
    id: str
    catalog: str | None = None
    created: Stamp | None = None
    backend: str | None = None
    model: str | None = None
    # true only in the MCP server's live files (live.py): what tells them from a file merely named like one
    live: bool | None = None
    version: int = FORMAT_VERSION

    @field_validator("model")
    @classmethod
    def _bounded_model(cls, value: str | None) -> str | None:
        return _clean_model(value)


class Session(BaseModel):
    session: SessionInfo
    turns: list[Turn] = []
    path: Path | None = None
    # parse_session(lenient=True): (turn index, its problems) for each turn that did not read; the
    # turn is an empty unlabelled placeholder in `turns`, so every other index stays the file's
    unread: list[tuple[int, list[str]]] = []
    # parse_session(lenient=True): (turn index, its problems) for each turn read without the fields
    # (_IGNORABLE) that alone did not validate
    ignored: list[tuple[int, list[str]]] = []

    @property
    def id(self) -> str:
        return self.session.id

    def labelled(self) -> list[Turn]:
        return [t for t in self.turns if t.label]


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_session_id(suffix: str = "") -> str:
    """Time, then the suffix, then 6 random hex digits: two consoles started in one second never collide."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M-%S")
    clean = re.sub(r"[^a-z0-9-]+", "-", suffix.lower()).strip("-")
    return "-".join(part for part in (stamp, clean, secrets.token_hex(3)) if part)


def new_session(catalog: str, backend: str | None = None, model: str | None = None, suffix: str = "") -> Session:
    return Session(session=SessionInfo(id=new_session_id(suffix), catalog=catalog, created=now_iso(), backend=backend, model=model))


_KNOWN = {
    "session": set(SessionInfo.model_fields),
    "turn": set(Turn.model_fields),
    "decision": set(TurnDecision.model_fields),
    "fallback": set(FallbackRecord.model_fields),
    "arguments": set(ArgumentsRecord.model_fields),
}


# How close an unknown key must be to a known one to be called a typo. difflib's usual 0.6 refused
# keys a person or a newer version adds on purpose (`notes` "did you mean 'not_this'", `date` 'at',
# `source` 'label_source', `expected` 'expected_arguments'), though unknown keys are promised to be
# kept; 0.75 still catches `lable`, `tgas`, `mesage`, `acceptible`, `decsion`, `reviwer`.
TYPO_CUTOFF = 0.75


def _near_miss_keys(raw: dict[str, Any], kind: str, where: str) -> list[str]:
    """Unknown keys that look like typos of known ones are errors; others are kept as extras."""
    problems = []
    for key in raw:
        if key not in _KNOWN[kind]:
            hint = did_you_mean(key, _KNOWN[kind], cutoff=TYPO_CUTOFF)
            if hint:
                problems.append(f"{where}: unknown key '{key}'{hint}")
    return problems


def is_catalog_shaped(data: dict[str, Any]) -> bool:
    """A catalog's top level ([[tools]]) with nothing of a session's: read as a session it would be
    an empty one, and the first turn saved into it would replace the catalog."""
    return "tools" in data and "session" not in data and "turns" not in data


# Turn fields a lenient read (eval) may drop when they alone do not validate: what the router
# recorded and what a person noted beside the label (without expected_arguments, the turn's
# argument match is not scored; without label_source, the label counts as "hand").
_IGNORABLE = {"label_source", "reviewer", "not_this", "tags", "at", "decision", "fallback", "arguments", "expected_arguments"}


def _turn_problem(where: str, err: Any) -> str:
    field = ".".join(str(p) for p in err["loc"])
    msg = "is required" if err["type"] == "missing" else err["msg"].replace("Input should be", "must be")
    return f"{where}: field '{field}' {msg}"


def parse_session(data: dict[str, Any], source: str = "<session>", *, lenient: bool = False) -> Session:
    """lenient (eval without --strict, which only reads): a turn that does not validate (a label that
    is a number, no message, a misspelt key) is left out, its problems in Session.unread, instead of
    refusing the whole file; a [session] field that does not validate is left out of it."""
    problems: list[str] = []
    unread: list[tuple[int, list[str]]] = []
    ignored: list[tuple[int, list[str]]] = []
    if is_catalog_shaped(data):
        raise SessionError(f"{source}: this is a catalog file ([[tools]]), not a session file; pass it with --catalog")
    for key in data:
        if key not in ("session", "turns"):
            # `[[turn]]` for `[[turns]]`: its turns were read as nothing at all, and eval measured the
            # file without them, silently (a key further off is kept, as keys a person adds are)
            hint = did_you_mean(key, ("session", "turns"), cutoff=TYPO_CUTOFF)
            if hint:
                raise SessionError(f"{source}: unknown top-level key '{key}'{hint}; nothing under it would be read")
    head = data.get("session")
    if head is None:
        head = {"id": Path(source).stem}
    if not isinstance(head, dict):
        raise SessionError(f"{source}: [session] must be a table")
    head_problems = _near_miss_keys(head, "session", f"{source}: [session]")
    bad: set[Any] = set()
    try:
        info = SessionInfo.model_validate({"id": Path(source).stem, **head})
    except ValidationError as exc:
        info = SessionInfo(id=Path(source).stem)
        bad = {e["loc"][0] for e in exc.errors() if e["loc"]}
        head_problems += [f"{source}: [session] field '{'.'.join(map(str, e['loc']))}' {e['msg'].replace('Input should be', 'must be')}" for e in exc.errors()]
    if head_problems and lenient:
        with contextlib.suppress(ValidationError):  # the rest of [session] (its catalog, its id) still holds
            info = SessionInfo.model_validate({"id": Path(source).stem, **{k: v for k, v in head.items() if k not in bad}})
        unread.append((-1, head_problems))
    elif head_problems:
        problems += head_problems
    raw_turns = data.get("turns", [])
    if not isinstance(raw_turns, list):
        raise SessionError(f"{source}: 'turns' must be an array of tables ([[turns]])")
    turns: list[Turn] = []
    for index, raw in enumerate(raw_turns):
        where = f"{source}: turns[{index}]"
        found: list[str] = []
        turn: Turn | None = None
        if not isinstance(raw, dict):
            found.append(f"{where}: must be a table")
        else:
            found += _near_miss_keys(raw, "turn", where)
            for sub in ("decision", "fallback", "arguments"):
                if isinstance(raw.get(sub), dict):
                    found += _near_miss_keys(raw[sub], sub, f"{where}.{sub}")
            typos = bool(found)
            try:
                turn = Turn.model_validate(raw)
            except ValidationError as exc:
                errors = exc.errors()
                found += [_turn_problem(where, err) for err in errors]
                fields = {err["loc"][0] for err in errors if err["loc"]}
                if lenient and not typos and len(fields) == len(errors) and fields <= _IGNORABLE:
                    # only what the router did or a person noted is wrong (label_source = "manual",
                    # reviewer = 5): the message and label are sound, so the turn is measured without them
                    with contextlib.suppress(ValidationError):
                        turn = Turn.model_validate({k: v for k, v in raw.items() if k not in fields})
                        ignored.append((index, found))
                        turns.append(turn)
                        continue
                    turn = None
        if found and lenient:
            unread.append((index, found))
            turns.append(Turn(message=""))  # a placeholder: the indexes of the turns after it stay the file's
        elif found:
            problems += found
        elif turn is not None:
            turns.append(turn)
    if problems:
        raise SessionError(f"{source}: {len(problems)} problem(s) in the session file", problems)
    return Session(session=info, turns=turns, path=Path(source) if source != "<session>" else None, unread=unread, ignored=ignored)


def load_session(path: str | Path, *, lenient: bool = False) -> Session:
    path = Path(path)
    return parse_session(tomlio.read_toml_file(path, "session", SessionError, untouched=True), str(path), lenient=lenient)


def _compact(value: Any) -> Any:
    """Drop None, empty and False-default values so files stay short and diff-friendly."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            item = _compact(item)
            if item is None or item == "" or item == [] or item == {}:
                continue
            out[key] = item
        return out
    if isinstance(value, list):
        return [_compact(v) for v in value]
    if isinstance(value, float):
        return round(value, 6)
    return value


def session_to_dict(session: Session) -> dict[str, Any]:
    turns = []
    for turn in session.turns:
        data = turn.model_dump(mode="json", exclude_defaults=True)
        data["message"] = turn.message
        if turn.decision is not None:
            decision = turn.decision.model_dump(mode="json", exclude_none=True)
            decision.pop("truncated", None)
            data["decision"] = decision
        if turn.fallback is not None:
            data["fallback"] = turn.fallback.model_dump(mode="json", exclude_defaults=True)
        if turn.arguments is not None:
            # valid = false and the source are information here, so keep them (exclude_defaults drops them)
            record = turn.arguments.model_dump(mode="json", exclude_defaults=True)
            data["arguments"] = {"valid": turn.arguments.valid, "source": turn.arguments.source, **record}
        turns.append({"message": data.pop("message"), **data})
    head = session.session.model_dump(mode="json", exclude_none=True)
    data = _compact({"session": head, "turns": turns})
    # the message is required even when empty (_compact drops empty strings): else the reader refuses the file
    data["turns"] = [{"message": raw["message"], **kept} for raw, kept in zip(turns, data.get("turns", []), strict=True)]
    return data


def dumps_session(session: Session) -> str:
    return tomlio.dumps(session_to_dict(session))


def atomic_write_text(path: Path, text: str) -> None:
    """Write via a temp file in the same folder, fsync, then os.replace: never half a file. Lone
    surrogates are written as U+FFFD (tomlio.replace_surrogates) instead of failing the write."""
    text = tomlio.replace_surrogates(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(OSError):  # a rewrite keeps the file's mode (mkstemp makes 0600)
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def create_text_file(path: Path, text: str) -> None:
    """Write a file that must not exist yet: the whole text goes to a temp file beside it first, then
    takes the name only if it is still free (a hard link fails with FileExistsError). A write that
    fails (disk full, file-size limit) leaves nothing under the name, not half a file."""
    text = tomlio.replace_surrogates(text)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)  # the umask applies, as for open()
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, path)
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
                raise
            # no hard links here (FAT, some network mounts): claim the name, then move the text onto it
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666))
            os.replace(tmp, path)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def save_session(session: Session, path: str | Path | None = None) -> Path:
    target = Path(path) if path is not None else session.path
    if target is None:
        raise SessionError("the session has no file name yet")
    try:
        atomic_write_text(target, dumps_session(session))
    except OSError as exc:
        raise SessionError(f"{target}: cannot save the session ({exc.strerror or exc}); nothing was overwritten") from None
    session.path = target
    return target


def unused_path(folder: Path, stem: str) -> Path:
    """sessions/<stem>.toml, or <stem>-2.toml ... when that name is taken."""
    candidate = folder / f"{stem}.toml"
    n = 2
    while candidate.exists():
        candidate = folder / f"{stem}-{n}.toml"
        n += 1
    return candidate


_TOOLS_TABLE = re.compile(r"^[ \t]*\[\[[ \t]*tools[ \t]*\]\]", re.MULTILINE)
_SESSION_PARTS = re.compile(r"^[ \t]*(?:\[[ \t]*session[ \t]*\]|\[\[[ \t]*turns[ \t]*\]\]|turns[ \t]*=|session[ \t]*=)", re.MULTILINE)


def looks_like_catalog_file(path: Path) -> bool:  # also used by decide/local.load_exemplars for its globs
    """A file in a scanned folder that is plainly a catalog ([[tools]] and no session part); anything
    else, unreadable files included, is left to the session reader to accept or refuse in a sentence."""
    try:
        with path.open("rb") as handle:
            text = handle.read(4 * 1024 * 1024).decode("utf-8", errors="replace")
    except OSError:
        return False
    return bool(_TOOLS_TABLE.search(text)) and not _SESSION_PARTS.search(text)


def iter_session_files(paths: list[str | Path]) -> list[Path]:
    """Session files named directly or found (recursively) in folders, in a stable order.

    A file named twice (`eval sessions/ sessions/monday.toml`) is kept once, where first named:
    eval and calibrate would otherwise count each of its turns twice."""
    found: list[Path] = []
    for item in paths:
        path = Path(item)
        if path.is_dir():  # catalogs kept beside their cases are not sessions: left out of a folder
            found.extend(sorted(p for p in path.rglob("*.toml") if p.is_file() and not looks_like_catalog_file(p)))
        elif path.exists() or path.is_symlink():  # a dangling link or a loop: the reader says which
            found.append(path)
        else:
            raise SessionError(f"{path}: no such session file or folder")
    seen: set[str] = set()
    unique = []
    for p in found:
        key = _same_file_key(p)
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique


def _same_file_key(path: Path) -> str:
    try:
        return str(path.resolve())
    except (OSError, RuntimeError):  # a symlink loop: its own spelling (the reader reports it)
        return os.path.abspath(path)


# The MCP server's live files (live.py): `mcp-YYYY-MM-DD.toml`, then `-2`, `-3`, ... the same day.
LIVE_FILE_NAME = re.compile(r"^mcp-(\d{4}-\d{2}-\d{2})(?:-(\d+))?\.toml$")
_FIRST_ARRAY_TABLE = re.compile(r"^[ \t]*\[\[", re.MULTILINE)
_HEAD_BYTES = 64 * 1024  # the server writes [session] first, a few hundred bytes


def _is_live_head(name: re.Match[str], stem: str, head: Any) -> bool:
    """What the server wrote in [session]: `live = true` (this version), or, in a file an older
    version wrote, its own header: the id is the file's stem and the date of `created` is the name's."""
    if not isinstance(head, dict):
        return False
    if "live" in head:
        return head["live"] is True
    created = _stamp_text(head.get("created"))
    return head.get("id") == stem and isinstance(created, str) and created.startswith(name.group(1))


def is_live_file(path: str | Path) -> bool:
    """A session file the MCP server records (the server may have stopped): named `mcp-YYYY-MM-DD[-N].toml`
    AND marked so in its [session] (`_is_live_head`); a file a person merely named so is an ordinary one.
    An empty file so named is one the server has reserved and not written yet; a missing or
    unreadable one is not live (the reader, or the writer, says what is wrong with it)."""
    path = Path(path)
    name = LIVE_FILE_NAME.match(path.name)
    if not name:
        return False
    try:
        with path.open("rb") as handle:
            data = handle.read(4096)  # a console following a folder asks every half second: read little
            if b"[[" not in data:
                data += handle.read(_HEAD_BYTES - len(data))
    except OSError:
        return False
    if not data:
        return True
    text = data.decode("utf-8", errors="replace")
    turns = _FIRST_ARRAY_TABLE.search(text)  # only the header is parsed: a live file may hold 1 MB of turns
    try:
        head = tomllib.loads(text[: turns.start()] if turns else text).get("session")
    except tomllib.TOMLDecodeError:
        return False
    return _is_live_head(name, path.stem, head)


def copied_files(sessions: Sequence[Session]) -> list[tuple[Path, Path]]:
    """(copy, original) for each file whose whole turn list is the same as an earlier file's: the
    same messages, labels, acceptable options and times, in the same order (a hand-written eval file
    copied under another name). Its turns without a time count once, from the original; files that
    merely share some turns keep counting them (a bench may repeat a message on purpose)."""
    first: dict[tuple, Path] = {}
    pairs: list[tuple[Path, Path]] = []
    for session in sessions:
        if not session.turns:
            continue
        path = session.path or Path(session.id)
        key = tuple((t.message, t.label, tuple(t.acceptable), t.at) for t in session.turns)
        original = first.setdefault(key, path)
        if original != path and any(t.at is None for t in session.turns):
            pairs.append((path, original))  # turns with a time are matched one by one (below)
    return pairs


def copy_notes(sessions: Sequence[Session]) -> list[str]:
    """One sentence per copied file (copied_files), for stderr or a notification."""
    return [copy_note(copy, original) for copy, original in copied_files(sessions)]


def copy_note(copy: Path, original: Path) -> str:
    return f"{copy} holds the same turns as {original} (the same messages and labels, in the same order): they count once, from {original}"


def repeated_turns(sessions: list[Session]) -> set[tuple[Path, int]]:
    """(file, index) of the turns a set of session files holds twice, to be left out.

    A turn is the same turn in two files when it has the same message at the same time (the n-th
    such turn of each file; a turn without a time is never matched): a console following a live file
    copies its turns, as they are, into the console's own session (app/follow.py), and a session
    copied under another name (a backup, a colleague's copy) holds every turn again. Each such turn
    counts once, from the copy that carries a label if one does (the first in file order), else from
    a file that is not live (labels go there). A live file's turn labelled while no copy is (an older
    version wrote review labels into live files) is the one kept, so no label is lost. A file whose
    whole turn list is another's (copied_files) counts once, its turns without a time included."""
    groups: dict[tuple[str, str, int], list[tuple[bool, Path, int, Turn]]] = {}
    for session in sessions:
        path = session.path or Path(session.id)
        is_live = is_live_file(path)  # read once per file, not per turn
        seen: dict[tuple[str, str], int] = {}
        for index, turn in enumerate(session.turns):
            if turn.at is None:
                continue  # no time: nothing tells a copy from another turn with the same words
            nth = seen[(turn.message, turn.at)] = seen.get((turn.message, turn.at), 0) + 1
            groups.setdefault((turn.message, turn.at, nth), []).append((is_live, path, index, turn))
    repeated: set[tuple[Path, int]] = set()
    for members in groups.values():
        if len({path for _, path, _, _ in members}) < 2:
            continue  # one file: its own turns, however alike
        # labelled first, then not live, then file order (sorted() is stable)
        keep = sorted(members, key=lambda m: (not m[3].label, m[0]))[0]
        repeated.update((path, index) for _, path, index, _ in members if (path, index) != (keep[1], keep[2]))
    for copy, _ in copied_files(sessions):  # a whole file copied: its turns without a time too
        turns = next(s.turns for s in sessions if (s.path or Path(s.id)) == copy)
        repeated.update((copy, index) for index, turn in enumerate(turns) if turn.at is None)
    return repeated

