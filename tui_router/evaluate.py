"""Labelled sessions as an eval set: per-turn scoring, metrics, the eval runner, the replay diff, gates.

Plain Python with no UI: `tui-router eval/replay/calibrate` and the console's replay view call these
functions. Definitions (also in docs/eval-metrics.md):

- A turn is *correct* when it is resolved (band not unresolved) and its choice is the label or one
  of the acceptable ids. An unresolved turn is a miss even if the invalid answer named the label.
- *Tool cases* are turns labelled with a tool or an escalation option; *none cases* are labelled
  with the none option. top-1 / top-1 acceptable / top-3 are over tool cases; none cases are scored
  by none precision and recall.
- *Error stage* of a turn, first match wins: `retrieval` (neither the label nor an acceptable id was
  offered; the none option is always offered), `unresolved` (the backend failed or its answer was
  invalid), `decision` (the right option was offered but another was chosen), `policy` (a tool or
  escalation label was chosen, but the band was low so the turn fell back and the pick was dropped).
  A correct turn acted on has no stage.
"""

from __future__ import annotations

import asyncio
import json
import math
import operator
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from .errors import SessionError, UserError, did_you_mean
from .gcpause import gc_paused
from .policy import Action, Band
from .route import Decision
from .session import Session, Turn, TurnDecision, iter_session_files, load_session, repeated_turns

if TYPE_CHECKING:
    from .catalog import Catalog, Tool
    from .config import ArgumentsConfig, Config
    from .route import Router

from .evalstate import RECALL_KS, RELIABILITY_BINS, STAGES, ContextSizes, state_of  # noqa: F401  (re-exported)


class EvalError(UserError):
    pass


# ---------------------------------------------------------------------------------------------
# Replay: re-route recorded turns and diff against what was recorded (the console uses this too)
# ---------------------------------------------------------------------------------------------


class ReplayRow(BaseModel):
    """One recorded turn routed again with the current catalog, backend and thresholds."""

    index: int
    message: str
    label: str | None
    acceptable: list[str]
    recorded_choice: str | None
    recorded_band: str | None  # None: the turn has no recorded decision (a hand-written case)
    recorded_probabilities: dict[str, float]
    new_choice: str | None
    new_band: str
    decision: Decision  # the new one
    choice_flipped: bool
    band_changed: bool
    changed: bool
    tv_distance: float | None  # total-variation distance between recorded and new distributions
    was_right: bool | None  # None: no label, or no recorded decision
    now_right: bool | None  # None: no label
    fixed: bool
    broken: bool
    # the label is not an option of the catalog in use (a tool removed or renamed since): the turn is
    # replayed and shown, but not scored (was_right / now_right None, never fixed or broken)
    label_in_catalog: bool = True
    recorded_in_catalog: bool = True  # the recorded choice is an option of the catalog in use


class ReplayReport(BaseModel):
    rows: list[ReplayRow]
    changed: int
    flips: int
    band_changes: int
    fixed: int
    broken: int
    mean_tv: float | None
    # label id -> turns labelled with it that are not an option of the catalog in use (not scored)
    not_in_catalog: dict[str, int] = {}

    @property
    def not_recorded(self) -> list[ReplayRow]:
        """Turns with no recorded decision (hand-written, never routed): nothing to diff."""
        return [r for r in self.rows if r.recorded_band is None]

    def summary_line(self) -> str:
        line = (
            f"{len(self.rows)} turns replayed: {self.changed} changed ({self.flips} flip{'' if self.flips == 1 else 's'}, "
            f"{self.band_changes} band change{'' if self.band_changes == 1 else 's'}), {self.fixed} fixed, {self.broken} broken against labels"
        )
        bare = self.not_recorded
        if bare:  # "0 changed" alone read as "all is well" for a hand-written set nobody routed before
            scored = [r for r in bare if r.now_right is not None]
            right = sum(bool(r.now_right) for r in scored)
            line += f"; {len(bare)} with no recorded decision to diff" + (f" ({right} of {len(scored)} labelled right now)" if scored else "")
        if self.not_in_catalog:
            line += f"; {not_in_catalog_text(self.not_in_catalog)}, not scored"
        return line

    @property
    def max_tv(self) -> float | None:
        values = [r.tv_distance for r in self.rows if r.tv_distance is not None]
        return max(values) if values else None

    def gate_metrics(self) -> dict[str, float | None]:
        n = len(self.rows)
        return {
            "turns": float(n),
            "changed": float(self.changed),
            "flips": float(self.flips),
            "band_changes": float(self.band_changes),
            "fixed": float(self.fixed),
            "broken": float(self.broken),
            "mean_tv": self.mean_tv,
            "max_tv": self.max_tv,
            "changed_rate": self.changed / n if n else None,
            "flip_rate": self.flips / n if n else None,
            "labels_not_in_catalog": float(sum(self.not_in_catalog.values())),
            "not_recorded": float(len(self.not_recorded)),
            "wrong_not_recorded": float(sum(r.now_right is False for r in self.not_recorded)),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "turns": len(self.rows),
            "changed": self.changed,
            "flips": self.flips,
            "band_changes": self.band_changes,
            "fixed": self.fixed,
            "broken": self.broken,
            "mean_tv": _round(self.mean_tv),
            "max_tv": _round(self.max_tv),
            "not_in_catalog": {"turns": sum(self.not_in_catalog.values()), "labels": dict(self.not_in_catalog)},
            "not_recorded": len(self.not_recorded),
            "wrong_not_recorded": sum(r.now_right is False for r in self.not_recorded),
            "summary": self.summary_line(),
            "rows": [
                {
                    "index": r.index,
                    "message": r.message,
                    "label": r.label,
                    "acceptable": r.acceptable,
                    "recorded_choice": r.recorded_choice,
                    "recorded_band": r.recorded_band,
                    "new_choice": r.new_choice,
                    "new_band": r.new_band,
                    "new_confidence": _round(r.decision.confidence),
                    "new_action": r.decision.action.value,
                    "new_error": r.decision.error,  # why the turn is unresolved now ("" when it is not)
                    "choice_flipped": r.choice_flipped,
                    "band_changed": r.band_changed,
                    "changed": r.changed,
                    "tv_distance": _round(r.tv_distance),
                    "was_right": r.was_right,
                    "now_right": r.now_right,
                    "fixed": r.fixed,
                    "broken": r.broken,
                    "label_in_catalog": r.label_in_catalog,
                    "recorded_in_catalog": r.recorded_in_catalog,
                }
                for r in self.rows
            ],
        }


def tv_distance(before: dict[str, float], after: dict[str, float]) -> float | None:
    """Half the L1 distance over the union of options (an option missing on one side has p = 0)."""
    if not before or not after:
        return None
    keys = set(before) | set(after)
    return 0.5 * sum(abs(before.get(k, 0.0) - after.get(k, 0.0)) for k in keys)


def _answers(label: str | None, acceptable: Iterable[str]) -> set[str]:
    return ({label} if label else set()) | set(acceptable)


def not_in_catalog_text(counts: dict[str, int]) -> str:
    """"2 turns labelled with ids not in this catalog: create_reminder (1), run_tests (1)"."""
    n = sum(counts.values())
    ids = ", ".join(f"{label} ({k})" for label, k in counts.items())
    return f"{n} turn{'' if n == 1 else 's'} labelled with {'an id' if len(counts) == 1 else 'ids'} not in this catalog: {ids}"


