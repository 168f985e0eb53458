"""Merge per-server MCP catalogs into the catalogs an agent host would see, reproducibly.

    python benchmarks/build_mcp_catalogs.py                       # every catalog of the spec
    python benchmarks/build_mcp_catalogs.py --only mcp-dev --check  # fail if a written file differs

Reads benchmarks/data/mcp/merged.toml (which servers go in which catalog, and each server's id
prefix) and the unedited per-server catalogs in benchmarks/data/mcp/servers/, and merges them with
the product's own merge, `tui_router.mcp_merge.merge_servers`: the code `tui-router catalog
import-mcp --config` runs on live servers, so these files are that command's output:

- tool ids are namespaced `<prefix>.<tool id>`; `category` is the server's name;
- `risk`, `when_to_use`, `title` and `schema` are the single-server import's, unedited (risk from
  the tool's MCP annotations: readOnlyHint -> read, else openWorldHint (true by default) -> outbound,
  else write);
- the escalation options `ask_user` and `human_review` are appended with the texts of merged.toml
  (the same as the command's defaults); the none option is `defer_to_llm`.

`--from-servers HOSTCONFIG` runs the command itself on live servers (installed as
servers/SOURCES.md says) for each catalog, and compares what it writes with the committed file
(every id, text, risk and schema; the header comment aside). It never writes a catalog:

    python benchmarks/build_mcp_catalogs.py --only mcp-blind --from-servers benchmarks/data/mcp/hosts/local.json
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

import tomli_w

ROOT = Path(__file__).resolve().parents[1]
MCP = ROOT / "benchmarks" / "data" / "mcp"


def build(name: str, spec: dict, servers_dir: Path) -> tuple[dict, list[str]]:
    sys.path.insert(0, str(ROOT))
    from tui_router.mcp_merge import ServerTools, merge_servers

    entry = spec["catalogs"][name]
    parts: list[ServerTools] = []
    lines: list[str] = []
    for server, prefix in entry["servers"]:
        data = tomllib.loads((servers_dir / f"{server}.toml").read_text(encoding="utf-8"))
        parts.append(ServerTools(server=server, prefix=prefix, tools=data["tools"]))
        lines.append(f"{server} ({prefix}.*): {len(data['tools'])} tools")
    merged = merge_servers(parts, name=name, description=entry["description"], escalation=spec["escalation"])
    if merged.notes:
        raise SystemExit(f"build_mcp_catalogs: {name}: {'; '.join(merged.notes)}")
    return merged.data, lines


def import_command(name: str, spec: dict, host_config: str, out: Path) -> list[str]:
    """The `tui-router catalog import-mcp --config` command that builds catalog `name` from live servers."""
    entry = spec["catalogs"][name]
    command = ["tui-router", "catalog", "import-mcp", "--config", host_config, "--name", name, "--description", entry["description"], "--timeout", "90", "--out", str(out)]
    for server, prefix in entry["servers"]:
        command += ["--server", server]
        if prefix != server:
            command += ["--prefix", f"{server}={prefix}"]
    return command


def from_servers(name: str, spec: dict, host_config: str, committed: Path) -> int:
    """Run the command on live servers; 0 when it gives the committed catalog (header aside)."""
    import shlex
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / f"{name}.toml"
        command = import_command(name, spec, host_config, out)
        shown = ["<merged.toml's description>" if part == spec["catalogs"][name]["description"] else part for part in command]
        print("$ " + shlex.join(shown))
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{name}: the command failed (exit {done.returncode}):\n{done.stderr}")
            return 1
        built = tomllib.loads(out.read_text(encoding="utf-8"))
        same = built == tomllib.loads(committed.read_text(encoding="utf-8"))
        print(done.stderr.strip().splitlines()[-1])
        if same:
            print(f"{name}: the live import gives {committed.name} exactly (every id, text, risk and schema; the header comment aside)")
            return 0
        diff = subprocess.run(["tui-router", "catalog", "diff", str(committed), str(out)], capture_output=True, text=True)
        print(f"{name}: the live import differs from {committed.name} (kept as it is):\n{diff.stdout}{diff.stderr}")
        return 1


def render(name: str, catalog: dict, lines: list[str]) -> str:
    n = len(catalog["tools"]) - 2
    header = [
        f"# {name}: merged from real MCP servers' tool lists by benchmarks/build_mcp_catalogs.py (do not edit by hand).",
        "# Spec: benchmarks/data/mcp/merged.toml; sources: benchmarks/data/mcp/servers/ (SOURCES.md).",
        f"# {n} tools from {len(lines)} servers, plus ask_user and human_review; none option defer_to_llm.",
        *[f"#   {line}" for line in lines],
    ]
    return "\n".join(header) + "\n\n" + tomli_w.dumps(catalog)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default=str(MCP / "merged.toml"))
    parser.add_argument("--servers", default=str(MCP / "servers"))
    parser.add_argument("--out", default=str(MCP))
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a catalog file differs")
    parser.add_argument("--from-servers", metavar="HOSTCONFIG", help="run `tui-router catalog import-mcp --config HOSTCONFIG` on live servers and compare; writes nothing")
    args = parser.parse_args(argv)
    spec = tomllib.loads(Path(args.spec).read_text(encoding="utf-8"))
    differs = 0
    for name in spec["catalogs"]:
        if args.only and name not in args.only:
            continue
        if args.from_servers:
            differs += from_servers(name, spec, args.from_servers, Path(args.out) / f"{name}.toml")
            continue
        catalog, lines = build(name, spec, Path(args.servers))
        text = render(name, catalog, lines)
        path = Path(args.out) / f"{name}.toml"
        if args.check:
            same = path.is_file() and path.read_text(encoding="utf-8") == text
            differs += not same
            print(f"{name}: {'up to date' if same else 'DIFFERS'}")
        else:
            path.write_text(text, encoding="utf-8")
            print(f"{name}: wrote {path} ({len(catalog['tools'])} options)")
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
