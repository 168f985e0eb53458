"""The `tui-router` command: argument parsing and output only; the logic lives in the core modules.

Each subcommand lives in its own module with `register(subparsers)`; imports stay lazy so that
`tui-router route` never imports Textual.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from ..errors import UserError
from . import catalog_cmd, console_cmd, eval_cmd, locate_cmd, mcp_serve_cmd, review_cmd, route_cmd, server_cmd

# Modules that add subcommands. Each has register(subparsers) -> None.
COMMAND_MODULES = [route_cmd, catalog_cmd, locate_cmd, server_cmd, eval_cmd, console_cmd, mcp_serve_cmd, review_cmd]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tui-router",
        description="Triage how AI agents route requests to tools. With no command, opens the console.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument("--config", metavar="PATH", help="config file (default: $TUI_ROUTER_CONFIG, ./tui-router.toml, then tui-router/config.toml in the user config folder: $XDG_CONFIG_HOME, ~/.config when unset; `tui-router locate config` tells which)")
    parser.add_argument("--catalog", metavar="PATH", help="catalog file or bundled catalog name (default: demo)")
    parser.add_argument("--backend", metavar="NAME", help="decision backend: auto (default: semantic when installed, else local), local, bm25, systemone, semantic")
    # like --backend, before the command too: `tui-router --backend systemone --base-url URL replay ...`
    # was "invalid choice: 'http://...'" (the URL read as the command)
    parser.add_argument("--base-url", metavar="URL", help="System One server, e.g. http://127.0.0.1:8787/v1 (overrides [systemone] base_url)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    _note_options(sub)
    return parser


GLOBAL_OPTIONS = {"config": "--config", "catalog": "--catalog", "backend": "--backend", "base_url": "--base-url"}


def _note_options(sub: argparse._SubParsersAction) -> None:
    """Record on each command which global options it takes (those its own parser offers): one
    given before a command that does not use it (`tui-router --backend x queue`) is refused in
    _main, as it is after the command, rather than silently doing nothing."""
    for command in sub.choices.values():
        nested = [a for a in command._actions if isinstance(a, argparse._SubParsersAction)]
        if nested:
            for inner in nested:
                _note_options(inner)
            continue
        dests = {a.dest for a in command._actions}
        command.set_defaults(_parser=command, _takes=frozenset(d for d in GLOBAL_OPTIONS if d in dests))


def _version() -> str:
    from .. import __version__

    return __version__


def main(argv: Sequence[str] | None = None) -> int:
    from ..textsafe import VisibleStream

    # Untrusted text (messages, catalog and session texts, server and command output) reaches
    # every print: control characters are shown as \x1b escapes, never sent to the terminal.
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = VisibleStream(stdout), VisibleStream(stderr)
    from ..progress import set_progress_hook
    from .progress import install

    previous = install(stderr, sys.stderr)  # long first-start embedding: progress on a terminal
    try:
        return _main(argv)
    finally:
        set_progress_hook(previous)
        sys.stdout, sys.stderr = stdout, stderr


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    command: argparse.ArgumentParser | None = getattr(args, "_parser", None)
    if command is not None:
        for dest, option in GLOBAL_OPTIONS.items():
            if dest not in args._takes and getattr(args, dest, None) is not None:
                command.error(f"{option} does nothing for `{command.prog}`; leave it out (see `{command.prog} --help`)")
    if getattr(args, "data_output", False):
        sys.stdout.data = "toml"  # a TOML document: \uXXXX keeps it valid
    elif getattr(args, "json", False):
        sys.stdout.data = "json"
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        handler = _default_handler(parser)
    try:
        code = handler(args)
        sys.stdout.flush()  # a full disk under `> file` shows here, not as a traceback at exit
    except UserError as exc:
        for line in exc.lines():
            print(f"tui-router: {line}", file=sys.stderr)
        code = exc.exit_code
    except KeyboardInterrupt:
        print("tui-router: interrupted", file=sys.stderr)
        code = 130
    except BrokenPipeError:  # `tui-router eval ... | head`: the reader left; not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    except OSError as exc:
        if exc.errno not in _DISK_SAYS_NO:
            raise
        code = _disk_says_no(exc)
    return code if isinstance(code, int) else 0


def _disk_errnos() -> frozenset[int]:
    import errno

    return frozenset(getattr(errno, name) for name in ("ENOSPC", "EFBIG", "EDQUOT", "EIO") if hasattr(errno, name))


_DISK_SAYS_NO = _disk_errnos()


def _disk_says_no(exc: OSError) -> int:
    """A write the disk refused where no command catches it (mostly stdout redirected to a full
    disk): one sentence, exit 2, and stdout pointed at /dev/null so the exit's own flush is quiet."""
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    if exc.filename:
        print(f"tui-router: {exc.filename}: cannot write ({exc.strerror or exc})", file=sys.stderr)
    else:
        print(f"tui-router: cannot write the output ({exc.strerror or exc}); what was printed is incomplete", file=sys.stderr)
    return 2


def _default_handler(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    return console_cmd.run_console  # no subcommand: open the console


if __name__ == "__main__":
    sys.exit(main())
