"""What changed between two versions of a catalog, and which labelled turns it leaves behind.

`catalog diff OLD NEW` and `catalog import-mcp --update CATALOG` report tools added, removed,
renamed (an id gone and one new with the same schema and a similar text: a server renamed its
tool) and changed (when_to_use, risk, schema, title or category). A labelled turn whose label or
acceptable id names a removed tool is listed with the likely new id: the rename's target, or else
the new catalog's tool whose words are closest (said as a guess). With `--write`, turns whose tool
was renamed are relabelled (atomically, under the session-file lock); guesses never are.

Similarity is difflib's ratio over the id's words and the when_to_use words. The two bars are
hand-set and said here: RENAME_SIMILARITY (0.6, with an identical schema required as well) keeps a
description rewritten around the same words a rename, and GUESS_SIMILARITY (0.5) keeps tools that share
only the product's words ("a GitHub repository") from being offered as successors.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .catalog import Catalog, Tool
from .errors import SessionError
from .textsafe import visible

RENAME_SIMILARITY = 0.6
GUESS_SIMILARITY = 0.5
_WORD = re.compile(r"[a-z0-9]+")


def _words(tool: Tool) -> list[str]:
    return _WORD.findall(tool.id.lower().replace("_", " ")) + _WORD.findall(tool.when_to_use.lower())


def similarity(a: Tool, b: Tool) -> float:
    return difflib.SequenceMatcher(None, _words(a), _words(b), autojunk=False).ratio()


def _schema_key(tool: Tool) -> str:
    """The schema as compared for a rename: without its own title and description, which SDKs make
    from the tool's name ("create_issueArguments")."""
    schema = {k: v for k, v in (tool.input_schema or {}).items() if k not in ("title", "description", "$schema")}
    return json.dumps(schema, sort_keys=True, ensure_ascii=False)


class Renamed(BaseModel):
    old: str
    new: str
    similarity: float


class Changed(BaseModel):
    id: str
    fields: dict[str, tuple[Any, Any]]  # field -> (old, new)


class CatalogDiff(BaseModel):
    added: list[str] = []
    removed: list[str] = []
    renamed: list[Renamed] = []
    changed: list[Changed] = []
    guesses: dict[str, tuple[str, float]] = {}  # removed id -> (closest new id, similarity)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.renamed or self.changed)

    def successor(self, old_id: str) -> tuple[str | None, str]:
        """(the likely new id, how it was found: "renamed" | "guess" | "") for a removed id."""
        for item in self.renamed:
            if item.old == old_id:
                return item.new, "renamed"
        if old_id in self.guesses:
            return self.guesses[old_id][0], "guess"
        return None, ""

    def to_json(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "removed": [{"id": old, "likely": self.successor(old)[0]} for old in self.removed],
            "renamed": [item.model_dump() | {"similarity": round(item.similarity, 3)} for item in self.renamed],
            "changed": [{"id": c.id, "fields": {k: {"old": o, "new": n} for k, (o, n) in c.fields.items()}} for c in self.changed],
        }


_COMPARED = ("when_to_use", "risk", "input_schema", "title", "category")
_SHOWN = {"input_schema": "schema"}


def diff_catalogs(old: Catalog, new: Catalog) -> CatalogDiff:
    old_ids = {t.id for t in old.tools}
    new_ids = {t.id for t in new.tools}
    gone = [t for t in old.tools if t.id not in new_ids]
    came = [t for t in new.tools if t.id not in old_ids]
    pairs = sorted(
        ((similarity(a, b), a.id, b.id) for a in gone for b in came if _schema_key(a) == _schema_key(b)),
        key=lambda p: (-p[0], p[1], p[2]),
    )
    renamed: list[Renamed] = []
    used_old: set[str] = set()
    used_new: set[str] = set()
    for score, a, b in pairs:  # best pairs first, each tool in one rename at most
        if score < RENAME_SIMILARITY:
            break
        if a in used_old or b in used_new:
            continue
        renamed.append(Renamed(old=a, new=b, similarity=score))
        used_old.add(a)
        used_new.add(b)
    diff = CatalogDiff(
        added=[t.id for t in came if t.id not in used_new],
        removed=[t.id for t in gone if t.id not in used_old],
        renamed=sorted(renamed, key=lambda r: r.old),
    )
    for tool in old.tools:
        other = new.get(tool.id)
        if other is None:
            continue
        fields = {}
        for name in _COMPARED:
            before, after = getattr(tool, name), getattr(other, name)
            if before != after:
                fields[_SHOWN.get(name, name)] = (_plain(before), _plain(after))
        if fields:
            diff.changed.append(Changed(id=tool.id, fields=fields))
    for old_id in diff.removed:
        tool = old.get(old_id)
        scored = sorted(((similarity(tool, t), t.id) for t in new.tools if not t.is_escalation), key=lambda p: (-p[0], p[1]))
        if scored and scored[0][0] >= GUESS_SIMILARITY:
            diff.guesses[old_id] = (scored[0][1], scored[0][0])
    return diff


