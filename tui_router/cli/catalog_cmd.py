"""`tui-router catalog validate PATH`, `catalog diff OLD NEW` (and `catalog import-mcp`, mcp_cmd.py)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("catalog", help="validate or import catalogs", description="Work with catalog files.")
    csub = parser.add_subparsers(dest="catalog_command", metavar="ACTION", required=True)
    validate = csub.add_parser("validate", help="check a catalog file and list every problem", description="Check a catalog file; exit 2 listing every problem.")
    validate.add_argument("path", help="catalog file or bundled catalog name")
    validate.set_defaults(handler=run_validate)
    diff = csub.add_parser(
        "diff",
        help="what changed between two catalogs, and the labelled turns it orphans",
        description="Tools added, removed, renamed (same schema, similar text) and changed (when_to_use, risk, schema, title, category) "
        "from OLD to NEW; with --sessions, the labelled turns naming a removed tool, with the likely new id. Exit 0 when nothing changed, 1 when something did. "
        "Nothing is written without --write, which relabels the turns of renamed tools (never a guess, never a live file).",
    )
    diff.add_argument("old", metavar="OLD", help="the catalog as it was")
    diff.add_argument("new", metavar="NEW", help="the catalog as it is now")
    diff.add_argument("--sessions", nargs="+", default=[], metavar="PATH", help="session files or folders whose labelled turns to check")
    diff.add_argument("--write", action="store_true", help="relabel the turns of renamed tools in --sessions (atomic, under the session lock)")
    diff.add_argument("--json", action="store_true", help="print one JSON object")
    diff.set_defaults(handler=run_diff)
    from . import mcp_cmd

    mcp_cmd.register(csub)


def run_validate(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from .. import tomlio
    from ..arguments import schema_problem
    from ..catalog import authoring_warnings, catalog_lines, load_catalog, located
    from ..errors import CatalogError

    catalog = load_catalog(args.path)
    path = Path(catalog.path or args.path)
    raw = tomlio.read_toml_file(path, "catalog", CatalogError).get("tools")  # `examples = []` is not `()` here
    raw_tools = raw if isinstance(raw, list) else None
    lines = catalog_lines(path, len(raw_tools) if raw_tools is not None else -1)
    # Checked here, not at every load: jsonschema is a heavy import and the console starts without it.
    # At run time the arguments step reports such a schema on every argument set it builds.
    problems = []
    for index, tool in enumerate(catalog.tools):
        if tool.input_schema and (problem := schema_problem(tool.input_schema)):
            shown = problem if len(problem) <= 300 else problem[:300] + "..."
            line = lines.tool(index, "schema") if lines is not None else None
            problems.append(located(str(path), line, f"tools[{index}] (id {tool.id!r}): field 'schema' is not valid JSON Schema: {shown}"))
    # advice a person writing a catalog needs (near-duplicate tools, empty fields...): never blocks
    advice = authoring_warnings(catalog, raw_tools, lines)
    if problems:
        noun = "problem" if len(problems) == 1 else "problems"
        # the warnings too, as the loader does: fixing the errors should not reveal a second list
        raise CatalogError(f"{catalog.path}: {len(problems)} {noun} in the catalog", problems + [f"warning: {w}" for w in catalog.warnings] + advice)
    for warning in catalog.warnings:
        print(f"tui-router: warning: {warning}", file=sys.stderr)
    for warning in advice:
        print(f"tui-router: {warning}", file=sys.stderr)
    cats = len(catalog.categories())
    escalation = len(catalog.escalation_ids)
    tools = len(catalog.tools) - escalation
    warned = len(catalog.warnings) + len(advice)
    print(
        f"{catalog.path}: ok - catalog '{catalog.name}', {tools} tool{'' if tools == 1 else 's'}"
        f" + {escalation} escalation option{'' if escalation == 1 else 's'} in {cats} categor{'y' if cats == 1 else 'ies'},"
        f" none option '{catalog.none_option}'"
        + (f"; {warned} warning{'' if warned == 1 else 's'} (on stderr), none blocking" if warned else "")
    )
    return 0


def run_diff(args: argparse.Namespace) -> int:
    import json

    from ..catalog import load_catalog
    from ..catalog_diff import diff_catalogs, format_diff, orphaned_turns, relabel
    from ..errors import UserError
    from .mcp_cmd import _print_orphans

    if args.write and not args.sessions:
        raise UserError("--write relabels turns in --sessions; give the session files or folders")
    old, new = load_catalog(args.old), load_catalog(args.new)
    diff = diff_catalogs(old, new)
    orphans = orphaned_turns(diff, args.sessions) if args.sessions else []
    written = relabel(orphans) if args.write else []
    if args.json:
        out = diff.to_json() | {"orphaned_turns": [o.model_dump() for o in orphans], "relabelled": [{"path": p, "turns": n} for p, n in written]}
        print(json.dumps(out, ensure_ascii=False))
    else:
        for line in format_diff(diff, args.old, args.new):
            print(line)
        _print_orphans(orphans)
        for where, count in written:
            print(f"relabelled {count} turn{'s' if count != 1 else ''} in {where}")
        if orphans and not args.write and any(o.how == "renamed" and not o.live for o in orphans):
            print("nothing was written; rerun with --write to relabel the renamed tools' turns")
    return 0 if diff.empty else 1
