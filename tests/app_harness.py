"""Helpers for the console tests: a small purpose-built catalog, configs, a fixed clock, and a Pilot
driver that submits turns and waits for them. Bands are made deterministic by setting the thresholds
around each decision's actual confidence, so the tests survive changes to the scoring constants.
"""

from __future__ import annotations

import io
import sys
import tomllib
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from textual.message import Message

from tui_router.app.app import RouterConsole
from tui_router.config import Config, config_from_dict
from tui_router.route import build_router

COMMANDS = Path(__file__).parent / "commands"
FIXED_NOW = datetime(2026, 11, 30, 10, 4, 12, tzinfo=UTC)

CATALOG = """
name = "tiny"
description = "A small catalog for console tests"

[[tools]]
id = "create_reminder"
when_to_use = "Set a personal reminder to do something at a given time."
category = "calendar"
risk = "write"
keywords = ["remind", "reminder", "nudge"]
examples = ["Remind me to water the plants at 6pm."]

[[tools]]
id = "list_events"
when_to_use = "Show what is on the calendar for a day or a week."
category = "calendar"
risk = "read"
keywords = ["agenda", "calendar", "meetings"]

[[tools]]
id = "send_sms"
when_to_use = "Send a short text message to a phone number."
category = "notify"
risk = "outbound"
keywords = ["text", "sms"]

[[tools]]
id = "search_docs"
when_to_use = "Search the product documentation for an answer."
category = "support"
risk = "read"
keywords = ["docs", "documentation", "manual", "how"]

[[tools]]
id = "ask_user"
when_to_use = "Ask the user a clarifying question when the request is ambiguous."
risk = "escalation"

[[tools]]
id = "human_review"
when_to_use = "Hand the request to a person: risky, sensitive or out of policy."
risk = "escalation"
"""

REMINDER = "remind me to call the dentist tomorrow"
AGENDA = "show my calendar agenda for monday"
DOCS = "how do I export a report, check the documentation"


def write_catalog(folder: Path) -> Path:
    path = folder / "tiny.toml"
    path.write_text(CATALOG, encoding="utf-8")
    return path


def write_systemone_config(folder: Path, base_url: str, key_env: str) -> Path:
    """A config file in `folder`: the tiny catalog, the System One backend at `base_url`, its key in
    the environment variable `key_env` (the mcp-serve tests run it as a real server process)."""
    config = folder / "tui-router.toml"
    config.write_text(
        f'catalog = "{write_catalog(folder)}"\nbackend = "systemone"\n[systemone]\nbase_url = "{base_url}"\napi_key_env = "{key_env}"\n',
        encoding="utf-8",
    )
    return config


def make_config(folder: Path, **sections) -> Config:
    """A config file in `folder` using the tiny catalog; sessions land in folder/sessions.

    The console tests are about the console: they pin the local backend (fast, no model) unless a
    test passes another one."""
    catalog = write_catalog(folder)
    data = {"catalog": str(catalog), "backend": "local", "sessions_dir": str(folder / "sessions"), **sections}
    return config_from_dict(data, folder / "tui-router.toml")


def fallback_section(script: str, *args: str, timeout: float = 10.0) -> dict:
    return {"command": [sys.executable, str(COMMANDS / script), *args], "timeout": timeout}


def confidence_of(config: Config, message: str) -> tuple[str | None, float]:
    """What the real router decides for `message` under `config` (choice, confidence)."""
    router = build_router(config)
    decision = router.route(message)
    assert decision.confidence is not None, decision.error
    return decision.choice, decision.confidence


def thresholds_for(band: str, confidence: float) -> tuple[float, float]:
    """(high, medium) that put `confidence` in `band`."""
    eps = 1e-4
    if band == "high":
        assert confidence > eps
        return confidence - eps, 0.0
    if band == "medium":
        return min(1.0, confidence + eps), max(0.0, confidence - eps)
    assert confidence < 1.0 - eps
    return 1.0, confidence + eps


def make_app(config: Config, **kwargs) -> RouterConsole:
    kwargs.setdefault("clock", lambda: FIXED_NOW)
    kwargs.setdefault("session_id", "test-session")
    return RouterConsole(config, **kwargs)


class Recorder:
    """message_hook that keeps our own messages (the turn as facts)."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._seen: set[int] = set()

    def __call__(self, message: Message) -> None:
        # the hook sees a message at every node it bubbles through: keep it once
        if type(message).__module__ == "tui_router.app.messages" and id(message) not in self._seen:
            self._seen.add(id(message))
            self.messages.append(message)

    def of(self, kind: type) -> list:
        return [m for m in self.messages if isinstance(m, kind)]


async def settle(app: RouterConsole, pilot) -> None:
    """Wait for every worker (routing, fallback, file writes) and the messages they posted."""
    for _ in range(2):
        await app.workers.wait_for_complete()
        await pilot.pause()


async def submit(app: RouterConsole, pilot, message: str) -> None:
    """Type a message (set, not key by key: the text can be 100 KB) and press Enter."""
    from tui_router.app.widgets.message_input import MessageInput

    box = app.query_one("#message", MessageInput)
    box.focus()
    box.value = message
    await pilot.press("enter")
    await settle(app, pilot)


async def close_confirms(app: RouterConsole, pilot) -> None:
    """Leave every confirm dialog the turns opened for later (escape: nothing recorded)."""
    while type(app.screen).__name__ == "ConfirmTurnModal":
        await pilot.press("escape")
        await pilot.pause()


def screen_text(app: RouterConsole) -> str:
    """The screen as plain text lines (what a person sees), for layout assertions."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system="truecolor", record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens, simplify=True))
    return console.export_text()


def notifications(app: RouterConsole) -> list[str]:
    return [n.message for n in app._notifications]


def saved(app: RouterConsole) -> dict:
    """The session file as written on disk."""
    assert app.session.path is not None
    return tomllib.loads(Path(app.session.path).read_text(encoding="utf-8"))


async def run_palette(app: RouterConsole, pilot, title: str) -> None:
    """Open the command palette, search `title` and run it (the palette searches in the background)."""
    from textual.widgets import Input

    await pilot.press("ctrl+p")
    await pilot.pause()
    app.screen.query_one(Input).value = title
    for _ in range(60):
        await pilot.pause(0.05)
        if title in screen_text(app).split(title, 1)[-1]:
            break
    await pilot.press("enter")
    await pilot.pause()
