"""The medium-band confirm dialog, after Posting's ConfirmationModal: y/n bound, Approve focused,
the result delivered to a callback. `c` re-routes through the option picker; escape decides later."""

from __future__ import annotations

from dataclasses import dataclass

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Static

from ...textsafe import visible
from ..format import fmt_prob, shorten
from ..view import BAND_STYLE, RISK_STYLE
from .picker import OptionPicker, PickerItem

# (outcome, rerouted_to): ("approved", None) | ("declined", None) | ("rerouted", "send_sms")
ConfirmResult = tuple[str, str | None]


@dataclass
class ConfirmRequest:
    index: int
    message: str
    choice: str
    when_to_use: str
    risk: str
    confidence: float | None
    band: str
    high: float | None
    medium: float | None
    next_options: list[tuple[str, float]]
    picker_items: list[PickerItem]
    reason: str = ""  # why a person is asked (medium band, or a risk that never auto-executes)
    arguments: str = ""  # the built arguments, valid or the problems (arguments_ui.confirm_arguments_text)


class ConfirmTurnModal(ModalScreen[ConfirmResult | None]):
    BINDINGS = [
        Binding("y", "approve", "Approve", id="confirm.approve", tooltip="Approve the proposed tool"),
        Binding("n", "decline", "Decline", id="confirm.decline", tooltip="Decline: no tool runs"),
        Binding("c", "choose", "Choose another", id="confirm.choose", tooltip="Re-route to another option"),
        Binding("escape", "later", "Later", id="confirm.later", tooltip="Close; the turn stays pending (Enter on its row reopens this)"),
        Binding("left,h", "app.focus_previous", "Previous", id="confirm.previous", show=False, tooltip="Previous button"),
        Binding("right,l", "app.focus_next", "Next", id="confirm.next", show=False, tooltip="Next button"),
        # the details scroll on a short terminal (80x24), and the focus sits on the buttons: without
        # these, a payment's arguments below the fold could not be read before approving it
        Binding("down", "scroll_details('down')", "Scroll down", id="confirm.scroll-down", show=False, tooltip="Scroll the details down"),
        Binding("up", "scroll_details('up')", "Scroll up", id="confirm.scroll-up", show=False, tooltip="Scroll the details up"),
        Binding("pagedown", "scroll_details('page_down')", "Page down", id="confirm.page-down", show=False, tooltip="Scroll the details a page down"),
        Binding("pageup", "scroll_details('page_up')", "Page up", id="confirm.page-up", show=False, tooltip="Scroll the details a page up"),
        # a modal screen hides the app's own bindings: F1 did nothing while the dialog was open
        Binding("f1,question_mark", "app.help", "Help", id="confirm.help", show=False, tooltip="Keys, bands and where things are saved"),
    ]

    def __init__(self, request: ConfirmRequest) -> None:
        super().__init__(id="confirm-modal")
        self.request = request
        self._box: Input | None = None  # set when the operator types on: the message box the keys go to
        self._shown = False  # painted once: before that, no key can be an answer to it

    def compose(self) -> ComposeResult:
        r = self.request
        band_style = BAND_STYLE.get(r.band, "bold")
        with Vertical(id="confirm-dialog") as dialog:
            dialog.border_title = f"Confirm turn {r.index + 1}"
            with VerticalScroll(id="confirm-message-scroll"):
                yield Static(Content(shorten(r.message, 600)), id="confirm-message")
            # the tool, the numbers, the arguments and the reason scroll, so on a short terminal
            # (80x24, 60x20) the buttons stay on screen under a message of several lines
            with VerticalScroll(id="confirm-body"):
                yield Static(
                    Content.assemble(
                        ("proposed ", "$text-muted"),
                        (visible(r.choice), "bold"),
                        "  ",
                        (r.risk, RISK_STYLE.get(r.risk, "")),
                        "\n",
                        (visible(r.when_to_use), "italic"),
                    ),
                    id="confirm-tool",
                )
                thresholds = f" (high ≥ {r.high:g}, medium ≥ {r.medium:g})" if r.high is not None and r.medium is not None else ""
                next_parts: list[str | tuple[str, str]] = [("next  ", "$text-muted")]
                for i, (option, p) in enumerate(r.next_options):
                    if i:
                        next_parts.append(("  ·  ", "$text-muted"))
                    next_parts += [visible(option), (f" {p:.2f}", "$text-muted")]
                if not r.next_options:
                    next_parts.append(("no other option", "$text-muted"))
                yield Static(
                    Content.assemble(
                        ("confidence ", "$text-muted"),
                        (fmt_prob(r.confidence), band_style),
                        "  ",
                        (r.band, band_style),
                        (thresholds, "$text-muted"),
                        "\n",
                        *next_parts,
                    ),
                    id="confirm-numbers",
                )
                if r.arguments:
                    yield Static(Content(r.arguments), id="confirm-arguments")
                if r.reason:
                    yield Static(Content.styled(visible(r.reason), "italic $text-muted"), id="confirm-reason")
            with Horizontal(id="confirm-buttons"):
                yield Button(Content("Approve (y)"), variant="success", id="approve")
                yield Button(Content("Decline (n)"), variant="error", id="decline")
                yield Button(Content("Choose another (c)"), variant="default", id="choose")
            yield Static(Content.styled("esc: decide later (stays pending; Enter on its row reopens this)", "$text-muted"), id="confirm-hint")
        yield Footer()  # this dialog's keys (y/n/c), not the log's underneath

    def on_mount(self) -> None:
        self.query_one("#approve", Button).focus()
        self._fit(self.app.size.height)
        self.call_after_refresh(self._painted)

    def _painted(self) -> None:
        self._shown = True

    def on_resize(self, event) -> None:
        self._fit(event.size.height)

    def _fit(self, height: int) -> None:
        self.set_class(height < 30, "-short")  # the console's SHORT: tighter margins, no hint line

    def on_key(self, event: events.Key) -> None:
        # A printable key the dialog does not bind, while the message box underneath had the focus:
        # the operator is typing the next message, not reading this dialog. Its letters used to go
        # on answering it ("Book the dentist": the `n` declined the turn, "tist" became the next
        # message). The dialog steps aside (the turn stays pending) and the keys go to the box:
        # keys already queued for this dialog (a terminal delivers a burst) until it has gone too.
        # Keys that reach the dialog before it is on screen were typed without seeing it: "yes,
        # and..." typed right after Enter lost its `y` (neither an answer nor in the box; a `n`
        # there could as well have declined the turn unseen). Before its first frame even y/n/c
        # are the next message's letters.
        if self._box is None:
            if not (event.is_printable and event.character) or (self._shown and event.key in self._bound_keys()):
                return
            below = self.app.screen_stack[-2].focused if len(self.app.screen_stack) > 1 else None
            if not isinstance(below, Input):
                return
            self._box = below
            self.dismiss(None)
            self.app.notify(
                f"Turn {self.request.index + 1} waits for confirmation: Enter on its row in the Decision log opens it.", markup=False
            )
        event.stop()
        event.prevent_default()
        if event.is_printable and event.character:
            self._box.insert_text_at_cursor(event.character)
        elif event.key in ("enter", "ctrl+j") and hasattr(self._box, "submit_now"):
            self._box.submit_now()

    def _bound_keys(self) -> set[str]:
        return {key.strip() for binding in self.BINDINGS if isinstance(binding, Binding) for key in binding.key.split(",")}

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        {"approve": self.action_approve, "decline": self.action_decline, "choose": self.action_choose}[event.button.id or "approve"]()

    def action_approve(self) -> None:
        self.dismiss(("approved", None))

    def action_decline(self) -> None:
        self.dismiss(("declined", None))

    def action_scroll_details(self, where: str) -> None:
        getattr(self.query_one("#confirm-body", VerticalScroll), f"scroll_{where}")(animate=False)

    def action_later(self) -> None:
        self.dismiss(None)

    def action_choose(self) -> None:
        r = self.request
        picker = OptionPicker(f"Re-route turn {r.index + 1} to", r.picker_items, preselect=r.next_options[0][0] if r.next_options else None)

        def picked(option: str | None) -> None:
            if option is None:
                return  # back to the dialog
            if option == r.choice:
                self.dismiss(("approved", None))
            else:
                self.dismiss(("rerouted", option))

        self.app.push_screen(picker, picked)
