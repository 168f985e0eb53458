"""Eval, replay and calibration reports as tables: rich for the terminal, Markdown for docs/.

Both renderings come from the same `Section` rows, so the terminal and the docs never disagree.
Every cell is plain text: rich cells are built with Text(...) so that messages, labels and tags (user
data) never pass through markup. Imports rich only (never textual).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

from pydantic import BaseModel

from .evaluate import RECALL_KS, STAGES, EvalReport, GroupMetrics, Ratio, ReplayReport

if TYPE_CHECKING:
    from .calibrate import CalibrationResult


class Section(BaseModel):
    title: str
    headers: list[str]
    rows: list[list[str]]
    note: str = ""
    right: list[int] = []  # column indexes aligned right (numbers)
    narrow_drop: list[int] = []  # column indexes a terminal under 100 cells leaves out (the Markdown keeps them)


# -- formatting -------------------------------------------------------------------------------


def pct(ratio: Ratio, counts: bool = True) -> str:
    """'36.0% (9/25)' as in the seed benchmark; 'n/a' when there is nothing to measure."""
    if ratio.value is None:
        return "n/a"
    text = f"{ratio.value * 100:.1f}%"
    return f"{text} ({ratio.hits}/{ratio.total})" if counts else text


def num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def shorten(text: str, width: int = 60) -> str:
    """One line of at most `width` terminal cells (a CJK message is two a character), never cutting
    an emoji sequence, a flag or an accented letter in half, with an ellipsis."""
    from .app.format import shorten as shorten_cells

    return shorten_cells(text, width)


# -- eval ---------------------------------------------------------------------------------------


def _headline_rows(reports: Sequence[EvalReport]) -> list[list[str]]:
    def row(name: str, cells: Sequence[str]) -> list[str]:
        return [name, *cells]

    rows = [
        row("labelled turns (tool / none)", [f"{r.n} ({r.tool_cases} / {r.none_cases})" for r in reports]),
        row("retrieval recall", [pct(r.overall.retrieval_recall) for r in reports]),
        row("top-1", [pct(r.overall.top1) for r in reports]),
        row("top-1 (acceptable)", [pct(r.overall.top1_acceptable) for r in reports]),
        row("top-3", [pct(r.overall.top3) for r in reports]),
        row("accuracy given retrieved", [pct(r.overall.accuracy_given_retrieved) for r in reports]),
        row("none precision", [pct(r.overall.none_precision) for r in reports]),
        row("none recall", [pct(r.overall.none_recall) for r in reports]),
        row("missed-review rate", [pct(r.missed_review_rate) for r in reports]),
        row("wrong-execute rate", [pct(r.wrong_execute_rate) for r in reports]),
        row("auto-execute precision", [pct(r.execute_precision) for r in reports]),
        row("fallback rate", [pct(r.overall.fallback_rate) for r in reports]),
        row("unresolved", [str(r.overall.unresolved) for r in reports]),
        row("ECE (10 bins)", [num(r.ece) for r in reports]),
        row("Brier score", [num(r.brier) for r in reports]),
        row("latency p50 / p95 (ms)", [f"{num(r.latency_ms['p50'], 1)} / {num(r.latency_ms['p95'], 1)}" for r in reports]),
    ]
    if any(r.arguments and (r.arguments.validity.total or r.arguments.match.total) for r in reports):
        rows.append(row("argument validity", [pct(r.arguments.validity) if r.arguments else "n/a" for r in reports]))
        rows.append(row("argument match", [pct(r.arguments.match) if r.arguments else "n/a" for r in reports]))
    return rows


def arguments_section(report: EvalReport) -> Section | None:
    """Per routed tool: schema-valid arguments, and expected keys matched (arguments.py)."""
    if not report.per_tool_arguments:
        return None
    rows = [[tool, pct(a.validity), pct(a.match)] for tool, a in report.per_tool_arguments.items()]
    if report.arguments:
        rows.append(["Total", pct(report.arguments.validity), pct(report.arguments.match)])
    return Section(
        title=f"Arguments after the route: {_who(report)}",
        headers=["Tool", "Valid", "Match"],
        rows=rows,
        right=[1, 2],
        note="Only correctly routed turns whose tool has a schema; Valid: the built arguments pass the schema; "
        "Match: every key of expected_arguments equal (turns that carry them).",
    )


def _who(report: EvalReport) -> str:
    return f"{report.backend} ({report.model})" if report.model else report.backend


def _group_headers() -> list[str]:
    return ["Turns", "Top-1", "Top-1 (acc.)", "Top-3", "None P", "None R", "Retrieved", "Errors r/d/u/p"]


GROUP_NOTE = (
    "Top-1 (acc.) also counts acceptable ids; None P/R: none precision/recall; Retrieved: label among the "
    "candidates; errors by stage: retrieval / decision / unresolved / policy."
)


def _group_row(name: str, g: GroupMetrics) -> list[str]:
    s = g.stages
    return [
        name,
        str(g.n),
        pct(g.top1),
        pct(g.top1_acceptable),
        pct(g.top3),
        pct(g.none_precision),
        pct(g.none_recall),
        pct(g.retrieval_recall),
        f"{s['retrieval']} / {s['decision']} / {s['unresolved']} / {s['policy']}",
    ]


def eval_sections(reports: Sequence[EvalReport], *, errors: int = 10, tags: int = 40) -> list[Section]:
    """Every table of an eval (one report, or several side by side with --compare)."""
    first = reports[0]
    names = [_who(r) for r in reports]
    sections = [
        Section(
            title="Summary",
            headers=["Metric", *names],
            rows=_headline_rows(reports),
            right=list(range(1, len(reports) + 1)),
            note="Top-1/top-3 are over tool cases (label a tool or escalation option); none cases are scored by none "
            "precision/recall. Learning: " + "; ".join(f"{r.backend}: {r.learning}" for r in reports) + ".",
        )
    ]
    sections.append(
        Section(
            title="Retrieval recall@k (label among the BM25 top-k; the none option and always-offered options count at every k)",
            headers=["Backend", *(f"k={k}" for k in RECALL_KS)],
            rows=[[f"{first.catalog} retriever", *(pct(first.recall_at_k[k], counts=False) for k in RECALL_KS)]],
            right=list(range(1, len(RECALL_KS) + 1)),
        )
    )
    for report in reports:
        rows = [_group_row(name, g) for name, g in report.per_category.items()]
        rows.append(_group_row("Total", report.overall))
        sections.append(
            Section(
                title=f"Per category: {_who(report)}",
                headers=["Category", *_group_headers()],
                rows=rows,
                right=list(range(1, 9)),
                note=GROUP_NOTE,
            )
        )
    for report in reports:
        tag_items = sorted(report.per_tag.items(), key=lambda kv: (-kv[1].n, kv[0]))
        if not tag_items:
            continue
        shown = tag_items[:tags]
        note = GROUP_NOTE + (f" {len(tag_items) - len(shown)} more tags in --json." if len(tag_items) > len(shown) else "")
        sections.append(
            Section(
                title=f"Per tag: {_who(report)}",
                headers=["Tag", *_group_headers()],
                rows=[_group_row(name, g) for name, g in shown],
                right=list(range(1, 9)),
                note=note,
            )
        )
    sections.append(
        Section(
            title="Bands: coverage and accuracy",
            headers=["Band", *(f"{n}: coverage" for n in names), *(f"{n}: accuracy" for n in names)],
            rows=[
                [
                    band,
                    *(pct(Ratio(hits=r.bands[band].count, total=r.n)) for r in reports),
                    *(pct(r.bands[band].accuracy) for r in reports),
                ]
                for band in first.bands
            ],
            right=list(range(1, 2 * len(reports) + 1)),
        )
    )
    for report in reports:
        sections.append(reliability_section(report))
    sections.append(
        Section(
            title="Error stages (first match: retrieval, unresolved, decision, policy)",
            headers=["Stage", *names],
            rows=[[stage, *(str(r.overall.stages[stage]) for r in reports)] for stage in STAGES]
            + [["correct and acted on", *(str(r.n - sum(r.overall.stages.values())) for r in reports)]],
            right=list(range(1, len(reports) + 1)),
        )
    )
    sections.append(context_section(reports))
    for report in reports:
        section = arguments_section(report)
        if section is not None:
            sections.append(section)
    if errors:
        for report in reports:
            wrong = report.first_errors[:errors]  # in run order, kept by the run (evalstate)
            if wrong:
                total = sum(report.overall.stages.values())
                sections.append(
                    Section(
                        title=f"Errors: {_who(report)} (first {len(wrong)} of {total})",
                        headers=["Message", "Label", "Choice", "Conf.", "Band", "Stage"],
                        rows=[
                            [shorten(t.message), t.label, t.choice or "-", num(t.confidence, 2), t.band, t.stage or ""]
                            for t in wrong
                        ],
                        right=[3],
                    )
                )
    return sections


def reliability_section(report: EvalReport) -> Section:
    rows = []
    for b in report.reliability:
        bar = "#" * round((b.accuracy or 0.0) * 20) if b.count else ""
        gap = None if b.accuracy is None or b.mean_confidence is None else b.accuracy - b.mean_confidence
        rows.append(
            [f"{b.low:.1f}-{b.high:.1f}", str(b.count), num(b.mean_confidence), num(b.accuracy), num(gap), bar]
        )
    return Section(
        title=f"Reliability: {_who(report)} (ECE {num(report.ece)}, Brier {num(report.brier)})",
        headers=["Confidence", "Turns", "Mean confidence", "Accuracy", "Gap", "Accuracy (bar)"],
        rows=rows,
        right=[1, 2, 3, 4],
        note="Confidence is the recomputed one (the configured formula); unresolved turns have none and are left out.",
    )


def context_section(reports: Sequence[EvalReport]) -> Section:
    first = reports[0].context_bytes
    rows: list[list[str]] = []
    caveat = ""
    if first and first.tools_with_schema < first.tools:
        caveat = (
            f" Only {first.tools_with_schema} of {first.tools} tools have a schema (the rest count as {{}}), "
            "so these figures understate what loading full schemas costs."
        )
    if first:
        total = first.all_schemas or 1

        def line(name: str, value: float) -> list[str]:
            return [name, f"{value:,.0f}", f"{value / total * 100:.1f}%"]

        rows.append(line("All full schemas", first.all_schemas))
        rows.append(line("Snippets only (router input)", first.snippets_only))
        for r in reports:
            if r.context_bytes:
                rows.append(line(f"Snippets + {r.backend} top-3 schemas", r.context_bytes.snippets_top3))
                rows.append(line(f"Snippets + {r.backend} top-1 schema", r.context_bytes.snippets_top1))
    return Section(
        title="Context bytes (mean per turn)",
        headers=["Strategy", "Bytes", "Of all schemas"],
        rows=rows,
        right=[1, 2],
        note="Compact JSON: {name, schema} per tool, {name, snippet} per tool; nothing extra for a none choice, "
        "every schema for an unresolved turn." + caveat,
    )


# -- replay -------------------------------------------------------------------------------------


def replay_sections(report: ReplayReport, *, title: str = "Replay", show_all: bool = False) -> list[Section]:
    rows = []
    for r in report.rows:
        # also listed: a label gone from the catalog, and a turn with no recorded decision that is wrong now
        wrong_unrecorded = r.recorded_band is None and r.now_right is False
        if not (show_all or r.changed or r.fixed or r.broken or not r.label_in_catalog or wrong_unrecorded):
            continue
        # what changed, as the console's replay says it: "changed" alone did not tell a new choice
        # from the same choice in another band
        mark = " ".join(
            m
            for m, on in (
                ("unscored", not r.label_in_catalog),
                ("broken", r.broken),
                ("fixed", r.fixed),
                ("wrong", wrong_unrecorded),
                ("flip", r.choice_flipped),
                ("band", r.band_changed),
            )
            if on
        )
        # "gone": not an option of this catalog (a tool removed or renamed since); the note says so in full
        recorded = f"{r.recorded_choice} ({r.recorded_band}{'' if r.recorded_in_catalog else ', gone'})" if r.recorded_choice else ""
        rows.append(
            [
                str(r.index + 1),  # turns count from 1, as in the console
                shorten(r.message, 48),
                f"{r.label}{'' if r.label_in_catalog else ' (gone)'}" if r.label else "-",
                recorded or (f"- ({r.recorded_band})" if r.recorded_band else "not recorded"),
                f"{r.new_choice or '-'} ({r.new_band})",
                num(r.tv_distance, 2),
                mark,
            ]
        )
    note = report.summary_line() + (f"; mean TV distance {num(report.mean_tv)}" if report.mean_tv is not None else "")
    failed = [r for r in report.rows if r.new_band == "unresolved" and r.decision.error]
    if failed:  # "- (unresolved)" alone left a developer guessing why (a failing server, a bad answer)
        note += f"\n{len(failed)} turns unresolved now; the first, turn {failed[0].index + 1}: {shorten(failed[0].decision.error, 400)}"
    if not rows:  # nothing changed: no table of "-", one line that says so
        return [Section(title=title, headers=[], rows=[], note=note + " (--all lists every turn)")]
    return [
        Section(
            title=title,
            headers=["#", "Message", "Label", "Recorded", "Now", "TV", "Diff"],
            rows=rows,
            right=[0, 5],
            narrow_drop=[5],  # 80 columns: the ids keep their room (TV: the note's mean, --json per turn)
            note=note,
        )
    ]


# -- calibration --------------------------------------------------------------------------------


def calibration_sections(result: CalibrationResult) -> list[Section]:
    sections = []
    fit = result.fit
    if fit is not None:
        sections.append(
            Section(
                title=f"Local backend fit ({fit.folds}-fold, held-out)",
                headers=["Parameters", "Temperature", "None margin", "Held-out NLL", "Held-out accuracy"],
                rows=[
                    ["before", num(fit.before.temperature), num(fit.before.none_margin), num(fit.before_nll), pct(fit.before_accuracy)],
                    ["fitted", num(fit.after.temperature), num(fit.after.none_margin), num(fit.after_nll), pct(fit.after_accuracy)],
                ],
                right=[1, 2, 3, 4],
                note=fit.note,
            )
        )
    for level in result.levels:
        if level.same_as_default:
            continue
        sections.append(
            Section(
                title=f"Sweep: {_level_name(level.risk, result)} ({level.turns} turns)",
                headers=["High", "Medium", "Auto-executed", "Execute precision", "Confirm", "Confirm precision", "Fallback", "Missed reviews"],
                rows=[
                    [
                        f"{p.high:.2f}",
                        f"{p.medium:.2f}",
                        pct(Ratio(hits=p.executed, total=level.turns)),
                        pct(Ratio(hits=p.executed_correct, total=p.executed)),
                        pct(Ratio(hits=p.confirmed, total=level.turns)),
                        pct(Ratio(hits=p.confirmed_correct, total=p.confirmed)),
                        pct(Ratio(hits=p.fallback, total=level.turns)),
                        str(p.missed_reviews),
                    ]
                    + (["<- chosen"] if p.chosen else [""])
                    for p in level.sweep
                ],
                right=[0, 1, 2, 3, 4, 5, 6, 7],
                note=level.note,
            )
        )
        sections[-1].headers.append("")
    sections.append(
        Section(
            title=f"Suggested thresholds (target execute precision {result.target_precision:.2f}, confirm precision {result.confirm_precision:.2f})",
            headers=["Risk", "High", "Medium", "Auto-executed", "Execute precision", "95% lower bound", "From"],
            rows=[
                [
                    t.risk,
                    f"{t.high:.2f}",
                    f"{t.medium:.2f}",
                    str(t.executed),
                    pct(Ratio(hits=t.executed_correct, total=t.executed)),
                    num(t.precision_lower_bound),
                    t.source,
                ]
                for t in result.thresholds
            ],
            right=[1, 2, 3, 4, 5],
            note=f"fitted_for = \"{result.fitted_for}\". The lower bound (Wilson, 95%) says how far the data can be trusted: "
            "few auto-executed turns cannot certify a high precision, whatever the point estimate.",
        )
    )
    return sections


def _level_name(risk: str, result: CalibrationResult) -> str:
    if risk != "default":
        return f"risk {risk}"
    same = [lv.risk for lv in result.levels if lv.same_as_default]
    return f"default [policy], all auto-executable levels ({', '.join(same) or 'pooled'})"


# -- renderers ----------------------------------------------------------------------------------


def sections_markdown(sections: Sequence[Section], heading: str = "###") -> str:
    out: list[str] = []
    for s in sections:
        out.append(f"{heading} {_md(s.title)}")
        out.append("")
        if s.rows:
            out.append("| " + " | ".join(_md(h) for h in s.headers) + " |")
            out.append("| " + " | ".join("---:" if i in s.right else "---" for i in range(len(s.headers))) + " |")
            for row in s.rows:
                out.append("| " + " | ".join(_md(c) for c in row) + " |")
        else:
            out.append("(no rows)")
        if s.note:
            out.append("")
            out.append(_md(s.note))
        out.append("")
    return "\n".join(out)


def _md(text: str) -> str:
    """A table cell: control characters shown as escapes (a tag or title with ESC or U+202E acted on
    a terminal that showed the report, and reordered its line in a viewer), then pipes and
    HTML-looking text escaped, one line."""
    from .textsafe import visible

    return visible(text).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace("\n", " ")


def _fitted_widths(section: Section, shown, width: int) -> list[int | None]:
    """Column widths that keep each column's longest word whole (an option id like create_reminder,
    up to 24 cells) when the table must shrink: the widest column gives way first, never below its
    longest word. At 80 columns rich cut ids in two ("create_remi" / "nder") and left a message
    that folds at spaces anyway its room. None each: the table fits, or no such widths exist."""
    from rich.cells import cell_len

    n = len(section.headers)
    natural = [0] * n
    words = [0] * n
    for row in [section.headers, *section.rows]:
        for i, cell in enumerate(row[:n]):
            text = shown(cell)
            natural[i] = max(natural[i], max((cell_len(line) for line in text.splitlines()), default=0))
            words[i] = max(words[i], min(24, max((cell_len(w) for w in text.split()), default=0)))
    budget = width - (3 * n + 1)  # rich's padding and rules
    widths = [max(1, w) for w in natural]
    floors = [max(1, w) for w in words]
    if n:  # the widest column (a message: prose) may cut a long word; the ids beside it may not
        flex = max(range(n), key=lambda k: natural[k])
        floors[flex] = min(floors[flex], 8)
    if sum(widths) <= budget or sum(floors) > budget:
        return [None] * n
    excess = sum(widths) - budget
    while excess > 0:
        i = max((k for k in range(n) if widths[k] > floors[k]), key=lambda k: widths[k])
        widths[i] -= 1
        excess -= 1
    return list(widths)


def print_sections(sections: Sequence[Section], file: IO[str] | None = None, width: int | None = None) -> None:
    """Rich tables; every cell and title is Text (never markup)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from .textsafe import VisibleStream, encodable, visible

    target = file if file is not None else sys.stdout
    if isinstance(target, VisibleStream) and not target.data:
        # the CLI's stdout shows control characters as \x1b: rich's own styling codes went through
        # it too and a terminal showed "\x1b[1mSummary". Every text below is made visible here, so
        # rich writes to the real stream.
        target = target.stream
    encoding = getattr(target, "encoding", None)

    def shown(text: str) -> str:
        # escaped before rich measures it: a stream that cannot carry 请 gets \u8bf7, and the
        # table is laid out for what is printed (a UnicodeEncodeError otherwise)
        return encodable(visible(text), encoding)

    console = Console(file=VisibleStream(target, show=False), width=width, highlight=False, soft_wrap=False)
    if width is None and not console.is_terminal:
        console.width = 160  # piped to a file or another program: do not fold tables at 80 columns
    for s in sections:
        if s.narrow_drop and console.width < 100:
            keep = [i for i in range(len(s.headers)) if i not in s.narrow_drop]
            s = s.model_copy(
                update={
                    "headers": [s.headers[i] for i in keep],
                    "rows": [[row[i] for i in keep] for row in s.rows],
                    "right": [keep.index(i) for i in s.right if i in keep],
                }
            )
        table = Table(title=Text(shown(s.title), style="bold"), title_justify="left", show_lines=False)
        fitted = _fitted_widths(s, shown, console.width)
        for i, header in enumerate(s.headers):
            table.add_column(Text(shown(header)), justify="right" if i in s.right else "left", overflow="fold", width=fitted[i])
        for row in s.rows:
            table.add_row(*(Text(shown(cell)) for cell in row))
        if not s.rows:
            table.add_row(*(Text("-") for _ in s.headers))
        console.print(table if s.headers else Text(shown(s.title), style="bold"))
        if s.note:
            console.print(Text(shown(s.note), style="dim"))
        console.print()
