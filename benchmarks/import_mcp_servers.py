"""Import real MCP servers' catalogs, unedited, from a host config in Claude Desktop's `mcpServers` form.

For each server in the config this runs the product's own importer,

    tui-router catalog import-mcp --name <server> --out <DIR>/<server>.toml -- env K=V ... <command> <args>

(the MCP SDK starts a stdio server with a minimal environment, so the config's env values are passed
with `env`), and writes `<DIR>/<server>.annotations.json`: the MCP tool annotations (readOnlyHint,
destructiveHint, ...) of every listed tool, which the catalog itself does not keep and
`benchmarks/build_mcp_catalogs.py` reads to set each tool's risk.

    python benchmarks/import_mcp_servers.py --config benchmarks/data/mcp/hosts/local.json \
        --out benchmarks/data/mcp/servers [--only github gitlab] [--force]

The servers are not part of this repository: they are installed from the package registries into a
scratch folder outside it (benchmarks/data/mcp/servers/SOURCES.md says which, and how). The config's
env values are dummies: no server is asked to do anything but list its tools.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def server_command(entry: dict) -> list[str]:
    env = [f"{k}={v}" for k, v in (entry.get("env") or {}).items()]
    return ["env", *env, entry["command"], *entry.get("args", [])]


def annotations(command: list[str], timeout: float, catalog_path: Path) -> dict[str, dict]:
    """{catalog id: {"mcp_name", "annotations"}}: the importer keeps the listed tools in order, so the
    n-th catalog tool is the n-th tool the server lists (a renamed tool's id differs from its name)."""
    sys.path.insert(0, str(ROOT))
    import tomllib

    from tui_router.mcp_import import list_mcp_tools

    listed = asyncio.run(list_mcp_tools(command, timeout))
    ids = [tool["id"] for tool in tomllib.loads(catalog_path.read_text(encoding="utf-8"))["tools"]]
    if len(ids) != len(listed.tools):
        raise ValueError(f"{len(listed.tools)} tools listed now, {len(ids)} in the catalog")
    return {tool_id: {"mcp_name": tool["name"], "annotations": tool.get("annotations") or {}} for tool_id, tool in zip(ids, listed.tools, strict=True)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="host config JSON with an mcpServers object")
    parser.add_argument("--out", required=True, help="folder for <server>.toml and <server>.annotations.json")
    parser.add_argument("--only", nargs="*", help="import only these servers")
    parser.add_argument("--force", action="store_true", help="replace existing files")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args(argv)

    servers = json.loads(Path(args.config).read_text(encoding="utf-8"))["mcpServers"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name, entry in servers.items():
        if args.only and name not in args.only:
            continue
        toml_path, notes_path = out / f"{name}.toml", out / f"{name}.annotations.json"
        if toml_path.exists():
            if not args.force:
                print(f"{name}: {toml_path} exists (use --force)")
                continue
            toml_path.unlink()
        command = server_command(entry)
        done = subprocess.run(
            ["tui-router", "catalog", "import-mcp", "--name", name, "--timeout", str(args.timeout), "--out", str(toml_path), "--", *command],
            capture_output=True, text=True,
        )
        if done.returncode != 0:
            failed += 1
            print(f"{name}: FAILED: {(done.stderr or done.stdout).strip()[:400]}")
            continue
        try:
            notes = annotations(command, args.timeout, toml_path)
        except Exception as exc:  # the import worked; a second listing failing is reported, not fatal
            print(f"{name}: annotations not read: {exc}")
            notes = {}
        notes_path.write_text(json.dumps(notes, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{name}: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else 'ok'}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
