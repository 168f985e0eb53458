"""The option picker: a fuzzy filter over every option (tools, escalation options, none option).

Used by `l` (label a turn) and by "Choose another" in the confirm dialog.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from re import finditer

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.fuzzy import FuzzySearch
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, OptionList, Static
from textual.widgets.option_list import Option

from ...textsafe import visible
from ..view import RISK_STYLE
from ..widgets.safe_input import SafeInput

# At most this many options are listed: an OptionList lays out (wraps) every option it holds, about
# a second for 10,000 options at each keystroke; a last line says how many more match.
LIST_LIMIT = 300


@dataclass(frozen=True)
class PickerItem:
    id: str
    description: str
    risk: str = ""


class _FuzzySearch(FuzzySearch):
    """Textual's matcher, whose cache of each id's word starts (1,024 ids) was too small for a long
    catalog: every keystroke recomputed them all (half the time of a filter over 10,000 ids)."""

    @classmethod
    @lru_cache(maxsize=65536)
    def get_first_letters(cls, candidate: str) -> frozenset[int]:
        return frozenset({match.start() for match in finditer(r"\w+", candidate)})


@lru_cache(maxsize=65536)
def _folded(text: str) -> str:
    # each description folded once, not at every keystroke over a 10,000-tool catalog
    from ...textnorm import fold

    return fold(text)


def rank_items(items: list[PickerItem], query: str) -> list[tuple[PickerItem, tuple[int, ...]]]:
    """Items matching every word of the query (in any order), best first, with the matched offsets in the id.

    Each word is matched fuzzily against the id (short, so the matcher stays fast), or as a plain
    substring of the description (ranked below an id match); the scores add up.
    """
    from ...textnorm import fold

    # folded as retrieval folds text: "cafe" finds "Café", a fullwidth ｓｍｓ finds send_sms
    words = fold(query.strip()).split()
    if not words:
        return [(item, ()) for item in items]
    search = _FuzzySearch()
    ranked: list[tuple[float, int, PickerItem, tuple[int, ...]]] = []
    for order, item in enumerate(items):
        total, offsets = 0.0, set()
        description = _folded(item.description)
        for word in words:
            score, found = search.match(word, item.id)
            if score > 0:
                total += 1.0 + score
                offsets.update(found)
            elif word in description:
                total += 0.5
            else:
                break
        else:
            ranked.append((total, order, item, tuple(sorted(offsets))))
    ranked.sort(key=lambda r: (-r[0], r[1]))
    return [(item, offsets) for _, _, item, offsets in ranked]


def item_prompt(item: PickerItem, offsets: tuple[int, ...]) -> Content:
    name = Content(item.id)
    for offset in offsets:
        name = name.stylize("bold underline $text-accent", offset, offset + 1)
    return Content.assemble(
        name,
        "  ",
        (item.risk, RISK_STYLE.get(item.risk, "$text-muted")),
        "\n",
        (visible(item.description), "$text-muted"),
    )


class OptionPicker(ModalScreen[str | None]):
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="picker.cancel", tooltip="Close without choosing"),
        Binding("down", "move(1)", "Down", id="picker.down", show=False, tooltip="Next option"),
        Binding("up", "move(-1)", "Up", id="picker.up", show=False, tooltip="Previous option"),
    ]

    def __init__(self, title: str, items: list[PickerItem], preselect: str | None = None) -> None:
        super().__init__(id="picker-modal")
        self.title_text = title
        self.items = items
        self.preselect = preselect
        self._matched: tuple[str, list[PickerItem]] | None = None  # the last query and what it matched

    def compose(self) -> ComposeResult:
        with Vertical(id="picker-dialog") as dialog:
            # the review queue's title names a session file: its name is untrusted text
            dialog.border_title = Content(visible(self.title_text, single_line=True))
            yield SafeInput(placeholder="type to filter: fuzzy over ids, words of the description", id="picker-filter")
            yield OptionList(id="picker-list")
            yield Static(Content.styled("enter: choose · ↑↓: move · esc: cancel", "$text-muted"), id="picker-hint")
        yield Footer()  # this dialog's keys, not those of the screen underneath (whose letters type here)

    def on_mount(self) -> None:
        self._fill("")
        if self.preselect:
            options = self.query_one(OptionList)
            try:
                options.highlighted = options.get_option_index(self.preselect)
            except Exception:
                pass
        self.query_one("#picker-filter", Input).focus()

    def _fill(self, query: str) -> None:
        options = self.query_one(OptionList)
        options.clear_options()
        # typing on narrows: what matches the longer query is among what matched the shorter one (a
        # word's letters in order in the id, or the word in the description), so only those are ranked
        narrowing = self._matched is not None and self._matched[0].strip() and query.startswith(self._matched[0])
        pool = self._matched[1] if narrowing else self.items  # type: ignore[index]
        ranked = rank_items(pool, query)
        kept = {id(item) for item, _ in ranked}
        self._matched = (query, [item for item in pool if id(item) in kept])  # in catalog order: ties rank alike
        shown = ranked[:LIST_LIMIT]
        if not query.strip() and self.preselect and len(ranked) > LIST_LIMIT and all(item.id != self.preselect for item, _ in shown):
            # the label to keep is past the listed part of a long catalog: listed first, highlighted
            shown = [pair for pair in ranked if pair[0].id == self.preselect][:1] + shown[:-1]
        options.add_options(Option(item_prompt(item, offsets), id=item.id) for item, offsets in shown)
        options.highlighted = 0 if options.option_count else None
        if len(ranked) > len(shown):
            more = len(ranked) - len(shown)
            options.add_option(Option(Content.styled(f"… {more:,} more match: type more letters to narrow", "italic $text-muted"), disabled=True))
        if not options.option_count:  # an empty list said nothing, and enter only rang the bell
            shown = visible(query, single_line=True)
            options.add_option(Option(Content.styled(f"No option matches “{shown}”: fewer letters, or ctrl+u to clear.", "$text-muted"), disabled=True))

    def on_resize(self) -> None:
        # 120x40 down to 60x20 with the picker open: the highlighted option (the preselected label)
        # was left below the shrunken list, out of sight
        self.call_after_refresh(self.query_one(OptionList).scroll_to_highlight)

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._fill(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        options = self.query_one(OptionList)
        if options.highlighted is None:
            self.app.bell()
            return
        self.dismiss(options.get_option_at_index(options.highlighted).id)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_move(self, step: int) -> None:
        options = self.query_one(OptionList)
        if options.option_count:
            current = options.highlighted if options.highlighted is not None else -step
            options.highlighted = max(0, min(options.option_count - 1, current + step))

    def action_cancel(self) -> None:
        self.dismiss(None)
