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
    parser.add_argument("--serve-catalog", action="append", default=[], metavar="NAME=PATH", help="serve this catalog as NAME (repeat for per-team allowlists): over HTTP at /mcp/NAME; over stdio the one --use names; its turns go to <sessions>/NAME/")
    parser.add_argument("--use", metavar="NAME", help="over stdio: which --serve-catalog this client is served")
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
    if args.serve_catalog or args.use:
        return _run_several(args, config, folder)
    router = build_router(config)
    for warning in router.catalog.warnings:  # an unknown field is ignored: said, as route and eval say it
        print(f"tui-router: warning: {warning}", file=sys.stderr, flush=True)
    warn_cache_problems(*router.backend.load_problems(), router.backend.cache_problem())  # before the ready line: the catalog was embedded at build
    return run_server(router, folder, http_port=args.http, max_bytes=args.max_bytes, record=not args.no_record)


def _run_several(args: argparse.Namespace, config, folder: Path) -> int:
    """--serve-catalog NAME=PATH ...: per-team catalogs, chosen by path (HTTP) or by --use (stdio)."""
    from ..mcp_catalogs import build_served, parse_served, run_many
    from ..mcp_server import MCPServeError, run_server

    if getattr(args, "catalog", None):
        raise MCPServeError("give the catalogs with --serve-catalog NAME=PATH only (leave out --catalog)")
    pairs = parse_served(args.serve_catalog)
    if not pairs:
        raise MCPServeError("--use NAME picks one of the --serve-catalog NAME=PATH catalogs; give them")
    names = [name for name, _ in pairs]
    if args.http is None:
        if args.use is None and len(pairs) > 1:
            raise MCPServeError(f"over stdio one catalog is served: pick it with --use NAME (one of {', '.join(names)}), or serve them all with --http PORT")
        use = args.use or names[0]
        if use not in names:
            from ..errors import did_you_mean

            raise MCPServeError(f"--use {use}: no --serve-catalog has that name{did_you_mean(use, names)}; the names are {', '.join(names)}")
        pairs = [p for p in pairs if p[0] == use]
    elif args.use is not None:
        raise MCPServeError("--use is for stdio; over HTTP every catalog is served, each at /mcp/NAME")

    def warn(line: str) -> None:
        if line:
            print(f"tui-router: warning: {line}", file=sys.stderr, flush=True)

    stdio = args.http is None
    served = build_served(config, pairs, folder, record=not args.no_record and not stdio, max_bytes=args.max_bytes, warn=warn)
    if stdio:  # the one catalog, as a plain mcp-serve with its live files in <sessions>/NAME/
        [one] = served
        return run_server(one.search.router, one.folder, max_bytes=args.max_bytes, record=not args.no_record)
    return run_many(served, http_port=args.http)