def recorded_none_option(decision: TurnDecision | None) -> str | None:
    """The none option a recorded decision was asked with: the one option of its distribution that
    is not among its retrieved candidates (the none option is offered in every question and never
    retrieved). None when that cannot be told (no candidates recorded, no distribution)."""
    if decision is None or not decision.candidates:
        return None
    retrieved = set(decision.candidates)
    extra = [k for k in decision.probabilities if k not in retrieved]
    return extra[0] if len(extra) == 1 else None


def none_aliases(session: Session, catalog: Catalog) -> dict[str, str]:
    """{old none option: this catalog's} when the session's recorded decisions agree on a none option
    that is no option of `catalog` (the none option was renamed since): its labels and recorded
    choices mean "no tool fits", as the new id does. Empty otherwise."""
    seen = {recorded_none_option(t.decision) for t in session.turns if t.decision is not None} - {None}
    if len(seen) != 1:
        return {}
    old = seen.pop()
    if old is None or old == catalog.none_option or old in catalog:
        return {}
    return {old: catalog.none_option}


def spelling_aliases(session: Session, catalog: Catalog) -> dict[str, str]:
    """{label as written: option id} for the labels and acceptable ids of `session` that are no option
    of `catalog` only by case or surrounding spaces (`Send_SMS`, `" send_sms "`: a hand-written
    set's slip, one option it can only mean); they were skipped as labels gone from the catalog."""
    options = [catalog.none_option, *catalog.option_ids]
    folded: dict[str, list[str]] = {}
    for option in dict.fromkeys(options):
        folded.setdefault(option.casefold(), []).append(option)
    names: dict[str, str] = {}
    for turn in session.turns:
        for value in (turn.label, *turn.acceptable):
            if not value or value in names or is_option(catalog, value):
                continue
            match = folded.get(value.strip().casefold(), [])
            if len(match) == 1:
                names[value] = match[0]
    return names


def label_aliases(session: Session, catalog: Catalog) -> dict[str, str]:
    """What a lenient read takes a session's labels as: a renamed none option (none_aliases) and a
    label spelt with other case or spaces (spelling_aliases)."""
    return {**spelling_aliases(session, catalog), **none_aliases(session, catalog)}


def is_option(catalog: Catalog, option_id: str) -> bool:
    return option_id == catalog.none_option or option_id in catalog


def replay_row(
    index: int,
    turn: Turn,
    decision: Decision,
    none_option: str,
    catalog: Catalog | None = None,
    aliases: dict[str, str] | None = None,
) -> ReplayRow:
    """Diff one recorded turn against its new decision. With `catalog`, a label that is not one of
    its options is shown as such and not scored; `aliases` (none_aliases) reads a renamed none option
    in the recorded turn as the current one."""
    names = aliases or {}
    recorded = turn.decision
    label = names.get(turn.label, turn.label) if turn.label else turn.label
    acceptable = [names.get(a, a) for a in turn.acceptable]
    label_known = not (label and catalog is not None and not is_option(catalog, label))
    answers = _answers(label, acceptable)
    new_band = decision.band.value
    new_resolved = decision.band is not Band.unresolved
    # An unresolved turn has no usable choice, whatever the invalid answer named.
    new_choice = decision.choice if new_resolved else None
    recorded_probabilities: dict[str, float] = {}
    if recorded is not None:
        rec_resolved = recorded.band != "unresolved"
        recorded_choice = (names.get(recorded.choice, recorded.choice) if recorded.choice else None) if rec_resolved else None
        recorded_band: str | None = recorded.band
        recorded_probabilities = {names.get(k, k): v for k, v in recorded.probabilities.items()}
        flipped = recorded_choice != new_choice
        band_changed = recorded.band != new_band
        tv = tv_distance(recorded_probabilities, decision.probabilities)
    else:
        recorded_choice, recorded_band, flipped, band_changed, tv = None, None, False, False, None
    scored = bool(label) and label_known
    now_right = (new_choice in answers) if scored else None
    was_right = (recorded_choice in answers) if (scored and recorded is not None) else None
    # none_option is part of the contract: a recorded choice of the none option is compared as an id like any other.
    del none_option
    return ReplayRow(
        index=index,
        message=turn.message,
        label=label,
        acceptable=acceptable,
        recorded_choice=recorded_choice,
        recorded_band=recorded_band,
        recorded_probabilities=recorded_probabilities,
        new_choice=new_choice,
        new_band=new_band,
        decision=decision,
        choice_flipped=flipped,
        band_changed=band_changed,
        changed=flipped or band_changed,
        tv_distance=tv,
        was_right=was_right,
        now_right=now_right,
        fixed=was_right is False and now_right is True,
        broken=was_right is True and now_right is False,
        label_in_catalog=label_known,
        recorded_in_catalog=not (recorded_choice and catalog is not None and not is_option(catalog, recorded_choice)),
    )


def replay_report(rows: list[ReplayRow]) -> ReplayReport:
    tvs = [r.tv_distance for r in rows if r.tv_distance is not None]
    return ReplayReport(
        rows=rows,
        changed=sum(r.changed for r in rows),
        flips=sum(r.choice_flipped for r in rows),
        band_changes=sum(r.band_changed for r in rows),
        fixed=sum(r.fixed for r in rows),
        broken=sum(r.broken for r in rows),
        mean_tv=sum(tvs) / len(tvs) if tvs else None,
        not_in_catalog=_count_labels(r.label for r in rows if r.label and not r.label_in_catalog),
    )


