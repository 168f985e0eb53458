"""Candidates: the retrieved options with BM25 score and risk; the label and retrieval misses marked."""

from __future__ import annotations

from textual.content import Content

from ...catalog import Catalog
from ...textsafe import visible
from ..format import shorten
from ..view import RISK_STYLE, TurnView
from .text import PaneText

# Used only when the pane is too narrow for the full risk names (the help screen lists them).
SHORT_RISK = {"outbound": "out", "permission": "perm", "escalation": "esc", "payment": "pay"}


def render_candidates(view: TurnView | None, catalog: Catalog | None, width: int) -> Content:
    width = max(width, 20)
    if view is None:
        return Content.styled("No turn selected.", "$text-muted")
    if view.routing or view.decision is None:
        return Content.styled(visible(view.waiting or "Routing…") if view.routing else "Not routed.", "$text-muted")
    d = view.decision
    total = len(catalog.option_ids) if catalog else None  # the same count as the header and the Catalog pane
    # a turn routed with another catalog (the catalog switched since): its candidates are not drawn
    # from this one, so "7 candidates of 4 options" was nonsense; say so instead of counting
    other = catalog is not None and any(c not in catalog and c != catalog.none_option for c in d.candidates)
    prefix = f"{d.retrieval} · " if d.retrieval else ""
    head = prefix + f"{len(d.candidates)} candidate" + ("s" if len(d.candidates) != 1 else "")
    if other:  # the longest that fits on one line
        tiers = [f"{head}, routed with another catalog", f"{head} of another catalog", f"{prefix}{len(d.candidates)} of another catalog"]
        head = next((t for t in tiers if len(t) <= width), tiers[-1])
    elif total is not None:
        head += f" of {total} options"
        if len(head) > width:  # one line in a narrow pane
            head = prefix + f"{len(d.candidates)} of {total} options"
    lines: list[Content] = [Content.styled(visible(head), "$text-muted")]
    if not d.candidates:
        lines.append(Content.styled("No candidates: nothing in the catalog matched.", "$text-muted"))
    longest = max([len(c) for c in d.candidates] + [8])
    risks = [(catalog.risk_of(c).value if catalog and catalog.risk_of(c) else "?") for c in d.candidates]
    short_risk = width - 9 - max([len(r) for r in risks] + [4]) < min(longest, 14)
    risk_width = 5 if short_risk else max([len(r) for r in risks] + [4])
    id_width = max(6, min(longest, width - 9 - risk_width))
    # best score first, whatever the kind of option (always-included escalation options used to
    # trail); a negative BM25 score (a word common to most tools) carries no evidence: shown as 0
    ordered = sorted(d.candidates, key=lambda c: -(d.scores.get(c) or 0.0)) if d.scores else list(d.candidates)
    for option in ordered:
        score = d.scores.get(option)
        if score is not None:
            score = max(score, 0.0)
        risk = catalog.risk_of(option) if catalog else None
        risk_text = risk.value if risk else "?"
        risk_shown = SHORT_RISK.get(risk_text, risk_text) if short_risk else risk_text
        labelled = option == view.label
        acceptable = option in view.acceptable
        marker = ("◆ ", "bold $success") if labelled else (("◇ ", "$success") if acceptable else ("  ", ""))
        chosen = option == d.choice
        lines.append(
            Content.assemble(
                marker,
                (shorten(option, id_width).ljust(id_width), "bold" if chosen else ""),
                (f" {score:5.2f}" if score is not None else "     -", "$text-muted"),
                " ",
                (risk_shown, RISK_STYLE.get(risk_text, "")),
            )
        )
    if view.label:
        label = visible(view.label)
        if view.label == view.none_option:
            lines.append(Content.styled(f"◆ label {label} (the none option, always offered)", "$text-muted"))
        elif view.label in d.candidates:
            lines.append(Content.styled(f"◆ label {label}", "$text-muted"))
        elif catalog is not None and view.label not in catalog:
            # a tool removed or renamed since the label was given: no retrieval could have offered it
            lines.append(
                Content.assemble(
                    ("not in catalog: ", "bold $warning"),
                    (f"the label {label} is not an option of catalog {visible(catalog.name, single_line=True)}", "$warning"),
                )
            )
        else:
            lines.append(
                Content.assemble(
                    ("retrieval miss: ", "bold $error"),
                    (f"the label {label} is not among the candidates", "$error"),
                )
            )
    return Content("\n").join(lines)


class CandidatesView(PaneText):
    def __init__(self, **kwargs) -> None:
        super().__init__("", **kwargs)
        self.view: TurnView | None = None
        self.catalog: Catalog | None = None

    def show(self, view: TurnView | None, catalog: Catalog | None) -> None:
        self.view = view
        self.catalog = catalog
        self._redraw()

    def on_resize(self) -> None:
        self._redraw()

    def _redraw(self) -> None:
        width = self.content_region.width or self.size.width or 40
        self.set_content(render_candidates(self.view, self.catalog, width))
