"""The Textual console. Textual is imported only inside this package, and only when a console opens.

`run_console` and `run_replay` are the entry points the CLI calls; everything else the console
shows comes from the plain core (route, session, evaluate, fallback).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..config import Config

    CommandLine = Callable[[Config], Config]


def check_terminal() -> None:
    """The console draws on a terminal; without one say so in one sentence (exit 2)."""
    import sys

    from ..errors import UserError

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UserError(
            "the console needs an interactive terminal; for scripts use `tui-router route`, `eval` or `replay --headless`"
        )


def harden_terminal_input() -> None:
    """Textual's Linux driver reads the terminal through terminal_input.TerminalDecoder: a byte
    that is not UTF-8 no longer kills the console, and ESC in a paste no longer scrambles it."""
    from .terminal_input import install

    install()


def run_console(
    config: Config, session_path: str | Path | None = None, follow: str | Path | None = None, command_line: CommandLine | None = None
) -> int:
    """Open the console on a new session, or continue the session in `session_path`; with `follow`,
    add the turns a live session file receives as they arrive. `command_line` applies the command
    line's options to a config file the console reloads.

    A session file that cannot be read raises SessionError before anything is drawn (the file is
    left untouched).
    """
    from ..session import load_session, looks_like_catalog_file
    from ..storage import claim_session_file, release_session_file

    # a catalog is refused by the reader below, untouched: no lock file is made beside it
    if session_path and Path(session_path).is_file() and not looks_like_catalog_file(Path(session_path)):
        claim_session_file(session_path)  # a second console on the same file: one sentence, exit 2
    try:
        session = load_session(session_path) if session_path else None
        session_id = None
        if follow is not None:
            from ..live import open_live
            from ..session import new_session_id

            follow = Path(follow)
            if not follow.is_dir():
                open_live(follow)  # a missing or broken live file: one sentence before anything is drawn
            if session is not None and session.path is not None and session.path.resolve() == follow.resolve():
                from ..errors import SessionError

                raise SessionError(f"{follow}: give the live file to --follow and a different (or no) session FILE; the console never writes the live file")
            session_id = new_session_id(f"follow-{follow.stem}")
        check_terminal()
        from .app import RouterConsole

        app = RouterConsole(config, session=session, session_id=session_id, follow=follow, command_line=command_line)
    except BaseException:
        release_session_file(session_path)  # refused before drawing: the lock and its file go
        raise
    harden_terminal_input()
    app.run()
    return app.return_code or 0


def run_replay(config: Config, session_path: str | Path, command_line: CommandLine | None = None) -> int:
    """Open the console in replay mode: every turn of the session re-routed with the current setup."""
    from ..session import load_session

    session = load_session(session_path)
    check_terminal()
    from .app import RouterConsole

    app = RouterConsole(config, replay=session, command_line=command_line)
    harden_terminal_input()
    app.run()
    return app.return_code or 0


def run_review(config: Config, review, command_line: CommandLine | None = None) -> int:
    """Open the console on the review queue (tui_router.review.Review); quitting it leaves."""
    check_terminal()
    from .app import RouterConsole

    app = RouterConsole(config, review=review, command_line=command_line)
    harden_terminal_input()
    app.run()
    return app.return_code or 0