def _count_labels(labels: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    return counts


def replay_session(router: Router, session: Session, skip: Iterable[int] = ()) -> ReplayReport:
    """Route every turn of a session again (never using a turn as evidence for itself) and diff;
    `skip`: indexes left out (turns another file holds too, session.repeated_turns)."""
    catalog = router.catalog
    aliases = label_aliases(session, catalog)
    left_out = set(skip)
    rows = [
        replay_row(i, turn, router.route(turn.message, holdout=turn.message), catalog.none_option, catalog, aliases)
        for i, turn in enumerate(session.turns)
        if i not in left_out
    ]
    return replay_report(rows)


# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------


class LabelledCase(BaseModel):
    source: str  # the session file
    index: int  # position among the file's turns
    turn: Turn


def load_cases(
    paths: Sequence[str | Path], label_sources: Iterable[str] | None = None, *, lenient: bool = False
) -> tuple[list[LabelledCase], list[Session]]:
    """Every labelled turn in the session files (folders are searched for *.toml), optionally only
    those whose label came from one of `label_sources` (a label without a source is "hand").
    lenient: a turn that does not read is left out (Session.unread) instead of refusing its file."""
    sources = set(label_sources) if label_sources is not None else None
    files = iter_session_files(list(paths))
    if not files:
        raise EvalError(f"no session files in {', '.join(str(p) for p in paths)}")
    with gc_paused():  # gcpause.py: half the time of a big folder was full collections
        sessions = [load_session(f, lenient=lenient) for f in files]
    repeated = repeated_turns(sessions)  # a followed live file's turns count once, from the copy
    cases = [
        LabelledCase(source=str(s.path), index=i, turn=t)
        for s in sessions
        for i, t in enumerate(s.turns)
        if t.label and (sources is None or (t.label_source or "hand") in sources) and (s.path, i) not in repeated
    ]
    return cases, sessions


class SkippedCase(BaseModel):
    source: str
    index: int
    label: str


class UnreadTurn(BaseModel):
    """A turn eval left out because it does not read (Session.unread): its file, index and problems."""

    source: str
    index: int
    problems: list[str]


def unread_turns(sessions: Sequence[Session]) -> list[UnreadTurn]:
    return [UnreadTurn(source=str(s.path), index=i, problems=p) for s in sessions for i, p in s.unread if i >= 0]


def ignored_fields(sessions: Sequence[Session]) -> list[UnreadTurn]:
    return [UnreadTurn(source=str(s.path), index=i, problems=p) for s in sessions for i, p in s.ignored]


def unread_lines(sessions: Sequence[Session]) -> list[str]:
    """One stderr line for the turns that did not read (the first few problems named), one per
    [session] read without its fields that do not validate."""
    heads = [problems[0] for s in sessions for index, problems in s.unread if index < 0]
    empty = [f"{Path(str(s.path)).name} turns[{i}]" for s in sessions for i, t in enumerate(s.turns) if t.label == ""]
    return unread_lines_of(heads, unread_turns(sessions), empty, ignored_fields(sessions))


def unread_lines_of(heads: Sequence[str], turns: Sequence[UnreadTurn], empty: Sequence[str], fields: Sequence[UnreadTurn]) -> list[str]:
    """unread_lines from what a pass over the files collected: the first problem of each [session]
    that did not fully read, the unread turns, "file turns[i]" of each `label = ""`, the turns
    read without a field."""
    lines = [f"{head}; read without it (--strict refuses instead)" for head in heads]
    if turns:
        lines.append(f"{_turns(len(turns))} left out, not a valid session turn: {_first_problems(turns)} (--strict refuses instead)")
    if empty:  # `label = ""` reads as no label: said, or the turn vanished from the count unseen
        more = f" and {len(empty) - 5} more" if len(empty) > 5 else ""
        lines.append(f"{_turns(len(empty))} with label = \"\" read as unlabelled, not scored: {', '.join(empty[:5])}{more}")
    if fields:
        lines.append(f"{_turns(len(fields))} measured without a field that does not validate: {_first_problems(fields)} (--strict refuses instead)")
    return lines


def _turns(n: int) -> str:
    return f"{n} turn{'' if n == 1 else 's'}"


def _first_problems(turns: Sequence[UnreadTurn], shown: int = 3) -> str:
    """The first problem of the first few turns, and how many more."""
    more = len(turns) - shown
    return "; ".join(t.problems[0] for t in turns[:shown]) + (f"; and {more} more" if more > 0 else "")


class CatalogGaps(BaseModel):
    """What a lenient check (check_cases(strict=False)) let through: labelled turns whose label is not
    an option of the catalog (skipped by eval, replayed but not scored by replay), acceptable ids that
    are not options (they can never match), and one-line notes (another catalog's name, a renamed
    none option)."""

    skipped: list[SkippedCase] = []
    # labelled turns whose message is blank (check_cases(skip_blank=True): eval without --strict)
    blank: list[SkippedCase] = []
    acceptable: dict[str, int] = {}
    notes: list[str] = []
    # expected_arguments that do not fit the tool's schema now (a property renamed): one line each,
    # and the turns whose argument match is then not scored
    arguments: list[str] = []
    no_expected: set[tuple[str, int]] = set()

    def label_counts(self) -> dict[str, int]:
        return _count_labels(c.label for c in self.skipped)

    def keep(self, cases: Sequence[LabelledCase]) -> list[LabelledCase]:
        out = {(c.source, c.index) for c in [*self.skipped, *self.blank]}
        return [c for c in cases if (c.source, c.index) not in out]

    def lines(self, catalog: Catalog, verb: str = "skipped") -> list[str]:
        """The notes, then one line for the skipped labels (with a did-you-mean for a renamed tool)
        and one for the acceptable ids, each ending in what --strict would do."""
        lines = list(self.notes)
        counts = self.label_counts()
        if counts:
            n = sum(counts.values())
            ids = ", ".join(f"{label} ({k}){_suggest(label, catalog)}" for label, k in counts.items())
            lines.append(
                f"{n} labelled turn{'' if n == 1 else 's'} {verb}: {'its label is' if n == 1 else 'their labels are'} "
                f"not an option of catalog '{catalog.name}': {ids} (--strict refuses instead)"
            )
        if self.blank:
            n = len(self.blank)
            where = ", ".join(f"{Path(c.source).name} turns[{c.index}]" for c in self.blank[:5])
            more = f" and {n - 5} more" if n > 5 else ""
            lines.append(
                f"{n} labelled turn{'' if n == 1 else 's'} {verb}: {'its message is' if n == 1 else 'their messages are'} "
                f"empty or only characters that draw nothing ({where}{more}; --strict refuses instead)"
            )
        if self.acceptable:
            ids = ", ".join(f"{a} ({k})" for a, k in self.acceptable.items())
            lines.append(f"acceptable ids not in catalog '{catalog.name}', never matched: {ids}")
        shown = self.arguments[:5]
        lines += [f"{line}: argument match not scored for that turn (--strict refuses instead)" for line in shown]
        if len(self.arguments) > len(shown):
            lines.append(f"... and {len(self.arguments) - len(shown)} more expected_arguments that do not fit catalog '{catalog.name}'")
        return lines

    def without_unfit_arguments(self, cases: Sequence[LabelledCase]) -> list[LabelledCase]:
        """The cases with the expected_arguments that do not fit the catalog left out."""
        return [
            c.model_copy(update={"turn": c.turn.model_copy(update={"expected_arguments": None})}) if (c.source, c.index) in self.no_expected else c
            for c in cases
        ]


def _suggest(label: str, catalog: Catalog) -> str:
    """A did-you-mean for a label that is no option; the product's default none option, when this
    catalog names its none option otherwise, points at that (a hand-written file has no recorded
    decision to tell it by, see none_aliases)."""
    from .catalog import DEFAULT_NONE_OPTION

    if label.strip().casefold() in (DEFAULT_NONE_OPTION, "none") and catalog.none_option != label.strip():
        return f" (did you mean the none option '{catalog.none_option}'?)"
    folded = [o for o in catalog.option_ids if o.casefold() == label.strip().casefold()]
    if len(folded) == 1:
        return f" (did you mean '{folded[0]}'?)"
    return did_you_mean(label, catalog.option_ids)


def check_cases(
    sessions: list[Session], cases: list[LabelledCase], catalog: Catalog, *, strict: bool = True, skip_blank: bool = False
) -> CatalogGaps:
    """Cases must be labelled for this catalog: a mismatch is one sentence, unknown labels one line each.

    strict=False (eval and replay without --strict): a session made for a catalog of another name is
    a note, and labels that are not options are returned in CatalogGaps instead of refused (a tool
    removed or renamed since: what a developer replays a changed catalog for). Blank messages and
    expected_arguments that do not fit a tool are refused either way, but with skip_blank (eval
    without --strict: one hand-written slip should not keep a whole set from being measured) blank
    messages are returned in CatalogGaps.blank, left out like the unknown labels."""
    gaps = CatalogGaps()
    for session in sessions:
        named = session.session.catalog
        if named and named != catalog.name:
            if strict:
                raise other_catalog_error(session.path, named, catalog)
            gaps.notes.append(other_catalog_note(session.path, named, catalog))
    from .textsafe import is_blank

    # whitespace, or only characters that draw nothing (bidi marks, variation selectors): route refuses such a message
    blank = [c for c in cases if is_blank(c.turn.message)]
    if blank and skip_blank and not strict:
        gaps.blank = [SkippedCase(source=c.source, index=c.index, label=c.turn.label or "") for c in blank]
        cases = [c for c in cases if not is_blank(c.turn.message)]
    elif blank:  # routed, it would count as a retrieval miss of a message nobody sent
        raise blank_error(blank[0], len(blank))
    problems = []
    for case in cases:
        problems += label_problems(case, catalog, gaps, strict)
    for case, line in _expected_arguments_problems(gaps.keep(cases), catalog):
        if strict:
            problems.append(line)
        else:  # a schema changed since (a property renamed): the turn is still routed and scored
            gaps.arguments.append(line)
            gaps.no_expected.add((case.source, case.index))
    if problems:
        raise labels_error(problems, catalog)
    return gaps


def other_catalog_error(path: Any, named: str, catalog: Catalog) -> EvalError:
    return EvalError(
        f"{path}: the turns are labelled for catalog '{named}' but the catalog in use is "
        f"'{catalog.name}'; pass --catalog with the catalog the labels refer to"
    )


def other_catalog_note(path: Any, named: str, catalog: Catalog) -> str:
    return f"{path}: recorded for catalog '{named}'; routed with catalog '{catalog.name}'"


def blank_error(first: LabelledCase, count: int) -> EvalError:
    more = f" (and {count - 1} more)" if count > 1 else ""
    what = "an empty message" if not first.turn.message.strip() else "a message of only characters that draw nothing"
    return EvalError(
        f"{first.source}: turns[{first.index}]: the labelled turn has {what}{more}; "
        "write the user message it stands for, or remove its label"
    )


def label_problems(case: LabelledCase, catalog: Catalog, gaps: CatalogGaps, strict: bool) -> list[str]:
    """A case's label and acceptable ids that are no option: lines (strict), else noted in `gaps`."""
    problems = []
    for role, value in [("label", case.turn.label), *(("acceptable", a) for a in case.turn.acceptable)]:
        if not value or is_option(catalog, value):
            continue
        if strict:
            problems.append(
                f"{case.source}: turns[{case.index}]: {role} '{value}' is not an option of catalog "
                f"'{catalog.name}'{_suggest(value, catalog)}"
            )
        elif role == "label":
            gaps.skipped.append(SkippedCase(source=case.source, index=case.index, label=value))
        else:
            gaps.acceptable[value] = gaps.acceptable.get(value, 0) + 1
    return problems


def labels_error(problems: list[str], catalog: Catalog) -> SessionError:
    shown = problems[:20]
    if len(problems) > 20:
        shown.append(f"... and {len(problems) - 20} more unknown labels")
    if any(" is not an option of catalog " in p for p in problems):
        # a tool removed or renamed since the labels were given reads like a typo otherwise
        shown.append(
            "if the catalog changed since these turns were labelled, relabel them in the console (tui-router open SESSION, "
            "then l on each) or pass --catalog with the catalog they were labelled for"
        )
    return SessionError(f"{len(problems)} labels do not fit catalog '{catalog.name}'", shown)


def expected_arguments_problems(cases: Sequence[LabelledCase], catalog: Catalog) -> list[str]:
    """expected_arguments must belong to a tool label and name that tool's schema properties (typos caught)."""
    return [line for _, line in _expected_arguments_problems(cases, catalog)]


def _expected_arguments_problems(cases: Sequence[LabelledCase], catalog: Catalog) -> list[tuple[LabelledCase, str]]:
    problems: list[tuple[LabelledCase, str]] = []
    for case in cases:
        expected, label = case.turn.expected_arguments, case.turn.label
        if not expected or not label:
            continue
        where = f"{case.source}: turns[{case.index}]"
        tool = catalog.get(label)
        if tool is None or tool.is_escalation:
            problems.append((case, f"{where}: expected_arguments need a tool label, not '{label}'"))
            continue
        properties = (tool.input_schema or {}).get("properties")
        if not isinstance(properties, dict) or not properties:
            continue
        for key in expected:
            if key not in properties:
                problems.append(
                    (case, f"{where}: expected_arguments key '{key}' is not an argument of '{label}'{did_you_mean(key, properties)}")
                )
    return problems


def check_sessions(sessions: list[Session], catalog: Catalog, *, strict: bool = True) -> CatalogGaps:
    """`check_cases` for whole sessions (replay checks what eval checks); a renamed none option
    (none_aliases) is read as the current one unless strict."""
    cases = []
    for s in sessions:
        names = {} if strict else label_aliases(s, catalog)
        for i, t in enumerate(s.turns):
            if t.label:
                turn = _aliased(t, names)
                cases.append(LabelledCase(source=str(s.path), index=i, turn=turn))
    gaps = check_cases(sessions, cases, catalog, strict=strict)
    if not strict:
        gaps.notes += none_alias_notes(sessions, catalog)
    return gaps


def _aliased(turn: Turn, names: dict[str, str]) -> Turn:
    if not names:
        return turn
    return turn.model_copy(
        update={
            "label": names.get(turn.label, turn.label) if turn.label else turn.label,
            "acceptable": [names.get(a, a) for a in turn.acceptable],
            "not_this": [names.get(a, a) for a in turn.not_this],
        }
    )


def none_alias_notes(sessions: Sequence[Session], catalog: Catalog) -> list[str]:
    notes = []
    for s in sessions:
        for old, new in none_aliases(s, catalog).items():
            notes.append(f"{s.path}: its recorded decisions name '{old}' as the none option; read as this catalog's '{new}'")
        spelt = spelling_aliases(s, catalog)
        if spelt:
            pairs = ", ".join(f"{old!r} as '{new}'" for old, new in spelt.items())
            notes.append(f"{s.path}: labels spelt with other case or spaces read as the catalog's ids: {pairs} (--strict refuses instead)")
    return notes


# ---------------------------------------------------------------------------------------------
# Scoring one turn
# ---------------------------------------------------------------------------------------------


class TurnResult(BaseModel):
    source: str = ""
    index: int = 0
    message: str
    label: str
    acceptable: list[str] = []
    tags: list[str] = []
    category: str
    is_none: bool  # labelled with the none option
    is_escalation: bool  # labelled with an escalation option (a person should see the turn)
    candidates: list[str]
    retrieved: bool  # the label or an acceptable id was offered (always true for none labels)
    rank: int | None  # 0: offered regardless of rank; k: k-th in the BM25 ranking; None: never ranked
    choice: str | None  # None when unresolved
    probabilities: dict[str, float]
    confidence: float | None
    band: str
    action: str
    risk: str | None
    top3: list[str]
    correct: bool  # choice is the label or acceptable (and resolved)
    exact: bool  # choice is the label (and resolved)
    stage: str | None  # retrieval | unresolved | decision | policy | None
    latency_ms: float
    error: str = ""
    # the arguments step (arguments.py), only on correctly routed turns whose tool has a schema
    arguments: dict[str, Any] | None = None
    argument_errors: list[str] = []
    arguments_valid: bool | None = None
    arguments_match: bool | None = None  # every expected_arguments key equal (only when labelled)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "index": self.index,
            "message": self.message,
            "label": self.label,
            "acceptable": self.acceptable,
            "tags": self.tags,
            "category": self.category,
            "candidates": self.candidates,
            "retrieved": self.retrieved,
            "choice": self.choice,
            "probabilities": {k: round(v, 6) for k, v in self.probabilities.items()},
            "confidence": _round(self.confidence),
            "band": self.band,
            "action": self.action,
            "top3": self.top3,
            "correct": self.correct,
            "stage": self.stage,
            "latency_ms": round(self.latency_ms, 3),
            "error": self.error,
            "arguments": self.arguments,
            "argument_errors": self.argument_errors,
            "arguments_valid": self.arguments_valid,
            "arguments_match": self.arguments_match,
        }


