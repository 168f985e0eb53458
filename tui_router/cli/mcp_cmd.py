"""`tui-router catalog import-mcp`: one MCP server (`-- COMMAND`), or every server of a host
configuration (`--config FILE`), into a catalog; `--update CATALOG` re-imports and says what changed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .common import positive_int


def register(csub: argparse._SubParsersAction) -> None:
    parser = csub.add_parser(
        "import-mcp",
        help="write a catalog from an MCP server's tools/list, or from every server of a host configuration",
        description="Start an MCP server over stdio (the command after --), list its tools and write a catalog TOML; or, with --config, "
        "every server of an MCP host configuration (Claude Desktop, Cursor: mcpServers; VS Code: servers), stdio or HTTP, merged into one catalog "
        "with ids <prefix>.<tool>. Names that are not valid ids get a derived id and are reported; a tool whose definition is invalid is skipped and named. "
        "With --update CATALOG: import again, list what changed and the labelled turns it orphans, and replace CATALOG only with --write. "
        "Needs the extra: pip install 'tui-router[mcp]'.",
    )
    parser.add_argument("--config", metavar="FILE", dest="host_config", help="an MCP host configuration (claude_desktop_config.json, .cursor/mcp.json, .vscode/mcp.json, ...): import every server in it")
    parser.add_argument("--server", action="append", default=[], metavar="NAME", help="with --config: import only this server (repeat for more)")
    parser.add_argument("--prefix", action="append", default=[], metavar="SERVER=PREFIX", help="with --config: ids of SERVER's tools start PREFIX. (default: the server's name; --update keeps the catalog's)")
    parser.add_argument("--input", action="append", default=[], metavar="ID=ENV_VAR", help="with --config: the value of a VS Code ${input:ID} comes from the environment variable ENV_VAR")
    parser.add_argument("--jobs", type=positive_int, default=4, metavar="N", help="with --config: servers started at once (default 4)")
    parser.add_argument("--description", metavar="TEXT", help="with --config: the catalog's description")
    parser.add_argument("--no-escalation", action="store_true", help="with --config: leave out the ask_user and human_review options")
    parser.add_argument("--name", help="catalog name (default: the server's name; with --config the configuration file's name)")
    parser.add_argument("--out", metavar="FILE", help="write the catalog here (default: print it); an existing file is never overwritten")
    parser.add_argument("--update", metavar="CATALOG", help="import again and compare with CATALOG: tools added, removed, renamed, changed; nothing is written without --write")
    parser.add_argument("--sessions", nargs="+", default=[], metavar="PATH", help="with --update: session files or folders whose labelled turns to check against the removed tools")
    parser.add_argument("--write", action="store_true", help="with --update: replace CATALOG (atomically) and relabel the turns of renamed tools in --sessions")
    parser.add_argument("--timeout", type=float, default=30.0, metavar="S", help="seconds to wait for each server (default 30)")
    parser.add_argument("server_command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]", help="how to start the MCP server")
    parser.set_defaults(handler=run_import, data_output=True)  # stdout is a TOML document


def _command(args: argparse.Namespace) -> list[str]:
    command = list(args.server_command)
    return command[1:] if command[:1] == ["--"] else command


def _check_options(args: argparse.Namespace, command: list[str]) -> None:
    from ..mcp_import import MCPImportError

    if args.timeout <= 0:
        raise MCPImportError("--timeout must be a positive number of seconds")
    if args.host_config and command:
        raise MCPImportError("give either --config FILE or a server command after --, not both")
    if not args.host_config:
        for flag, value in (("--server", args.server), ("--prefix", args.prefix), ("--input", args.input), ("--description", args.description), ("--no-escalation", args.no_escalation)):
            if value:
                raise MCPImportError(f"{flag} goes with --config FILE (the servers of a host configuration)")
    if args.update:
        if args.out:
            raise MCPImportError("--update writes CATALOG itself (with --write); leave out --out")
        if args.name or args.description or args.no_escalation:
            raise MCPImportError("--update keeps CATALOG's name, description and escalation options; leave out --name, --description and --no-escalation")
    else:
        for flag, value in (("--write", args.write), ("--sessions", args.sessions)):
            if value:
                raise MCPImportError(f"{flag} goes with --update CATALOG")


def run_import(args: argparse.Namespace) -> int:
    from ..mcp_import import MCPImportError

    command = _command(args)
    _check_options(args, command)
    if args.update:
        return _run_update(args, command)
    out = Path(args.out) if args.out else None
    if out is not None and out.exists():
        raise MCPImportError(f"{out}: already exists; choose another --out (nothing was overwritten)")
    if args.host_config:
        return _run_config(args, out)
    from ..mcp_import import check_loads_back, import_mcp

    result = import_mcp(command, name=args.name, timeout=args.timeout)
    text = result.toml(source=" ".join(command))
    check_loads_back(text)
    for line in [*result.skipped, *result.notes]:
        print(f"tui-router: warning: {line}", file=sys.stderr)
    if out is None:
        sys.stdout.write(text)
        return 0
    _create(out, text)
    tools = len(result.catalog.tools)
    print(f"wrote {out}: catalog '{result.catalog.name}', {tools} tool{'s' if tools != 1 else ''} ({len(result.renamed)} renamed, {len(result.notes)} notes, {len(result.skipped)} skipped)", file=sys.stderr)
    return 0


def _create(out: Path, text: str) -> None:
    from ..mcp_import import MCPImportError
    from ..session import create_text_file

    try:
        create_text_file(out, text)  # whole or not at all, and never over a file created meanwhile
    except FileExistsError:
        raise MCPImportError(f"{out}: was created meanwhile; choose another --out (nothing was overwritten)") from None
    except OSError as exc:
        raise MCPImportError(f"{out}: cannot write the catalog ({exc.strerror or exc})") from None


def _host_import(args: argparse.Namespace, *, name: str, description: str | None, inherited: dict[str, str], escalation: dict[str, Any] | None) -> Any:
    from ..mcp_hosts import parse_inputs, read_host_config
    from ..mcp_merge import import_host, parse_prefixes

    given = parse_prefixes(args.prefix)
    inputs = parse_inputs(args.input)
    config = read_host_config(args.host_config, inputs=inputs)
    return import_host(
        config,
        name=name,
        description=description,
        prefixes=given,
        inherited=inherited,
        only=args.server or None,
        timeout=args.timeout,
        jobs=args.jobs,
        escalation=escalation,
    )


def _default_name(config_path: str) -> str:
    from ..mcp_import import derive_id

    stem = Path(config_path).stem.lstrip(".") or "mcp"
    return derive_id(stem).replace(".", "-") or "mcp"


def _say_servers(merged: Any) -> None:
    for line in merged.skipped:
        print(f"tui-router: note: {line}", file=sys.stderr)
    for line in merged.failed:
        print(f"tui-router: server not imported: {line}", file=sys.stderr)
    for line in merged.notes:
        print(f"tui-router: warning: {line}", file=sys.stderr)


def _run_config(args: argparse.Namespace, out: Path | None) -> int:
    from ..mcp_import import check_loads_back

    merged = _host_import(args, name=args.name or _default_name(args.host_config), description=args.description, inherited={}, escalation={} if args.no_escalation else None)
    text = merged.toml(source=args.host_config)
    check_loads_back(text)
    _say_servers(merged)
    tools = sum(len(s.tools) for s in merged.servers)
    summary = f"catalog '{merged.catalog.name}': {tools} tool{'s' if tools != 1 else ''} from {len(merged.servers)} server{'s' if len(merged.servers) != 1 else ''}" + (
        f"; {len(merged.failed)} server{'s' if len(merged.failed) != 1 else ''} not imported" if merged.failed else ""
    )
    if out is None:
        sys.stdout.write(text)
        print(f"tui-router: {summary}", file=sys.stderr)
    else:
        _create(out, text)
        print(f"wrote {out}: {summary}", file=sys.stderr)
    return 1 if merged.failed else 0  # a partial catalog is written, and the exit code says it is partial


# ---------------------------------------------------------------- --update


def _run_update(args: argparse.Namespace, command: list[str]) -> int:
    from ..catalog import load_catalog
    from ..catalog_diff import diff_catalogs, format_diff, orphaned_turns, relabel
    from ..mcp_import import check_loads_back

    if getattr(sys.stdout, "data", False):
        sys.stdout.data = False  # a report for a person, not a TOML document
    if not args.host_config and not command:
        from ..mcp_import import MCPImportError

        raise MCPImportError("--update CATALOG needs where to import from: --config FILE or a server command after --")
    path = Path(args.update)
    old = load_catalog(path)
    escalation = {t.id: {"when_to_use": t.when_to_use, "keywords": list(t.keywords)} for t in old.tools if t.is_escalation}
    failed_servers: list[str] = []
    if args.host_config:
        from ..mcp_merge import prefixes_of

        merged = _host_import(args, name=old.name, description=old.description, inherited=prefixes_of(old), escalation=escalation)
        _say_servers(merged)
        data = merged.data
        failed_servers = merged.failed_servers
        header_source = args.host_config
        render = merged.toml
    else:
        from ..mcp_import import import_mcp

        result = import_mcp(command, name=old.name, timeout=args.timeout)
        for line in [*result.skipped, *result.notes]:
            print(f"tui-router: warning: {line}", file=sys.stderr)
        data = result.data
        data["description"] = old.description or data["description"]
        data["tools"] += [_tool_dict(t) for t in old.tools if t.is_escalation]  # kept as they were
        header_source = " ".join(command)
        render = result.toml
    data["none_option"] = old.none_option
    from ..catalog import parse_catalog

    kept = _keep_from_old(old, data, failed_servers, {})
    diff = diff_catalogs(old, parse_catalog(data, f"<{path} as imported now>"))
    _keep_from_old(old, data, [], {r.new: r.old for r in diff.renamed})  # a renamed tool keeps them too
    new = parse_catalog(data, f"<{path} as imported now>")
    for line in format_diff(diff, str(path), "imported now"):
        print(line)
    for line in kept:
        print(f"  (kept) {line}")
    orphans = orphaned_turns(diff, args.sessions) if args.sessions else []
    _print_orphans(orphans)
    if not args.write:
        if not diff.empty:
            print(f"nothing was written; rerun with --write to replace {path}" + (" and relabel the renamed tools' turns" if any(o.how == "renamed" for o in orphans) else ""))
        return 1 if not diff.empty else 0
    if diff.empty:
        return 0
    text = render(source=header_source)
    check_loads_back(text)
    _replace(path, text)
    print(f"wrote {path}: {len(new.tools)} options")
    for where, count in relabel(orphans):
        print(f"relabelled {count} turn{'s' if count != 1 else ''} in {where}")
    return 0


def _keep_from_old(old: Any, data: dict[str, Any], failed_servers: list[str], renamed: dict[str, str]) -> list[str]:
    """What the person added to the old catalog survives a re-import: keywords and examples of tools
    still there or renamed (`renamed`: new id -> old id; the importer writes neither), and the tools
    of a server that did not start this time (else they would read as removed)."""
    by_id = {t.id: t for t in old.tools}
    lines: list[str] = []
    for tool in data["tools"]:
        before = by_id.get(renamed.get(tool["id"], tool["id"]))
        if before is None or before.is_escalation:
            continue
        if before.keywords and "keywords" not in tool:
            tool["keywords"] = list(before.keywords)
        if before.examples and "examples" not in tool:
            tool["examples"] = list(before.examples)
    ids = {t["id"] for t in data["tools"]}
    for server in failed_servers:
        carried = [t for t in old.tools if t.category == server and t.id not in ids]
        if carried:
            at = next((i for i, t in enumerate(data["tools"]) if t.get("risk") == "escalation"), len(data["tools"]))
            data["tools"][at:at] = [_tool_dict(t) for t in carried]
            lines.append(f"{server}: did not start; its {len(carried)} tools are kept as they were")
    for tool in data["tools"]:
        for key in ("keywords", "examples"):
            if key in tool and not tool[key]:
                del tool[key]
    return lines


def _tool_dict(tool: Any) -> dict[str, Any]:
    """A catalog tool as its TOML table (empty lists and None left out)."""
    data = tool.model_dump(by_alias=True, exclude_none=True, mode="json") | {"risk": tool.risk.value}
    return {key: value for key, value in data.items() if value not in ([], ())}


def _print_orphans(orphans: list[Any]) -> None:
    if not orphans:
        return
    files = len({o.path for o in orphans})
    print(f"labelled turns naming a tool that is gone: {len(orphans)} in {files} file{'s' if files != 1 else ''}")
    for orphan in orphans:
        print(f"  {orphan.line()}" + ("  [live file: never written]" if orphan.live and orphan.how == "renamed" else ""))


def _replace(path: Path, text: str) -> None:
    from ..mcp_import import MCPImportError
    from ..session import atomic_write_text

    try:
        atomic_write_text(path, text)
    except OSError as exc:
        raise MCPImportError(f"{path}: cannot write the catalog ({exc.strerror or exc}); it was not changed") from None
