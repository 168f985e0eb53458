"""`tui-router catalog import-mcp [--name N] [--out FILE] -- COMMAND [ARGS...]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(csub: argparse._SubParsersAction) -> None:
    parser = csub.add_parser(
        "import-mcp",
        help="write a catalog from an MCP server's tools/list",
        description="Start an MCP server over stdio (the command after --), list its tools and write a catalog TOML. "
        "Names that are not valid ids get a derived id and are reported; a tool whose definition is invalid is skipped and named. Needs the extra: pip install 'tui-router[mcp]'.",
    )
    parser.add_argument("--name", help="catalog name (default: the server's name)")
    parser.add_argument("--out", metavar="FILE", help="write the catalog here (default: print it); an existing file is never overwritten")
    parser.add_argument("--timeout", type=float, default=30.0, metavar="S", help="seconds to wait for the server (default 30)")
    parser.add_argument("server_command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]", help="how to start the MCP server")
    parser.set_defaults(handler=run_import, data_output=True)  # stdout is a TOML document


def run_import(args: argparse.Namespace) -> int:
    from ..mcp_import import MCPImportError, check_loads_back, import_mcp

    command = list(args.server_command)
    if command[:1] == ["--"]:
        command = command[1:]
    if args.timeout <= 0:
        raise MCPImportError("--timeout must be a positive number of seconds")
    out = Path(args.out) if args.out else None
    if out is not None and out.exists():
        raise MCPImportError(f"{out}: already exists; choose another --out (nothing was overwritten)")
    result = import_mcp(command, name=args.name, timeout=args.timeout)
    text = result.toml(source=" ".join(command))
    check_loads_back(text)
    for line in [*result.skipped, *result.notes]:
        print(f"tui-router: warning: {line}", file=sys.stderr)
    if out is None:
        sys.stdout.write(text)
        return 0
    from ..session import create_text_file

    try:
        create_text_file(out, text)  # whole or not at all, and never over a file created meanwhile
    except FileExistsError:
        raise MCPImportError(f"{out}: was created meanwhile; choose another --out (nothing was overwritten)") from None
    except OSError as exc:
        raise MCPImportError(f"{out}: cannot write the catalog ({exc.strerror or exc})") from None
    tools = len(result.catalog.tools)
    print(f"wrote {out}: catalog '{result.catalog.name}', {tools} tool{'s' if tools != 1 else ''} ({len(result.renamed)} renamed, {len(result.notes)} notes, {len(result.skipped)} skipped)", file=sys.stderr)
    return 0
