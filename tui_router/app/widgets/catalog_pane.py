"""Catalog: every option grouped by category with its risk, a filter box and the selected tool's detail."""

from __future__ import annotations

import json

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from ...catalog import NONE_DESCRIPTION, Catalog, Tool
from ...textsafe import visible
from ..format import shorten
from ..view import RISK_STYLE
from .candidates import SHORT_RISK
from .panes import ScrollPane
from .safe_input import SafeInput

# At most this many tools are listed at once: an OptionList lays out (wraps) every option it holds,
# about 1 s for a 10,000-tool catalog per keystroke of the filter; past this the list says how many
# more match and the filter narrows them (escalation options and the none option are always listed).
LIST_LIMIT = 300

def tool_haystack(tool: Tool) -> str:
    from ...textnorm import fold  # lazily: the console draws its first frame before routing loads

    return fold(" ".join([tool.id, tool.when_to_use, tool.category or "", tool.title or "", *tool.keywords]))


def tool_matches(tool: Tool, words: list[str], haystack: str | None = None) -> bool:
    haystack = tool_haystack(tool) if haystack is None else haystack
    return all(word in haystack for word in words)


def filter_words(query: str) -> list[str]:
    """The filter's words folded as retrieval folds text (textnorm.fold: NFKC, case, accents, zero-width
    characters): `cafe` finds "Café", `ｓｍｓ` finds sms, and an accent typed as a combining mark (e +
    U+0301, as some keyboards send it) finds the precomposed é. With .lower() none of them did."""
    from ...textnorm import fold

    return fold(query).split()


def catalog_options(
    catalog: Catalog, query: str = "", width: int = 34, *, limit: int | None = LIST_LIMIT, haystacks: dict[str, str] | None = None
) -> list[Option]:
    """Category headers (disabled) and tools, escalation options and the none option last.

    Ids are padded so the risk words line up when the pane is wide enough for both. At most
    `limit` tools of the categories are listed; a last line says how many more match.
    `haystacks`: each tool's searchable text by id (tool_haystack), made once per catalog.
    """
    words = filter_words(query)
    options: list[Option] = []
    longest = max([len(t.id) for t in catalog.tools] + [len(catalog.none_option)])
    room = width - 3  # the option's own padding and the leading space
    pad = max(0, min(longest, room - 1 - max(len(t.risk.value) for t in catalog.tools)))
    groups = catalog.categories()
    escalation = [t for t in catalog.tools if t.is_escalation]

    def matches(tool: Tool) -> bool:
        return tool_matches(tool, words, haystacks.get(tool.id) if haystacks is not None else None)

    listed = hidden = 0
    hidden_groups = 0
    for category, tools in groups.items():
        shown = [t for t in tools if not t.is_escalation and matches(t)]
        if not shown:
            continue
        room_left = len(shown) if limit is None else max(0, limit - listed)
        if room_left == 0:
            hidden += len(shown)
            hidden_groups += 1
            continue
        options.append(Option(Content.styled(f"{visible(category)} ({len(shown)})", "bold $text-accent"), disabled=True))
        options.extend(_tool_option(t, pad, room) for t in shown[:room_left])
        listed += min(room_left, len(shown))
        hidden += len(shown) - min(room_left, len(shown))
    if hidden:
        where = f" (and {hidden_groups} more categor{'y' if hidden_groups == 1 else 'ies'})" if hidden_groups else ""
        options.append(Option(Content.styled(f"… {hidden:,} more match{where}: type in the filter to narrow", "italic $text-muted"), disabled=True))
    shown = [t for t in escalation if matches(t)]
    if shown:
        options.append(Option(Content.styled("escalation", "bold $text-accent"), disabled=True))
        options.extend(_tool_option(t, pad, room) for t in shown)
    from ...textnorm import fold

    none_text = fold(f"{catalog.none_option} {NONE_DESCRIPTION}")
    if all(word in none_text for word in words):
        options.append(Option(Content.styled("none option", "bold $text-accent"), disabled=True))
        options.append(Option(Content.styled(f" {catalog.none_option}", "italic"), id=catalog.none_option))
    if not options:  # an empty list said nothing: say why, and how to get the tools back
        options.append(Option(Content.styled(f"No option matches “{shorten(query, max(8, width - 24))}”.", "$text-muted"), disabled=True))
    return options


def _tool_option(tool: Tool, pad: int, room: int) -> Option:
    risk = tool.risk.value
    if max(len(tool.id), pad) + 1 + len(risk) > room:
        risk = SHORT_RISK.get(risk, risk)  # a long id in a narrow pane: the risk word shortened, never dropped
    # still too long (a 64-character id): cut with … rather than wrap the row over three lines; the
    # detail below the list shows the whole id
    shown = shorten(tool.id, room - 1 - len(risk))
    return Option(
        Content.assemble(" ", shown.ljust(pad), " ", (risk, RISK_STYLE.get(tool.risk.value, ""))),
        id=tool.id,
    )


