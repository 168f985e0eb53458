"""`?` / F1: every key, what the bands mean, and where things are saved."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

KEYS: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "Anywhere",
        [
            ("ctrl+p", "command palette: every action by name"),
            ("f1 / ?", "this help (? when not typing)"),
            ("ctrl+s", "save the session under a new name"),
            ("f2", "show or hide the Catalog pane"),
            ("f10", "fill the screen with the focused pane, or restore it (escape restores too)"),
            ("tab / shift+tab", "move between panes"),
            ("q / ctrl+q", "quit (everything is already saved)"),
        ],
    ),
    (
        "Message box",
        [
            ("enter", "route the message (in the background)"),
            ("escape", "go to the Decision log"),
        ],
    ),
    (
        "Decision log (selected turn)",
        [
            ("↑ ↓", "select a turn; the panes follow"),
            ("pgup pgdn / home end", "a page of turns up or down / the first or last turn"),
            ("a", "label the turn with its choice (or re-routed option)"),
            ("l", "pick the label from every option (fuzzy filter)"),
            ("x", "clear the label"),
            ("u", "undo the last label change (a / l / x), several levels"),
            ("f", "send a pending turn to the fallback LLM command"),
            ("c", "cancel the running fallback command"),
            ("g", "build and validate the tool's arguments (palette: accept or edit them as the label)"),
            ("enter", "confirm a waiting turn, or read its fallback output"),
            ("i", "back to the message box"),
        ],
    ),
    (
        "Catalog pane (f2)",
        [
            ("type", "filter tools: words in any order, fuzzy"),
            ("↑ ↓", "move through the tools; the details follow"),
            ("escape", "back to the message box"),
        ],
    ),
    (
        "Confirm dialog (medium band)",
        [
            ("y", "approve the proposed tool"),
            ("n", "decline: no tool runs"),
            ("c", "choose another option (re-route)"),
            ("escape", "decide later: the turn stays pending"),
            ("← → / h l", "move between the buttons (enter presses one)"),
            ("↑ ↓ / pgup pgdn", "scroll the details (on a short terminal the arguments are below the fold)"),
            ("f1 / ?", "this help, over the dialog"),
        ],
    ),
    (
        "Replay",
        [
            ("r", "re-route every turn again"),
            ("escape / q", "leave the replay"),
        ],
    ),
    (
        "Review queue (palette: view: review queue)",
        [
            ("1-9", "label with the n-th most probable option"),
            ("a / l / x", "accept the choice / pick any option / clear"),
            ("s", "skip; n / p next / previous"),
            ("u", "undo the last label (several levels, across files)"),
            ("escape / q", "leave the queue (every label is already saved)"),
        ],
    ),
]

BANDS = (
    "Bands: high → execute (a proposal; outbound, payment and permission tools always confirm), "
    "medium → confirm, low or the none option → fallback pending (f), unresolved (an error or an "
    "invalid answer) → fallback pending. Confidence is recomputed from the probabilities, so a "
    "threshold means the same on every backend."
)


SAVED = "Every turn and every label is saved as it happens to the session file named in the header."


def help_sections(commands: list[tuple[str, str]] | None = None) -> list[tuple[str, list[tuple[str, str]]]]:
    """The keys, then `commands` (the palette's titles and descriptions, so the help lists every
    action the palette offers, by the same names)."""
    return [*KEYS, ("Command palette (ctrl+p: type part of a name)", commands)] if commands else list(KEYS)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,q,f1,question_mark", "close", "Close", id="help.close", tooltip="Close the help"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="help-dialog") as dialog:
            dialog.border_title = "Help"
            dialog.border_subtitle = "escape: close"
            with VerticalScroll(id="help-scroll"):
                # one two-column grid per section: a long description wraps within its column
                # (one Content wrapped it back under the keys, at 80 columns)
                for title, keys in help_sections(self.palette_commands()):
                    yield Static(Content.styled(title, "bold $text-accent"), classes="help-title")
                    with Grid(classes="help-keys"):
                        for key, what in keys:
                            yield Static(Content.styled(key, "bold"), classes="help-key")
                            yield Static(Content(what), classes="help-what")
                yield Static(Content(BANDS), classes="help-note")
                yield Static(Content.styled(SAVED, "$text-muted"), classes="help-note")
        yield Footer()

    def palette_commands(self) -> list[tuple[str, str]]:
        # the palette offered actions the help never named (session: open file, backend: use …)
        console = self.app.screen_stack[0]
        return [(c.title, c.help) for c in self.app.get_system_commands(console)]

    def on_mount(self) -> None:
        # at 80x24 the help is taller than the dialog: focus its scroll so the keys read the rest
        self.query_one("#help-scroll", VerticalScroll).focus()

    def action_close(self) -> None:
        self.dismiss(None)
