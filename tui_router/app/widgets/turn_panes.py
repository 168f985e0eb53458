"""The Candidates and Distribution panes side by side, as the replay and review screens show a turn."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll

from .candidates import CandidatesView
from .distribution import DistributionView


def compose_turn_panes(prefix: str) -> ComposeResult:
    """`#{prefix}-top` holding `#{prefix}-candidates` and `#{prefix}-distribution` in their panes."""
    with Horizontal(id=f"{prefix}-top"):
        with VerticalScroll(id=f"{prefix}-candidates-pane", classes="pane") as pane:
            pane.border_title = "Candidates"
            yield CandidatesView(id=f"{prefix}-candidates")
        with VerticalScroll(id=f"{prefix}-distribution-pane", classes="pane") as pane:
            pane.border_title = "Distribution"
            yield DistributionView(id=f"{prefix}-distribution", empty="No turn selected.")  # no message box here