def label_category(catalog: Catalog, label: str) -> str:
    if label == catalog.none_option:
        return "none"
    tool = catalog.get(label)
    return (tool.category if tool and tool.category else "uncategorised")


def top3_of(probabilities: dict[str, float], choice: str | None, none_option: str) -> list[str]:
    """The three likeliest tool options, the choice kept first, the none option excluded (seed bench)."""
    order = list(probabilities)
    ranked = sorted((o for o in order if o != none_option), key=lambda o: (-probabilities[o], order.index(o)))
    if choice and choice != none_option:
        ranked = [choice, *(o for o in ranked if o != choice)]
    return ranked[:3]


def score_turn(
    turn: Turn,
    decision: Decision,
    catalog: Catalog,
    *,
    always_offered: frozenset[str] = frozenset(),
    source: str = "",
    index: int = 0,
) -> TurnResult:
    """Score one routed labelled turn. `always_offered`: ids the retriever adds whatever their rank."""
    label = turn.label or ""
    none = catalog.none_option
    answers = _answers(label, turn.acceptable)
    candidates = [c.id for c in decision.candidates]
    offered = set(candidates) | {none}
    is_none = label == none
    retrieved = bool(answers & offered)
    if is_none:
        rank: int | None = 0
    elif decision.retrieval.value == "direct" or (answers & always_offered & offered):
        rank = 0
    else:
        positions = [decision.ranked.index(a) + 1 for a in answers if a in decision.ranked]
        rank = min(positions) if positions else None
    resolved = decision.band is not Band.unresolved
    choice = decision.choice if resolved else None
    probabilities = decision.probabilities if resolved else {}
    correct = resolved and choice in answers
    tool = catalog.get(label)
    is_escalation = bool(tool and tool.is_escalation)
    if not retrieved:
        stage: str | None = "retrieval"
    elif not resolved:
        stage = "unresolved"
    elif not correct:
        stage = "decision"
    elif not is_none and decision.action is Action.fallback and choice != none:
        stage = "policy"  # a right tool dropped by a low band (an acceptable none choice is simply right)
    else:
        stage = None
    return TurnResult(
        source=source,
        index=index,
        message=turn.message,
        label=label,
        acceptable=list(turn.acceptable),
        tags=list(turn.tags),
        category=label_category(catalog, label),
        is_none=is_none,
        is_escalation=is_escalation,
        candidates=candidates,
        retrieved=retrieved,
        rank=rank,
        choice=choice,
        probabilities=dict(probabilities),
        confidence=decision.confidence if resolved else None,
        band=decision.band.value,
        action=decision.action.value,
        risk=decision.risk.value if decision.risk and resolved else None,
        top3=top3_of(probabilities, choice, none) if resolved else [],
        correct=correct,
        exact=resolved and choice == label,
        stage=stage,
        latency_ms=decision.latency_ms,
        error=decision.error,
    )


