"""`tui-router mcp-serve [--http PORT] [--sessions DIR]`: the router as an MCP tool-search server."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import add_common, config_from_args, warn_cache_problems


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "mcp-serve",
        help="serve route_request and search_tools to agents over MCP (stdio or HTTP)",
        description="An MCP server (stdio by default; streamable HTTP on 127.0.0.1 with --http PORT) with two tools: "
        "route_request (which allowlisted tool fits a request, with band, action and advice) and search_tools "
        "(top-k tool descriptions and schemas). Every call is appended to a live session file "
        "(<sessions>/live/mcp-YYYY-MM-DD.toml, rotated by day and size) that `tui-router open --follow FILE|DIR` shows "
        "as it grows. Needs the extra: pip install 'tui-router[mcp]'.",
    )
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on http://127.0.0.1:PORT/mcp instead of stdio (0: any free port)")
    parser.add_argument("--sessions", metavar="DIR", help="folder for the live session files (default: the sessions folder's live/ subfolder)")
    parser.add_argument("--max-bytes", type=int, metavar="N", help="start a new live file when the next turn would take it past N bytes (default 1000000)")
    parser.add_argument("--no-record", action="store_true", help="answer calls without writing them to a session file")
    add_common(parser)
    parser.set_defaults(handler=run_mcp_serve)


def run_mcp_serve(args: argparse.Namespace) -> int:
    from ..mcp_server import MCPServeError, run_server
    from ..route import build_router

    if args.http is not None and not 0 <= args.http <= 65535:
        raise MCPServeError(f"--http {args.http} is not a port number (0-65535)")
    if args.max_bytes is not None and args.max_bytes < 1000:
        raise MCPServeError("--max-bytes must be at least 1000")
    config = config_from_args(args)
    folder = Path(args.sessions).expanduser() if args.sessions else config.sessions_path / "live"
    router = build_router(config)
    for warning in router.catalog.warnings:  # an unknown field is ignored: said, as route and eval say it
        print(f"tui-router: warning: {warning}", file=sys.stderr, flush=True)
    warn_cache_problems(*router.backend.load_problems(), router.backend.cache_problem())  # before the ready line: the catalog was embedded at build
    return run_server(router, folder, http_port=args.http, max_bytes=args.max_bytes, record=not args.no_record)
