"""`tui-router catalog validate PATH` (and later `catalog import-mcp`)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("catalog", help="validate or import catalogs", description="Work with catalog files.")
    csub = parser.add_subparsers(dest="catalog_command", metavar="ACTION", required=True)
    validate = csub.add_parser("validate", help="check a catalog file and list every problem", description="Check a catalog file; exit 2 listing every problem.")
    validate.add_argument("path", help="catalog file or bundled catalog name")
    validate.set_defaults(handler=run_validate)
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
