"""Distribution: one widget drawing a bar per offered option (not N progress bars)."""

from __future__ import annotations

from textual.content import Content

from ...confidence import margin_of
from ...textsafe import visible
from ...workspace import outcome_trail
from ..format import fmt_prob, shorten
from ..view import BAND_STYLE, TurnView
from .text import PaneText

BAR = "█"
TRACK = "░"
PARTIAL = " ▏▎▍▌▋▊▉"


def bar(value: float, width: int) -> tuple[str, str]:
    """(filled, track) strings for a probability at a given width, with eighth-cell precision."""
    value = min(max(value, 0.0), 1.0)
    eighths = round(value * width * 8)
    full, rest = divmod(eighths, 8)
    filled = BAR * full + (PARTIAL[rest] if rest and full < width else "")
    return filled, TRACK * (width - len(filled))


EMPTY = "No turn selected. Type a message below and press Enter."


def render_distribution(view: TurnView | None, width: int, empty: str = EMPTY) -> Content:
    """The whole pane as one Content: band line, confidence line, thresholds, then the bars."""
    width = max(width, 20)
    if view is None:
        return Content.styled(empty, "$text-muted")
    if view.routing or view.decision is None:
        return Content.styled("Routing…" if view.routing else "Not routed.", "$text-muted")
    d = view.decision
    style = BAND_STYLE.get(d.band, "bold")
    parts: list[Content] = []
    # First line: the verdict. Bars next (they matter most at 80x24), numbers and thresholds after.
    head = Content.assemble(
        (d.band.upper(), style),
        " ",
        (fmt_prob(d.confidence), style),
        (" → ", "$text-muted"),
        (d.action, "bold"),
    )
    if d.outcome not in ("pending", "proposed") or d.history:
        head = head + Content.styled(f" · {visible(outcome_trail(d))}", "$text-muted")
    parts.append(head)
    if d.error:
        parts.append(Content.assemble(("error ", "bold $error"), (visible(d.error), "$error")))
    if d.caution:
        parts.append(Content.assemble(("caution ", "bold $warning"), (visible(d.caution), "$warning")))
    probs = sorted(d.probabilities.items(), key=lambda kv: (-kv[1], kv[0]))
    if not probs:
        parts.append(Content.styled("No distribution: the answer was not usable.", "$text-muted"))
    else:
        id_width = min(max(len(k) for k, _ in probs), max(10, width - 18))
        bar_width = max(4, width - id_width - 2 - 1 - 5)
        for option, p in probs:
            chosen = option == d.choice
            name = shorten(option, id_width).ljust(id_width)
            filled, track = bar(p, bar_width)
            tag = ("◆", "bold $success") if option == view.label else (" ", "")
            parts.append(
                Content.assemble(
                    ("▸ " if chosen else "  ", style if chosen else ""),
                    (name, style if chosen else ("italic $text-muted" if option == view.none_option else "")),
                    tag,
                    (filled, style.replace("bold ", "") if chosen else "$text-muted"),
                    (track, "$panel-lighten-2"),
                    (f" {p:4.2f}", "bold" if chosen else ""),
                )
            )
    numbers = [("reported ", "$text-muted"), fmt_prob(d.reported_confidence)]
    if d.probabilities:
        numbers += [(" · margin ", "$text-muted"), fmt_prob(margin_of(d.probabilities))]
    parts.append(Content.assemble(*numbers))
    if d.high is not None and d.medium is not None:
        parts.append(Content.styled(f"high ≥ {d.high:g} · medium ≥ {d.medium:g} ({view.formula})", "$text-muted"))
    if view.label:
        parts.append(Content.styled(f"◆ label {visible(view.label)}", "$text-muted"))
    return Content("\n").join(parts)


class DistributionView(PaneText):
    """Bars for the selected turn's distribution, redrawn to the pane's width."""

    def __init__(self, empty: str = EMPTY, **kwargs) -> None:
        super().__init__("", **kwargs)
        self.view: TurnView | None = None
        self.empty = empty  # what an empty pane says (the replay and review screens have no message box)

    def show(self, view: TurnView | None) -> None:
        self.view = view
        self._redraw()

    def on_resize(self) -> None:
        self._redraw()

    def _redraw(self) -> None:
        width = self.content_region.width or self.size.width or 40
        self.set_content(render_distribution(self.view, width, self.empty))