def _plain(value: Any) -> Any:
    return value.value if hasattr(value, "value") else value


def _short(text: Any, limit: int = 70) -> str:
    shown = visible(text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, sort_keys=True), single_line=True)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def format_diff(diff: CatalogDiff, old_name: str, new_name: str) -> list[str]:
    """The report a person reads: one line per tool that changed."""
    if diff.empty:
        return [f"{old_name} -> {new_name}: no tool added, removed, renamed or changed"]
    counts = f"{len(diff.added)} added, {len(diff.removed)} removed, {len(diff.renamed)} renamed, {len(diff.changed)} changed"
    lines = [f"{old_name} -> {new_name}: {counts}"]
    lines += [f"  + {tool_id}" for tool_id in diff.added]
    for old_id in diff.removed:
        likely, how = diff.successor(old_id)
        lines.append(f"  - {old_id}" + (f"  (perhaps {likely}: similar text)" if how == "guess" else ""))
    lines += [f"  ~ {r.old} -> {r.new}  (renamed: same schema, text {r.similarity:.2f} alike)" for r in diff.renamed]
    for change in diff.changed:
        for field, (before, after) in change.fields.items():
            if field == "schema":
                lines.append(f"  * {change.id}  schema changed")
            else:
                lines.append(f"  * {change.id}  {field}: {_short(before)!s} -> {_short(after)!s}")
    return lines


# ---------------------------------------------------------------- labelled turns left behind


class Orphan(BaseModel):
    """A labelled turn naming a tool that is gone."""

    path: str
    index: int  # 1-based turn number, as a person counts
    message: str
    field: str  # "label" | "acceptable"
    old: str
    likely: str | None
    how: str  # "renamed" | "guess" | ""
    live: bool = False  # a live file: listed, never written

    def line(self) -> str:
        message = _short(self.message, 60)
        head = f"{self.path} turn {self.index} \"{message}\": {self.field} {self.old}"
        if self.how == "renamed":
            return f"{head} -> {self.likely} (renamed)"
        if self.how == "guess":
            return f"{head} -> perhaps {self.likely} (a guess: similar text; relabel by hand)"
        return f"{head}: removed, no likely successor"


def orphaned_turns(diff: CatalogDiff, paths: list[str | Path]) -> list[Orphan]:
    """Every labelled turn in the session files (or folders) whose label or acceptable ids name a
    tool `diff` removed or renamed."""
    from .session import is_live_file, iter_session_files, load_session

    gone = set(diff.removed) | {r.old for r in diff.renamed}
    found: list[Orphan] = []
    if not gone:
        return found
    for path in iter_session_files(list(paths)):
        session = load_session(path)
        live = is_live_file(path)
        for index, turn in enumerate(session.turns, 1):
            for field, ids in (("label", [turn.label] if turn.label else []), ("acceptable", list(turn.acceptable))):
                for old in ids:
                    if old in gone:
                        likely, how = diff.successor(old)
                        found.append(Orphan(path=str(path), index=index, message=turn.message, field=field, old=old, likely=likely, how=how, live=live))
    return found


def relabel(orphans: list[Orphan]) -> list[tuple[str, int]]:
    """Rewrite the renamed ids in their session files (never a guess, never a live file): each file
    claimed under the session-file lock, read again under it, written atomically. (path, turns
    changed) per file written."""
    from .session import dumps_session, load_session
    from .storage import SessionFile

    by_file: dict[str, list[Orphan]] = {}
    for orphan in orphans:
        if orphan.how == "renamed" and not orphan.live:
            by_file.setdefault(orphan.path, []).append(orphan)
    written: list[tuple[str, int]] = []
    for path, items in by_file.items():
        renames = {o.old: o.likely for o in items if o.likely}
        claimed = SessionFile.claim(Path(path))
        try:
            session = load_session(path)  # under the lock: what is on disk now
            changed = 0
            for turn in session.turns:
                touched = turn.label in renames or any(a in renames for a in turn.acceptable)
                if turn.label in renames:
                    turn.label = renames[turn.label]
                turn.acceptable = [renames.get(a, a) for a in turn.acceptable]
                changed += touched
            if changed:
                try:
                    claimed.write(dumps_session(session))
                except OSError as exc:
                    raise SessionError(f"{path}: cannot write the new labels ({exc.strerror or exc}); it was not changed") from None
                written.append((path, changed))
        finally:
            claimed.release()
    return written