def always_offered_ids(catalog: Catalog, config: Config) -> frozenset[str]:
    ids = set(config.retrieval.always_include)
    if config.retrieval.include_escalation:
        ids.update(catalog.escalation_ids)
    return frozenset(ids)


# ---------------------------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------------------------


class Ratio(BaseModel):
    """hits / total; value None when there is nothing to measure (shown as n/a)."""

    hits: int = 0
    total: int = 0

    @property
    def value(self) -> float | None:
        return self.hits / self.total if self.total else None

    @classmethod
    def of(cls, flags: Iterable[bool]) -> Ratio:
        values = list(flags)
        return cls(hits=sum(values), total=len(values))


class BandStats(BaseModel):
    count: int
    coverage: float | None
    accuracy: Ratio


class ReliabilityBin(BaseModel):
    low: float
    high: float
    count: int
    mean_confidence: float | None
    accuracy: float | None


class ContextBytes(BaseModel):
    """Mean bytes an agent loads per turn (compact JSON), per the seed benchmark."""

    all_schemas: int
    snippets_only: int
    snippets_top1: float
    snippets_top3: float
    tools: int = 0
    tools_with_schema: int = 0


class GroupMetrics(BaseModel):
    n: int
    tool_cases: int
    none_cases: int
    retrieval_recall: Ratio
    top1: Ratio
    top1_acceptable: Ratio
    top3: Ratio
    accuracy_given_retrieved: Ratio
    none_precision: Ratio
    none_recall: Ratio
    fallback_rate: Ratio
    unresolved: int
    stages: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": self.n, "tool_cases": self.tool_cases, "none_cases": self.none_cases}
        for name in (
            "retrieval_recall",
            "top1",
            "top1_acceptable",
            "top3",
            "accuracy_given_retrieved",
            "none_precision",
            "none_recall",
            "fallback_rate",
        ):
            out[name] = _round(getattr(self, name).value)
        out["unresolved"] = self.unresolved
        out["stages"] = self.stages
        return out


