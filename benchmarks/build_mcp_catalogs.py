"""Merge per-server MCP catalogs into the catalogs an agent host would see, reproducibly.

    python benchmarks/build_mcp_catalogs.py                       # every catalog of the spec
    python benchmarks/build_mcp_catalogs.py --only mcp-dev --check  # fail if a written file differs

Reads benchmarks/data/mcp/merged.toml (which servers go in which catalog, and each server's id
prefix) and the unedited per-server catalogs in benchmarks/data/mcp/servers/ (with their
`<server>.annotations.json`), and writes benchmarks/data/mcp/<catalog>.toml:

- tool ids are namespaced `<prefix>.<tool id>` (must match ^[a-z][a-z0-9_.:-]{0,63}$);
- `category` is the server's name;
- `risk` comes from the tool's MCP annotations where present: readOnlyHint -> read,
  destructiveHint -> write; otherwise the importer's choice is kept;
- `when_to_use`, `title` and `schema` are the server's, unedited;
- two escalation options are appended, `ask_user` and `human_review` (risk and category "escalation"),
  with the spec's generic texts; the none option is `defer_to_llm`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from pathlib import Path

import tomli_w

ROOT = Path(__file__).resolve().parents[1]
MCP = ROOT / "benchmarks" / "data" / "mcp"
ID = re.compile(r"^[a-z][a-z0-9_.:-]{0,63}$")


def risk_of(tool: dict, note: dict | None) -> str:
    hints = (note or {}).get("annotations") or {}
    if hints.get("readOnlyHint") is True:
        return "read"
    if hints.get("destructiveHint") is True:
        return "write"
    return tool.get("risk", "read")


def build(name: str, spec: dict, servers_dir: Path) -> tuple[dict, list[str]]:
    entry = spec["catalogs"][name]
    tools: list[dict] = []
    lines: list[str] = []
    for server, prefix in entry["servers"]:
        data = tomllib.loads((servers_dir / f"{server}.toml").read_text(encoding="utf-8"))
        notes_path = servers_dir / f"{server}.annotations.json"
        notes = json.loads(notes_path.read_text(encoding="utf-8")) if notes_path.is_file() else {}
        for tool in data["tools"]:
            new_id = f"{prefix}.{tool['id']}"
            if not ID.fullmatch(new_id):
                raise SystemExit(f"build_mcp_catalogs: {name}: id {new_id!r} ({server}) is not a valid id; shorten the prefix")
            out = {"id": new_id}
            if "title" in tool:
                out["title"] = tool["title"]
            out["when_to_use"] = tool["when_to_use"]
            out["category"] = server
            out["risk"] = risk_of(tool, notes.get(tool["id"]))
            for key in ("keywords", "examples", "schema"):
                if key in tool:
                    out[key] = tool[key]
            tools.append(out)
        lines.append(f"{server} ({prefix}.*): {len(data['tools'])} tools")
    for option in ("ask_user", "human_review"):
        esc = spec["escalation"][option]
        tools.append({"id": option, "when_to_use": esc["when_to_use"], "category": "escalation", "risk": "escalation", "keywords": esc["keywords"]})
    ids = [t["id"] for t in tools]
    if len(ids) != len(set(ids)):
        raise SystemExit(f"build_mcp_catalogs: {name}: duplicate ids")
    catalog = {"name": name, "description": entry["description"], "none_option": "defer_to_llm", "tools": tools}
    return catalog, lines


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
    args = parser.parse_args(argv)
    spec = tomllib.loads(Path(args.spec).read_text(encoding="utf-8"))
    differs = 0
    for name in spec["catalogs"]:
        if args.only and name not in args.only:
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
