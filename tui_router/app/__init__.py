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
    import os

    from ..textsafe import utf_encoding

    if os.environ.get("TERM", "").strip().lower() == "dumb":
        # Textual would draw anyway, and a terminal that cannot move the cursor shows its codes as text
        raise UserError(
            "the console needs a terminal that can move the cursor and TERM=dumb says this one cannot; "
            "run it with TERM=xterm-256color, or use `tui-router route`, `eval` or `queue`"
        )
    # Textual draws on stderr: in ASCII (PYTHONIOENCODING=ascii, LC_ALL=C with PYTHONUTF8=0) every
    # border and bar came out as \u2502 escapes and the screen was unreadable
    encoding = getattr(sys.__stderr__, "encoding", None) or getattr(sys.stdout, "encoding", None)
    if not utf_encoding(encoding):
        raise UserError(
            f"the console draws with UTF-8 but this terminal's output encoding is {encoding} "
            "(PYTHONIOENCODING, LC_ALL/LANG); run it with a UTF-8 locale (LANG=C.UTF-8), or use `tui-router route`, `eval` or `queue`"
        )


def harden_terminal_input() -> None:
    """Textual's Linux driver reads the terminal through terminal_input.TerminalDecoder: a byte
    that is not UTF-8 no longer kills the console, and ESC in a paste no longer scrambles it."""
    from .terminal_input import install

    install()


def live_open_notice(path: Path) -> str:
    """Said when a live file is opened: it is followed instead (the console never writes it)."""
    return (
        f"{path} is a live file the MCP server records, so the console never writes it: it is followed instead, "
        "its turns copied into a new session of this console's own, where your labels are saved."
    )


def live_open_refusal(path: Path) -> str:
    import shlex

    return (
        f"{path} is a live file the MCP server records, so the console never writes it; follow it with "
        f"tui-router open --follow {shlex.quote(str(path))} (its turns are copied into a session of the console's own)"
    )


def run_console(
    config: Config, session_path: str | Path | None = None, follow: str | Path | None = None, command_line: CommandLine | None = None
) -> int:
    """Open the console on a new session, or continue the session in `session_path`; with `follow`,
    add the turns a live session file receives as they arrive. `command_line` applies the command
    line's options to a config file the console reloads.

    The session file is claimed here and read by the console after its first frame (5,000 turns
    took a second before anything was drawn). A file that cannot be read ends the console with
    SessionError (exit 2, the file left untouched); a missing one, or any without a terminal to draw
    on, is said before anything is drawn.
    """
    from ..errors import UserError
    from ..session import is_live_file, load_session, looks_like_catalog_file
    from ..storage import claim_session_file, release_session_file

    notice = None
    if session_path and is_live_file(session_path):
        # the MCP server's recording has one writer: the console follows it into a session of its own
        if follow is not None and Path(follow).resolve() != Path(session_path).resolve():
            from ..errors import SessionError

            raise SessionError(live_open_refusal(Path(session_path)))
        follow, session_path, notice = session_path, None, live_open_notice(Path(session_path))
    # a catalog is refused by the reader, untouched: no lock file is made beside it
    if session_path and Path(session_path).is_file() and not looks_like_catalog_file(Path(session_path)):
        claim_session_file(session_path)  # a second console on the same file: one sentence, exit 2
    try:
        if session_path and not (Path(session_path).is_file() and not looks_like_catalog_file(Path(session_path))):
            load_session(session_path)  # missing, a folder, a catalog: the reader's sentence, at once
        session_id = None
        if follow is not None:
            from ..live import open_live
            from ..session import new_session_id

            follow = Path(follow)
            if not follow.is_dir():
                open_live(follow)  # a missing or broken live file: one sentence before anything is drawn
            if session_path and Path(session_path).resolve() == follow.resolve():
                from ..errors import SessionError

                raise SessionError(f"{follow}: give the live file to --follow and a different (or no) session FILE; the console never writes the live file")
            session_id = new_session_id(f"follow-{follow.stem}")
        try:
            check_terminal()
        except UserError:
            if session_path:  # nothing to paint first: a file that cannot be read is said first, as ever
                load_session(session_path)
            raise
        from .app import RouterConsole

        app = RouterConsole(
            config,
            session_id=session_id,
            follow=follow,
            command_line=command_line,
            notice=notice,
            open_path=Path(session_path) if session_path else None,
        )
    except BaseException:
        release_session_file(session_path)  # refused before drawing: the lock and its file go
        raise
    harden_terminal_input()
    app.run()
    if app.exit_error is not None:  # the file could not be read (its lock went at unmount)
        raise app.exit_error
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


def run_review(config: Config, files: list[Path], command_line: CommandLine | None = None) -> int:
    """Open the console on the review queue of these session files; quitting it leaves. The files
    are read after the first frame, in a worker; when not one of them reads, the console ends with
    their problems (SessionError, exit 2)."""
    check_terminal()
    from .app import RouterConsole

    app = RouterConsole(config, review_files=list(files), command_line=command_line)
    harden_terminal_input()
    app.run()
    if app.exit_error is not None:
        raise app.exit_error
    return app.return_code or 0