def group_metrics(results: Sequence[TurnResult], none_option: str) -> GroupMetrics:
    from .evalstate import GroupState

    state = GroupState()
    for r in results:
        state.add(r, none_option)
    return state.metrics()


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (q in 0..100)."""
    if not values:
        return None
    data = sorted(values)
    pos = (len(data) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def reliability(results: Sequence[TurnResult]) -> tuple[list[ReliabilityBin], float | None, float | None]:
    """10 equal-width confidence bins, ECE and Brier score over resolved turns (correct = 1)."""
    from .evalstate import EvalState

    state = EvalState()
    for r in results:
        if r.confidence is not None:
            i = min(int(r.confidence * RELIABILITY_BINS), RELIABILITY_BINS - 1)
            state.bins[i][0] += 1
            state.bins[i][1] += r.correct
            state.bin_confidence[i].add(r.confidence)
            state.brier.add((r.confidence - (1.0 if r.correct else 0.0)) ** 2)
    return state.reliability()


def _compact_len(obj: Any) -> int:
    return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def context_bytes(catalog: Catalog, results: Sequence[TurnResult]) -> ContextBytes | None:
    """All schemas vs snippets only vs snippets + the routed top-1/top-3 schemas (mean per turn).

    A tool without a schema counts as {"name", "schema": {}}. Nothing extra is loaded for a none
    choice; an unresolved turn loads every schema, since a failed router leaves the agent loading all.
    """
    return state_of(results, catalog, keep_errors=0).context_bytes(ContextSizes.of(catalog))


class ArgumentStats(BaseModel):
    validity: Ratio  # schema-valid over correctly routed turns whose tool has a schema
    match: Ratio  # every expected key equal, over those of them that carry expected_arguments


def argument_stats(results: Sequence[TurnResult]) -> ArgumentStats:
    return ArgumentStats(
        validity=Ratio.of(r.arguments_valid for r in results if r.arguments_valid is not None),
        match=Ratio.of(r.arguments_match for r in results if r.arguments_match is not None),
    )


def arguments_turns(results: Sequence[TurnResult], cases: Sequence[Turn], catalog: Catalog) -> list[tuple[int, Tool]]:
    """Which results get an arguments step: routed correctly to a tool (not an escalation) that has a schema."""
    picked = []
    for i, (r, _turn) in enumerate(zip(results, cases, strict=True)):
        tool = catalog.get(r.choice) if r.correct and r.choice else None
        if tool is not None and not tool.is_escalation and tool.input_schema:
            picked.append((i, tool))
    return picked


def score_arguments(
    results: list[TurnResult], turns: Sequence[Turn], catalog: Catalog, config: ArgumentsConfig, secret_env: Sequence[str] = ()
) -> None:
    """Build, validate and compare the arguments of every correctly routed tool turn (in place)."""
    from .arguments import abuild_arguments, build_arguments, with_label

    picked = arguments_turns(results, turns, catalog)
    if not picked:
        return

    async def all_of() -> list[Any]:
        return [await abuild_arguments(tool, turns[i].message, config, secret_env=secret_env) for i, tool in picked]

    if config.command:  # one event loop for every run of the command
        built = asyncio.run(all_of())
    else:
        built = [build_arguments(tool, turns[i].message, config) for i, tool in picked]
    for (i, _tool), made in zip(picked, built, strict=True):
        r = results[i]
        r.arguments = made.values
        r.argument_errors = [e.line() for e in made.errors] + ([made.error] if made.error else [])
        r.arguments_valid = made.valid
        # the label names the expected tool; compare only when that is the tool routed to
        expected = turns[i].expected_arguments if r.choice == r.label else None
        r.arguments_match = with_label(made, expected)


class EvalReport(BaseModel):
    backend: str
    model: str
    catalog: str
    options: int
    learning: str  # how the local backend learned from the cases (or why it did not)
    files: list[str]
    n: int
    tool_cases: int
    none_cases: int
    overall: GroupMetrics
    recall_at_k: dict[int, Ratio]
    missed_review_rate: Ratio
    wrong_execute_rate: Ratio
    execute_precision: Ratio
    automation_rate: Ratio
    bands: dict[str, BandStats]
    reliability: list[ReliabilityBin]
    ece: float | None
    brier: float | None
    latency_ms: dict[str, float | None]
    context_bytes: ContextBytes | None
    per_tag: dict[str, GroupMetrics]
    per_category: dict[str, GroupMetrics]
    turns: list[TurnResult]
    arguments: ArgumentStats | None = None
    per_tool_arguments: dict[str, ArgumentStats] = {}
    # turns with declined options ("not this", labelled or not) routed again to one of them
    not_this: Ratio = Ratio()
    # why the backend's embedding cache could not be written ("" when fine): a stderr warning, not JSON
    cache_problem: str = Field(default="", exclude=True)
    # parts of the backend that did not load (an encoder, the reranker): stderr warnings, not JSON
    load_problems: list[str] = Field(default=[], exclude=True)
    # files whose whole turn list another file holds (session.copy_notes): one stderr line each
    copies: list[str] = Field(default=[], exclude=True)
    # labelled turns left out because their label is not an option of the catalog (not --strict)
    skipped: list[SkippedCase] = []
    # labelled turns left out because their message is blank (not --strict)
    blank: list[SkippedCase] = []
    # turns left out because they do not read (a label that is a number, no message; not --strict)
    invalid: list[UnreadTurn] = []
    # turns measured without a field that did not validate (label_source = "manual"; not --strict)
    ignored_fields: list[UnreadTurn] = []
    # the thresholds the bands were decided with (the backend's fitted ones when the config sets none)
    thresholds: dict[str, float] = {}
    # what check_cases let through, as stderr lines (another catalog's name, the skipped labels)
    catalog_lines: list[str] = Field(default=[], exclude=True)
    # the first wrong turns (as many as the run kept: --errors) and the first unresolved one, in run
    # order: what the tables and warnings show, kept when the turns themselves are not (a big run)
    first_errors: list[TurnResult] = Field(default=[], exclude=True)
    first_unresolved: TurnResult | None = Field(default=None, exclude=True)

    # flat numbers a --gate may test
    def gate_metrics(self) -> dict[str, float | None]:
        o = self.overall
        metrics: dict[str, float | None] = {
            "n": float(self.n),
            "tool_cases": float(self.tool_cases),
            "none_cases": float(self.none_cases),
            "retrieval_recall": o.retrieval_recall.value,
            "top1": o.top1.value,
            "top1_acceptable": o.top1_acceptable.value,
            "top3": o.top3.value,
            "accuracy_given_retrieved": o.accuracy_given_retrieved.value,
            "none_precision": o.none_precision.value,
            "none_recall": o.none_recall.value,
            "missed_review_rate": self.missed_review_rate.value,
            "wrong_execute_rate": self.wrong_execute_rate.value,
            "execute_precision": self.execute_precision.value,
            "automation_rate": self.automation_rate.value,
            "fallback_rate": o.fallback_rate.value,
            "unresolved": float(o.unresolved),
            "ece": self.ece,
            "brier": self.brier,
            "latency_p50": self.latency_ms.get("p50"),
            "latency_p95": self.latency_ms.get("p95"),
            "argument_validity": self.arguments.validity.value if self.arguments else None,
            "argument_match": self.arguments.match.value if self.arguments else None,
            "not_this_repeats": float(self.not_this.hits),
        }
        for k, ratio in self.recall_at_k.items():
            metrics[f"recall@{k}"] = ratio.value
        for stage, count in o.stages.items():
            metrics[f"{stage}_errors"] = float(count)
        return metrics

    def to_json(self, *, with_turns: bool = True) -> dict[str, Any]:
        o = self.overall
        out: dict[str, Any] = {
            "backend": self.backend,
            "model": self.model,
            "catalog": self.catalog,
            "options": self.options,
            "learning": self.learning,
            "files": self.files,
            "thresholds": self.thresholds,
            "n": self.n,
            "tool_cases": self.tool_cases,
            "none_cases": self.none_cases,
            "skipped": len(self.skipped),
            "not_in_catalog": {
                "turns": len(self.skipped),
                "labels": _count_labels(c.label for c in self.skipped),
                "cases": [c.model_dump() for c in self.skipped],
            },
            "blank": {"turns": len(self.blank), "cases": [c.model_dump() for c in self.blank]},
            "invalid": {
                "turns": len(self.invalid),
                "cases": [c.model_dump() for c in self.invalid],
                "fields_ignored": [c.model_dump() for c in self.ignored_fields],
            },
            "retrieval_recall": _round(o.retrieval_recall.value),
            "recall_at_k": {str(k): _round(v.value) for k, v in self.recall_at_k.items()},
            "top1": _round(o.top1.value),
            "top1_acceptable": _round(o.top1_acceptable.value),
            "top3": _round(o.top3.value),
            "accuracy_given_retrieved": _round(o.accuracy_given_retrieved.value),
            "none_precision": _round(o.none_precision.value),
            "none_recall": _round(o.none_recall.value),
            "missed_review_rate": _round(self.missed_review_rate.value),
            "wrong_execute_rate": _round(self.wrong_execute_rate.value),
            "execute_precision": _round(self.execute_precision.value),
            "automation_rate": _round(self.automation_rate.value),
            "fallback_rate": _round(o.fallback_rate.value),
            "unresolved": o.unresolved,
            "stages": o.stages,
            "not_this": {"turns": self.not_this.total, "repeats": self.not_this.hits},
            "ece": _round(self.ece),
            "brier": _round(self.brier),
            "reliability": [
                {
                    "low": b.low,
                    "high": b.high,
                    "count": b.count,
                    "mean_confidence": _round(b.mean_confidence),
                    "accuracy": _round(b.accuracy),
                }
                for b in self.reliability
            ],
            "bands": {
                name: {"count": b.count, "coverage": _round(b.coverage), "accuracy": _round(b.accuracy.value)}
                for name, b in self.bands.items()
            },
            "counts": {
                name: [r.hits, r.total]
                for name, r in (
                    ("retrieval_recall", o.retrieval_recall),
                    ("top1", o.top1),
                    ("top1_acceptable", o.top1_acceptable),
                    ("top3", o.top3),
                    ("accuracy_given_retrieved", o.accuracy_given_retrieved),
                    ("none_precision", o.none_precision),
                    ("none_recall", o.none_recall),
                    ("missed_review_rate", self.missed_review_rate),
                    ("wrong_execute_rate", self.wrong_execute_rate),
                    ("execute_precision", self.execute_precision),
                    ("fallback_rate", o.fallback_rate),
                )
            },
            "per_tag": {k: v.to_json() for k, v in self.per_tag.items()},
            "per_category": {k: v.to_json() for k, v in self.per_category.items()},
            "latency_ms": {k: _round(v, 3) for k, v in self.latency_ms.items()},
            "context_bytes": {k: round(v, 1) for k, v in self.context_bytes.model_dump().items()} if self.context_bytes else None,
            "argument_validity": _round(self.arguments.validity.value) if self.arguments else None,
            "argument_match": _round(self.arguments.match.value) if self.arguments else None,
            "per_tool_arguments": {
                tool: {
                    "argument_validity": _round(a.validity.value),
                    "argument_match": _round(a.match.value),
                    "counts": {"argument_validity": [a.validity.hits, a.validity.total], "argument_match": [a.match.hits, a.match.total]},
                }
                for tool, a in self.per_tool_arguments.items()
            },
        }
        if self.arguments:
            out["counts"]["argument_validity"] = [self.arguments.validity.hits, self.arguments.validity.total]
            out["counts"]["argument_match"] = [self.arguments.match.hits, self.arguments.match.total]
        if with_turns:
            out["turns"] = [t.to_json() for t in self.turns]
        return out


def missed_review(results: Sequence[TurnResult]) -> Ratio:
    """Over the turns labelled with an escalation option: a person should have seen the turn, so it
    is missed unless the escalation option was chosen AND escalated (evalstate.REPORT_RATIOS)."""
    return Ratio.of(not (r.correct and r.action == Action.escalate.value) for r in results if r.is_escalation)


def build_report(
    results: list[TurnResult],
    catalog: Catalog,
    *,
    backend: str = "",
    model: str = "",
    learning: str = "",
    files: Sequence[str] = (),
) -> EvalReport:
    """Every metric over scored turns; works on an empty list (n = 0, rates n/a). The metrics come
    from the mergeable state (evalstate.py), as a sharded run's do."""
    state = state_of(results, catalog)
    return state.report(catalog, backend=backend, model=model, learning=learning, files=files, turns=results)