def tool_detail(catalog: Catalog, option_id: str | None, query: str = "") -> Content:
    if option_id is None and query.strip():
        return Content.styled(
            "Words match ids, descriptions, categories and keywords, in any order. Change the filter, or clear it (ctrl+u in the filter box) to list every option.",
            "$text-muted",
        )
    if option_id is None:
        return Content.styled("Select an option to see its detail.", "$text-muted")
    if option_id == catalog.none_option:
        return Content.assemble((option_id, "bold"), "\n", NONE_DESCRIPTION, "\n", ("Always offered.", "$text-muted"))
    tool = catalog.get(option_id)
    if tool is None:
        return Content.styled(f"{option_id}: not in this catalog", "$error")
    lines: list[Content] = [
        Content.assemble((tool.id, "bold"), "  ", (tool.risk.value, RISK_STYLE.get(tool.risk.value, "")), ("  " + visible(tool.category or ""), "$text-muted")),
        Content(visible(tool.when_to_use)),
    ]
    if tool.title:
        lines.insert(1, Content.styled(visible(tool.title), "italic"))
    if tool.keywords:
        lines.append(Content.assemble(("keywords ", "$text-muted"), visible(", ".join(tool.keywords))))
    if tool.examples:
        lines.append(Content.styled("examples", "$text-muted"))
        lines.extend(Content(visible(f"• {e}")) for e in tool.examples)
    if tool.input_schema:
        lines.append(Content.styled("schema", "$text-muted"))
        lines.append(Content(visible(json.dumps(tool.input_schema, indent=2, ensure_ascii=False))))
    return Content("\n").join(lines)


class CatalogPane(Vertical):
    """The catalog browser. Loaded once the router is ready."""

    ALLOW_MAXIMIZE = True  # f10 / palette Maximize: the whole pane (widgets/panes.py)

    # the help promised escape here and nothing answered it; narrow, the pane covers the console, so
    # escape closes it (the app decides which)
    BINDINGS = [Binding("escape", "app.leave_catalog", "Back", id="catalog.back", tooltip="Back to the message box")]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.catalog: Catalog | None = None
        self._haystacks: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        # no select-all on focus: a letter typed in the list comes here (on_key) and adds to the filter
        yield SafeInput(placeholder="filter the catalog", id="catalog-filter", compact=True, select_on_focus=False)
        yield OptionList(id="catalog-list")
        with ScrollPane(id="catalog-detail-scroll"):
            yield Static(Content.styled("Loading the catalog…", "$text-muted"), id="catalog-detail")

    def failed(self, reason: str) -> None:
        """The catalog did not load: say so instead of "Loading the catalog…" forever."""
        self.query_one("#catalog-detail", Static).update(Content.styled(f"The catalog did not load: {reason}", "$error"))

    def set_catalog(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._haystacks = {t.id: tool_haystack(t) for t in catalog.tools}  # once, not per keystroke
        self.border_subtitle = Content(f"{visible(catalog.name, single_line=True)} · {len(catalog.option_ids)} options")
        self._fill("")

    def _fill(self, query: str) -> None:
        if self.catalog is None:
            return
        options = self.query_one("#catalog-list", OptionList)
        options.clear_options()
        self._filled_for = options.content_region.width
        options.add_options(catalog_options(self.catalog, query, options.content_region.width or 26, haystacks=self._haystacks))
        first = next((i for i in range(options.option_count) if not options.get_option_at_index(i).disabled), None)
        options.highlighted = first
        self._detail(options.get_option_at_index(first).id if first is not None else None, query)

    def on_resize(self) -> None:
        options = self.query_one("#catalog-list", OptionList)
        if self.catalog is not None and options.content_region.width != getattr(self, "_filled_for", None):
            highlighted = options.highlighted
            self._fill(self.query_one("#catalog-filter", Input).value)
            if highlighted is not None and highlighted < options.option_count:
                options.highlighted = highlighted

    def _detail(self, option_id: str | None, query: str = "") -> None:
        if self.catalog is not None:
            self.query_one("#catalog-detail", Static).update(tool_detail(self.catalog, option_id, query))

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "catalog-filter":
            event.stop()
            self._fill(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "catalog-filter":
            event.stop()
            self.query_one("#catalog-list", OptionList).focus()

    def on_key(self, event: events.Key) -> None:
        """Typing in the list filters it, as the help says ("type: filter tools"): the character
        moves focus to the filter box and is typed there. `?` keeps opening the help."""
        options = self.query_one("#catalog-list", OptionList)
        if self.app.focused is not options or not event.is_printable or not event.character or event.character == "?":
            return
        event.stop()
        event.prevent_default()
        box = self.query_one("#catalog-filter", Input)
        box.focus()
        box.insert_text_at_cursor(event.character)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        # typing a filter refills the list per key: a highlight posted for an earlier fill arrived
        # after the last one and showed a tool the filter no longer lists (or matching nothing)
        current = event.option_list.highlighted_option
        if current is not None and current.id == event.option.id:
            self._detail(event.option.id)

    def show_option(self, option_id: str) -> None:
        """Highlight an option (e.g. the selected turn's choice), clearing a filter that hides it."""
        options = self.query_one("#catalog-list", OptionList)
        try:
            index = options.get_option_index(option_id)
        except Exception:
            # no filter; in a catalog longer than the list shows (LIST_LIMIT), the id as the filter
            box = self.query_one("#catalog-filter", Input)
            before = box.value
            for query in ("", option_id):
                box.value = query
                self._fill(query)
                try:
                    index = options.get_option_index(option_id)
                    break
                except Exception:
                    continue
            else:
                # not an option of this catalog (a turn routed with another one): the id was left
                # in the filter box, as if typed, and the list said "No option matches 'send_sms'"
                box.value = before
                self._fill(before)
                return
        options.highlighted = index
        self._detail(option_id)
