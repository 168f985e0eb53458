"""The first pass of an eval over session files: read each file once, one at a time, check its
labelled turns against the catalog, and write the turns to route into a spool (spool.py).

What it finds is what `evaluate.run_eval` finds over sessions loaded all at once (the same checks,
refusals and stderr lines, from the same functions), but it holds one file at a time: the turns
are on disk, and what it keeps in memory is a few facts per file and the problem turns. A turn two
files hold (session.repeated_turns) is only known once every file is read, so findings are tagged
with the turn's case id and those of repeated turns dropped at the end.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .evaluate import (
    CatalogGaps,
    EvalError,
    LabelledCase,
    SkippedCase,
    UnreadTurn,
    _aliased,
    _expected_arguments_problems,
    blank_error,
    label_aliases,
    label_problems,
    labels_error,
    none_alias_notes,
    nothing_to_measure,
    other_catalog_error,
    other_catalog_note,
    unread_lines_of,
)
from .gcpause import gc_paused
from .session import copy_note, is_live_file, iter_session_files, load_session
from .spool import RepeatIndex, Spool
from .textsafe import is_blank

if TYPE_CHECKING:
    from .catalog import Catalog
    from .session import Session, Turn

CASE, DECLINED = "c", "d"


@dataclass
class EvalPlan:
    """What the first pass found: the spool of turns to route and what the report says besides."""

    spool: Spool
    files: list[str]
    excluded: frozenset[int]  # case ids of turns another file holds too (left out)
    kept: int  # labelled turns routed and scored
    gaps: CatalogGaps
    invalid: list[UnreadTurn]
    ignored_fields: list[UnreadTurn]
    copies: list[str]
    catalog_lines: list[str]
    digest: str  # of every routed turn, in order: what the shards' results belong to

    def skip(self, item: dict) -> bool:
        return item["k"] == CASE and item["c"] in self.excluded


def _turn_item(kind: str, case_id: int, source: str, index: int, turn: Turn) -> dict:
    data = {"message": turn.message}
    for name in ("label", "acceptable", "tags", "not_this", "expected_arguments"):
        value = getattr(turn, name)
        if value:
            data[name] = value
    return {"k": kind, "c": case_id, "s": source, "i": index, "t": data}


def item_case(item: dict) -> LabelledCase:
    from .session import Turn

    return LabelledCase(source=item["s"], index=item["i"], turn=Turn.model_validate(item["t"]))


@dataclass
class _Found:
    """Findings tagged with the case id they come from (dropped if that case is repeated)."""

    other_catalog: list[tuple[str, str]] = field(default_factory=list)  # (path, named catalog)
    alias_notes: list[str] = field(default_factory=list)
    blank: list[tuple[int, LabelledCase]] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)
    argument_problems: list[tuple[int, str]] = field(default_factory=list)
    skipped: list[tuple[int, SkippedCase]] = field(default_factory=list)
    acceptable: list[tuple[int, str]] = field(default_factory=list)
    arguments: list[tuple[int, str]] = field(default_factory=list)
    no_expected: list[tuple[int, tuple[str, int]]] = field(default_factory=list)
    heads: list[str] = field(default_factory=list)
    invalid: list[UnreadTurn] = field(default_factory=list)
    fields: list[UnreadTurn] = field(default_factory=list)
    empty: list[str] = field(default_factory=list)
    extra: set[str] = field(default_factory=set)
    copies: list[str] = field(default_factory=list)
    cases: int = 0  # labelled turns (after the source filter) not in a file that copies another


def plan_eval(
    paths: Sequence[str | Path],
    catalog: Catalog,
    workdir: Path,
    *,
    label_sources: Iterable[str] | None = None,
    strict: bool = True,
) -> EvalPlan:
    """Read every session file once and write the spool in `workdir`; raise what run_eval raises."""
    sources = set(label_sources) if label_sources is not None else None
    files = iter_session_files(list(paths))
    if not files:
        raise EvalError(f"no session files in {', '.join(str(p) for p in paths)}")
    workdir.mkdir(parents=True, exist_ok=True)
    spool = Spool(workdir / "turns.jsonl")
    repeats = RepeatIndex(workdir / "repeats.sqlite")
    found = _Found()
    first_copy: dict[bytes, Path] = {}
    copy_untimed: set[int] = set()  # case ids of turns without a time in a file that copies another
    digest = hashlib.sha256()
    case_id = 0
    try:
        with gc_paused():  # gcpause.py: half the time of a big folder was full collections
            for number, file in enumerate(files):
                session = load_session(file, lenient=not strict)
                path = str(session.path)
                tags: dict[int, int] = {}
                aliases = {} if strict else label_aliases(session, catalog)
                _file_facts(session, catalog, strict, found)
                copy_of = _copied(session, first_copy, found)
                cases = []
                for index, turn in enumerate(session.turns):
                    if turn.label and (sources is None or (turn.label_source or "hand") in sources):
                        tags[index] = case_id
                        cases.append((case_id, LabelledCase(source=path, index=index, turn=_aliased(turn, aliases))))
                        if copy_of and turn.at is None:
                            copy_untimed.add(case_id)
                        case_id += 1
                repeats.add_file(number, session.turns, is_live_file(session.path or Path(session.id)), tags)
                for cid, case in cases:
                    if cid in copy_untimed:
                        continue  # counts once, from the file it copies (session.copied_files)
                    found.cases += 1
                    if _check_case(cid, case, catalog, strict, found):
                        item = _turn_item(CASE, cid, path, case.index, case.turn)
                        spool.write(item)
                        digest.update(json.dumps(item, ensure_ascii=False).encode("utf-8"))
                for index, turn in enumerate(session.turns):  # declined options of unlabelled turns ("not this")
                    if turn.not_this and not turn.label:
                        item = _turn_item(DECLINED, -1, path, index, turn)
                        spool.write(item)
                        digest.update(json.dumps(item, ensure_ascii=False).encode("utf-8"))
                del session, cases
        repeated = frozenset(tag for _, _, tag in repeats.repeated() if tag >= 0)
        excluded = repeated | frozenset(copy_untimed)
    finally:
        spool.close()
        repeats.close()
    digest.update(json.dumps(sorted(excluded)).encode())
    return _finish(spool, [str(f) for f in files], excluded, len(repeated - copy_untimed), found, catalog, strict, label_sources, digest.hexdigest())


def _file_facts(session: Session, catalog: Catalog, strict: bool, found: _Found) -> None:
    named = session.session.catalog
    if named and named != catalog.name:
        found.other_catalog.append((str(session.path), named))
    if not strict:
        found.alias_notes += none_alias_notes([session], catalog)
    path = str(session.path)
    found.heads += [problems[0] for index, problems in session.unread if index < 0]
    found.invalid += [UnreadTurn(source=path, index=i, problems=p) for i, p in session.unread if i >= 0]
    found.fields += [UnreadTurn(source=path, index=i, problems=p) for i, p in session.ignored]
    found.empty += [f"{Path(path).name} turns[{i}]" for i, t in enumerate(session.turns) if t.label == ""]
    found.extra |= {k for t in session.turns for k in (t.model_extra or {})}


def _copied(session: Session, first: dict[bytes, Path], found: _Found) -> bool:
    """session.copied_files for one more file: True when its whole turn list is an earlier file's
    (then its turns without a time count once, from that file)."""
    if not session.turns:
        return False
    path = session.path or Path(session.id)
    key = repr(tuple((t.message, t.label, tuple(t.acceptable), t.at) for t in session.turns))
    digest = hashlib.sha256(key.encode("utf-8", errors="surrogatepass")).digest()
    original = first.setdefault(digest, path)
    if original != path and any(t.at is None for t in session.turns):
        found.copies.append(copy_note(path, original))
        return True
    return False


def _check_case(cid: int, case: LabelledCase, catalog: Catalog, strict: bool, found: _Found) -> bool:
    """check_cases for one case (skip_blank, as eval): True when it is routed."""
    if is_blank(case.turn.message):
        found.blank.append((cid, case))
        return False
    gaps = CatalogGaps()
    found.problems += [(cid, line) for line in label_problems(case, catalog, gaps, strict)]
    found.skipped += [(cid, s) for s in gaps.skipped]
    found.acceptable += [(cid, a) for a, k in gaps.acceptable.items() for _ in range(k)]
    if gaps.skipped:
        return False
    for _, line in _expected_arguments_problems([case], catalog):
        if strict:
            found.argument_problems.append((cid, line))
        else:  # a schema changed since (a property renamed): the turn is still routed and scored
            found.arguments.append((cid, line))
            found.no_expected.append((cid, (case.source, case.index)))
            case.turn.expected_arguments = None
    return True


def _finish(
    spool: Spool, files: list[str], excluded: frozenset[int], repeated: int, found: _Found, catalog: Catalog, strict: bool,
    label_sources: Iterable[str] | None, digest: str,
) -> EvalPlan:
    """The refusals and notes of run_eval, in its order, over the turns not repeated elsewhere."""

    def live(pairs):
        return [x for cid, x in pairs if cid not in excluded]

    if strict and found.other_catalog:
        raise other_catalog_error(*found.other_catalog[0], catalog)
    blank = live(found.blank)
    if blank and strict:
        raise blank_error(blank[0], len(blank))
    problems = live(found.problems) + live(found.argument_problems)
    if problems:
        raise labels_error(problems, catalog)
    gaps = CatalogGaps(skipped=live(found.skipped), arguments=live(found.arguments), no_expected=set(live(found.no_expected)))
    gaps.blank = [SkippedCase(source=c.source, index=c.index, label=c.turn.label or "") for c in blank]
    for value in live(found.acceptable):
        gaps.acceptable[value] = gaps.acceptable.get(value, 0) + 1
    if not strict:
        gaps.notes = [other_catalog_note(path, named, catalog) for path, named in found.other_catalog] + found.alias_notes
    cases = found.cases - repeated
    kept = cases - len(gaps.blank) - len(gaps.skipped)
    if not kept:
        raise nothing_to_measure(
            label_sources, files, catalog, cases=cases, gaps=gaps, invalid=found.invalid, fields=found.fields, extra=found.extra
        )
    return EvalPlan(
        spool=spool,
        files=files,
        excluded=excluded,
        kept=kept,
        gaps=gaps,
        invalid=found.invalid,
        ignored_fields=found.fields,
        copies=found.copies,
        catalog_lines=unread_lines_of(found.heads, found.invalid, found.empty, found.fields) + gaps.lines(catalog),
        digest=digest,
    )