# ---------------------------------------------------------------------------------------------
# The eval runner
# ---------------------------------------------------------------------------------------------


def teach_local_backend(router: Router, cases: Sequence[LabelledCase]) -> bool:
    """Give the local backend every labelled case as an exemplar (scored later with holdout).

    Returns False when the backend does not learn from labelled turns.
    """
    if not router.backend.learns_from_examples:
        return False
    for case in cases:
        if case.turn.label:
            router.backend.add_exemplar(case.turn.label, case.turn.message)
    return True


def learning_mode(router: Router, learn: bool, taught: bool, n_cases: int) -> str:
    if not router.backend.learns_from_examples:
        return f"none (the {router.backend.name} backend does not learn from labelled turns)"
    if not learn:
        return "off (--no-learn: only the catalog and [local] examples; each case held out)"
    if taught:
        return f"leave-one-out (exemplars from the other {max(n_cases - 1, 0)} labelled turns)"
    return "off"


async def _aroute_all(router: Router, messages: Sequence[str], concurrency: int, close: bool = True) -> list[Decision]:
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(message: str) -> Decision:
        async with gate:
            return await router.aroute(message, holdout=message)

    try:
        return list(await asyncio.gather(*(one(m) for m in messages)))
    finally:
        if close:
            await router.aclose()


def route_all(router: Router, messages: Sequence[str], concurrency: int = 1, *, close: bool = True) -> list[Decision]:
    """Route every message with itself held out; concurrency > 1 uses aroute under a semaphore.
    close=False: the router routes more batches after this one (a shard of a run)."""
    if concurrency <= 1:
        try:
            return [router.route(m, holdout=m) for m in messages]
        finally:
            if close:
                router.backend.close()
    return asyncio.run(_aroute_all(router, messages, concurrency, close))


def evaluate_router(
    router: Router,
    cases: Sequence[LabelledCase],
    *,
    learn: bool = True,
    concurrency: int = 1,
    files: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
    arguments: bool = True,
    declined: Sequence[LabelledCase] = (),
) -> EvalReport:
    """Route every labelled case afresh and measure. The local backend learns leave-one-out unless learn=False.

    `declined`: unlabelled turns with "not this" options, routed too; choosing a declined option
    again is a decision error, counted in `not_this` (a labelled turn doing so is already wrong)."""
    taught = teach_local_backend(router, cases) if learn else False
    mode = learning_mode(router, learn, taught, len(cases))
    results, repeats = route_and_score(router, cases, declined, concurrency=concurrency, arguments=arguments)
    report = build_report(
        results, router.catalog, backend=router.backend.name, model=router.backend.model, learning=mode, files=files
    )
    report.not_this = Ratio.of(repeats)
    report.thresholds = {"high": router.config.policy.high, "medium": router.config.policy.medium}
    report.cache_problem = router.backend.cache_problem()
    report.load_problems = router.backend.load_problems()
    return report


def route_and_score(
    router: Router, cases: Sequence[LabelledCase], declined: Sequence[LabelledCase] = (), *, concurrency: int = 1,
    arguments: bool = True, close: bool = True,
) -> tuple[list[TurnResult], list[bool]]:
    """Route cases and declined turns (each held out from itself), score the cases; the flags say,
    per turn with declined options, whether it was routed to one again. One batch of a run: the
    whole eval, or one shard of it (shard.py)."""
    messages = [c.turn.message for c in [*cases, *declined]]
    router.backend.prefetch(messages)  # the semantic backend: every message embedded up front, on every core
    routed = route_all(router, messages, concurrency, close=close)
    decisions, again = routed[: len(cases)], routed[len(cases) :]
    # a label given after a decline (`a` on a declined row, a review) overrules that decline: the
    # option is then right, so picking it again is not a "not this" repeat
    still_declined = [[o for o in c.turn.not_this if o != c.turn.label and o not in c.turn.acceptable] for c in cases]
    repeats = [d.choice in no for no, d in zip(still_declined, decisions, strict=True) if no]
    repeats += [d.choice in c.turn.not_this for c, d in zip(declined, again, strict=True)]
    always = always_offered_ids(router.catalog, router.config)
    results = [
        score_turn(c.turn, d, router.catalog, always_offered=always, source=c.source, index=c.index)
        for c, d in zip(cases, decisions, strict=True)
    ]
    if arguments:
        score_arguments(results, [c.turn for c in cases], router.catalog, router.config.arguments, router.config.secret_env_names())
    return results, repeats


def declined_turns(sessions: Sequence[Session]) -> list[LabelledCase]:
    """Unlabelled turns a person declined an option for ("not this")."""
    return [LabelledCase(source=str(s.path), index=i, turn=t) for s in sessions for i, t in enumerate(s.turns) if t.not_this and not t.label]


