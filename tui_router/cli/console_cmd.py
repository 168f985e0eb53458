"""The console: `tui-router` with no command opens it; `tui-router open FILE` continues a session.

Only argument handling here; Textual is imported inside tui_router.app, and only when a console
actually opens (so `route`, `eval` and `--help` never pay for it).
"""

from __future__ import annotations

import argparse
from functools import partial

from .common import add_common, apply_args, config_from_args


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "open",
        help="open a saved session in the console and continue it",
        description="Open a saved session file in the console; new turns and labels are saved back to it. "
        "A live file from `tui-router mcp-serve` (mcp-YYYY-MM-DD.toml) is never written: it is followed instead, "
        "as with --follow, into a new session of the console's own.",
    )
    parser.add_argument("file", metavar="FILE", nargs="?", help="a session file (TOML); optional with --follow")
    parser.add_argument(
        "--follow",
        metavar="LIVE",
        help="also follow a live session file from `tui-router mcp-serve`, or a folder of them (rotations included): "
        "new turns appear as they arrive and your labels are saved in this console's own session file, never in LIVE",
    )
    add_common(parser)
    parser.set_defaults(handler=run_open)


def _check_catalog(config) -> None:
    """Fail before drawing anything when the catalog cannot even be found (parsing happens later, in a worker)."""
    from ..catalog import resolve_catalog_path

    resolve_catalog_path(config.catalog_spec())


def run_console(args: argparse.Namespace) -> int:
    """The default handler: `tui-router` with no subcommand."""
    config = config_from_args(args)
    _check_catalog(config)
    from ..app import run_console as open_console

    return open_console(config, command_line=partial(apply_args, args=args))


def run_open(args: argparse.Namespace) -> int:
    """A corrupt or missing file: one clear line and exit 2 (the file is left untouched)."""
    if args.file is None and args.follow is None:
        from ..errors import UserError

        raise UserError("give a session FILE to open, or --follow LIVE to follow a live session file")
    config = config_from_args(args)
    _check_catalog(config)
    from ..app import run_console as open_console

    return open_console(config, args.file, follow=args.follow, command_line=partial(apply_args, args=args))