def run_eval(
    paths: Sequence[str | Path],
    config: Config,
    *,
    backend: str | None = None,
    catalog: Catalog | None = None,
    learn: bool = True,
    concurrency: int = 1,
    label_sources: Iterable[str] | None = None,
    strict: bool = True,
) -> EvalReport:
    """Load cases, check them against the catalog, route and measure.

    strict=False (the CLI without --strict): turns labelled with an id that is not an option of the
    catalog are skipped (report.skipped, report.catalog_lines), a session made for a catalog of
    another name is a note, and a renamed none option (none_aliases) is read as the current one."""
    from .catalog import load_catalog
    from .evalrun import run_eval_shards

    catalog = catalog or load_catalog(config.catalog_spec())
    # one file at a time, the turns spooled to a temporary folder; the turns scored are kept
    run = run_eval_shards(
        paths, config, catalog=catalog, backend=backend, learn=learn, concurrency=concurrency, label_sources=label_sources,
        strict=strict, use_store=False, keep_turns=True, keep_errors=1_000_000_000,
    )
    return run.report


def nothing_to_measure(
    label_sources: Iterable[str] | None, files: Sequence[str], catalog: Catalog, *, cases: int, gaps: CatalogGaps,
    invalid: Sequence[UnreadTurn], fields: Sequence[UnreadTurn], extra: set[str],
) -> EvalError:
    """Why no labelled turn is left to route, in one sentence: `cases` labelled turns were found, all
    blank or labelled with ids the catalog lacks (gaps), or none (then: unread turns, stray keys)."""
    only = f" with label_source {', '.join(sorted(label_sources))}" if label_sources is not None else ""
    where = ", ".join(files)
    if cases and len(gaps.blank) == cases:
        return EvalError(
            f"every labelled turn{only} in {where} has an empty message (or one of only characters that draw nothing); "
            "write the user messages they stand for"
        )
    if cases:  # every label is gone from this catalog: nothing to measure
        return EvalError(
            f"no labelled turn{only} in {where} has a label that is an option of catalog '{catalog.name}' "
            f"({not_in_catalog_text(gaps.label_counts()).split(': ', 1)[1]}); pass --catalog with the catalog they were labelled for"
        )
    if invalid:
        return EvalError(
            f"no labelled turn{only} in {where} reads: {len(invalid)} turn{'' if len(invalid) == 1 else 's'} not valid, "
            f"the first {invalid[0].problems[0]}"
        )
    also = f"; {len(fields)} turn{'' if len(fields) == 1 else 's'} did not fully validate, the first {fields[0].problems[0]}" if fields else ""
    keys = f"; the turns carry {', '.join(repr(k) for k in sorted(extra)[:5])}, which eval does not read as a label" if extra else ""
    return EvalError(f"no labelled turns{only} in {where} (a labelled turn has label = \"<option id>\"){keys}{also}")


# ---------------------------------------------------------------------------------------------
# Gates: "top1>=0.8,missed_review_rate<=0,ece<=0.1"
# ---------------------------------------------------------------------------------------------

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
}
_CONDITION = re.compile(r"^\s*([A-Za-z_@0-9]+)\s*(>=|<=|==|!=|>|<)\s*(-?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(%?)\s*$")


class GateError(UserError):
    pass


class GateCondition(BaseModel):
    metric: str
    op: str
    threshold: float
    shown: str  # the threshold as written


class GateResult(BaseModel):
    condition: GateCondition
    value: float | None
    passed: bool

    def line(self) -> str:
        c = self.condition
        if self.value is None:
            shown = "n/a (nothing to measure)"
        elif c.metric in COUNT_METRICS:
            shown = str(int(self.value))
        else:
            shown = f"{self.value:.3f}"
        return f"{'PASS' if self.passed else 'FAIL'} {c.metric} {shown} {c.op} {c.shown}"


def parse_gate(spec: str, known: Iterable[str]) -> list[GateCondition]:
    """Parse a gate spec, checking every metric name before anything runs."""
    names = list(known)
    conditions = []
    for part in [p for p in spec.split(",") if p.strip()]:
        match = _CONDITION.match(part)
        if not match:
            raise GateError(
                f"--gate: cannot read condition {part.strip()!r}; write METRIC>=NUMBER (operators >= <= > < == !=), "
                "e.g. \"top1>=0.8,missed_review_rate<=0\""
            )
        metric, op, number, percent = match.groups()
        if metric not in names:
            raise GateError(
                f"--gate: unknown metric '{metric}'{did_you_mean(metric, names)}; known metrics: {', '.join(names)}"
            )
        threshold = float(number) / (100.0 if percent else 1.0)
        conditions.append(GateCondition(metric=metric, op=op, threshold=threshold, shown=number + percent))
    if not conditions:
        raise GateError("--gate: no conditions given (e.g. \"top1>=0.8,ece<=0.1\")")
    return conditions


def check_gate(conditions: Sequence[GateCondition], metrics: dict[str, float | None]) -> list[GateResult]:
    """A metric that could not be measured (no cases for it) fails: a gate never passes vacuously."""
    results = []
    for c in conditions:
        value = metrics.get(c.metric)
        passed = value is not None and _OPS[c.op](round(value, 9), c.threshold)
        results.append(GateResult(condition=c, value=value, passed=passed))
    return results


def gate_lines(results: Sequence[GateResult]) -> list[str]:
    passed = sum(r.passed for r in results)
    return [*(r.line() for r in results), f"{passed} passed, {len(results) - passed} failed"]


EVAL_GATE_METRICS = tuple(
    [
        "n",
        "tool_cases",
        "none_cases",
        "retrieval_recall",
        "top1",
        "top1_acceptable",
        "top3",
        "accuracy_given_retrieved",
        "none_precision",
        "none_recall",
        "missed_review_rate",
        "wrong_execute_rate",
        "execute_precision",
        "automation_rate",
        "fallback_rate",
        "unresolved",
        "ece",
        "brier",
        "latency_p50",
        "latency_p95",
        "argument_validity",
        "argument_match",
        "not_this_repeats",
        *(f"recall@{k}" for k in RECALL_KS),
        *(f"{s}_errors" for s in STAGES),
    ]
)
COUNT_METRICS = frozenset(
    {"n", "tool_cases", "none_cases", "unresolved", "turns", "changed", "flips", "band_changes", "fixed", "broken", "not_this_repeats"}
    | {"labels_not_in_catalog", "not_recorded", "wrong_not_recorded"}
    | {f"{s}_errors" for s in STAGES}
)
REPLAY_GATE_METRICS = (
    "turns",
    "changed",
    "flips",
    "band_changes",
    "fixed",
    "broken",
    "mean_tv",
    "max_tv",
    "changed_rate",
    "flip_rate",
    "labels_not_in_catalog",
    "not_recorded",
    "wrong_not_recorded",
)


def replay_eval_report(
    rows: Sequence[ReplayRow], catalog: Catalog, config: Config, *, backend: str = "", model: str = ""
) -> EvalReport:
    """Eval metrics over the labelled rows of a replay (so a replay can be gated on top1, ece, ...)."""
    always = always_offered_ids(catalog, config)
    results = [
        score_turn(
            Turn(message=r.message, label=r.label, acceptable=r.acceptable), r.decision, catalog, always_offered=always, index=r.index
        )
        for r in rows
        if r.label and r.label_in_catalog  # a label gone from the catalog is not scored, as in eval
    ]
    return build_report(results, catalog, backend=backend, model=model, learning="none (replay)")


# ---------------------------------------------------------------------------------------------


def _round(value: float | None, digits: int = 6) -> float | None:
    return None if value is None else round(value, digits)


