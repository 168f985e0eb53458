"""Aggregate figures on every independent set: never a message, never a per-turn row.

Runs the same in-process eval as `tui-router eval` on each set and prints one table of aggregate
metrics, one row per set, each marked with where its turns and catalog come from:

    written by us                                  labdesk, citydesk (benchmarks/data/blind)
    turns written by us, catalog real MCP (unedited)  mcp-blind, mcp-dev, mcp-train-a/b/c (benchmarks/data/mcp)
    public (nobody here)                           the held-out halves of benchmarks/data/public/*

    python benchmarks/independent_eval.py --backend bm25
    python benchmarks/independent_eval.py --sets mcp-blind,bfcl-live --by-tag
    python benchmarks/independent_eval.py --json

Blind sets (labdesk, citydesk, mcp-blind): nobody reads their turns or per-turn results, so this
script prints aggregates only, like benchmarks/blind_eval.py (whose conditions it shares: catalog
only by default, `--with-labels` for leave-one-out learning from the set's own labels).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from blind_eval import COLUMNS, _cell, aggregates  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
US = "written by us"
MCP = "turns written by us, catalog real MCP (unedited)"
PUBLIC = "public (nobody here)"

# name: (catalog, cases, provenance, blind)
SETS: dict[str, tuple[Path, Path, str, bool]] = {
    "labdesk": (DATA / "blind" / "labdesk.toml", DATA / "blind" / "labdesk-cases.toml", US, True),
    "citydesk": (DATA / "blind" / "citydesk.toml", DATA / "blind" / "citydesk-cases.toml", US, True),
    "mcp-blind": (DATA / "mcp" / "mcp-blind.toml", DATA / "mcp" / "mcp-blind-cases.toml", MCP, True),
    "mcp-blind2": (DATA / "mcp" / "mcp-blind.toml", DATA / "mcp" / "mcp-blind2-cases.toml", MCP, True),
    "mcp-dev": (DATA / "mcp" / "mcp-dev.toml", DATA / "mcp" / "mcp-dev-cases.toml", MCP, False),
    # training/development sets on servers in neither mcp-blind nor mcp-dev (may be read and fitted on)
    "mcp-train-a": (DATA / "mcp" / "mcp-train-a.toml", DATA / "mcp" / "mcp-train-a-cases.toml", MCP, False),
    "mcp-train-b": (DATA / "mcp" / "mcp-train-b.toml", DATA / "mcp" / "mcp-train-b-cases.toml", MCP, False),
    "mcp-train-c": (DATA / "mcp" / "mcp-train-c.toml", DATA / "mcp" / "mcp-train-c-cases.toml", MCP, False),
    "bfcl-live": (DATA / "public" / "bfcl" / "bfcl-live.toml", DATA / "public" / "bfcl" / "bfcl-live-heldout.toml", PUBLIC, False),
    "bfcl-multiple": (DATA / "public" / "bfcl" / "bfcl-multiple.toml", DATA / "public" / "bfcl" / "bfcl-multiple-heldout.toml", PUBLIC, False),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", help="decision backend (default: the configured one)")
    parser.add_argument("--with-labels", action="store_true", help="learn leave-one-out from the set's own labelled turns")
    parser.add_argument("--config", metavar="PATH", help="config file (default: as for tui-router)")
    parser.add_argument("--sets", help=f"comma-separated subset of: {', '.join(SETS)}")
    parser.add_argument("--json", action="store_true", help="print the aggregates as one JSON object")
    parser.add_argument("--by-tag", action="store_true", help="also one row per set and turn tag (counts and rates only)")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    from tui_router.catalog import load_catalog
    from tui_router.config import load_config
    from tui_router.decide import BACKENDS, resolve_backend
    from tui_router.errors import UserError, did_you_mean
    from tui_router.evaluate import missed_review, run_eval

    names = [s.strip() for s in args.sets.split(",")] if args.sets else list(SETS)
    for name in names:
        if name not in SETS:
            print(f"independent_eval: unknown set '{name}'{did_you_mean(name, list(SETS))}", file=sys.stderr)
            return 2
    try:
        config = load_config(args.config)
        backend = args.backend or config.backend
        if backend not in BACKENDS:
            print(f"independent_eval: unknown backend '{backend}'{did_you_mean(backend, BACKENDS)}", file=sys.stderr)
            return 2
        if not args.with_labels:
            config = config.model_copy(update={"local": config.local.model_copy(update={"examples": []})})
        rows: dict[str, dict] = {}
        tag_rows: dict[str, dict] = {}
        learning = model = ""
        for name in names:
            catalog_path, cases_path, provenance, blind = SETS[name]
            if not catalog_path.is_file() or not cases_path.is_file():
                print(f"independent_eval: {catalog_path} or {cases_path} is missing", file=sys.stderr)
                return 2
            report = run_eval([cases_path], config, backend=backend, catalog=load_catalog(str(catalog_path)), learn=args.with_labels)
            rows[name] = {"provenance": provenance, "blind": blind, **aggregates(report)}
            if args.by_tag:
                for tag, group in sorted(report.per_tag.items()):
                    if tag.startswith("src:"):  # one turn each: not an aggregate
                        continue
                    missed = missed_review([r for r in report.turns if tag in r.tags])
                    tag_rows[f"{name} / {tag}"] = {
                        "turns": group.n, "tool_turns": group.tool_cases, "top1": group.top1.value, "top1_acceptable": group.top1_acceptable.value,
                        "retrieval_recall": group.retrieval_recall.value, "none_turns": group.none_cases,
                        "none_recall": group.none_recall.value, "fallback_rate": group.fallback_rate.value,
                        "review_turns": missed.total, "missed_review_rate": missed.value,
                    }
            learning, model = report.learning, f"{report.backend} / {report.model}"
    except UserError as exc:  # names files and fields, never a turn's text
        print(f"independent_eval: {exc.message}", file=sys.stderr)
        return 2

    resolved = resolve_backend(backend)
    condition = "with labels (leave-one-out)" if args.with_labels else "catalog only"
    if args.json:
        out = {"backend": resolved, "model": model, "condition": condition, "learning": learning, "sets": rows}
        if args.by_tag:
            out["tags"] = tag_rows
        print(json.dumps(out))
        return 0
    print(f"backend: {resolved} ({'--backend' if args.backend else 'the configured default'}); model: {model}")
    print(f"condition: {condition}; learning: {learning}")
    print()
    print("| set | provenance | turns | " + " | ".join(COLUMNS) + " |")
    print("| --- | --- | ---: | " + " | ".join("---:" for _ in COLUMNS) + " |")
    for name, r in rows.items():
        cells = [r["top1"], r["top1_acceptable"], r["retrieval_recall"], r["none_precision"], r["none_recall"],
                 r["missed_review_rate"], r["wrong_execute_rate"], r["fallback_rate"], r["ece"]]
        shown = f"{name} (blind)" if r["blind"] else name
        print(f"| {shown} | {r['provenance']} | {r['turns']} | " + " | ".join(_cell(c) for c in cells) + " |")
    if args.by_tag:
        print()
        print("| set / tag | turns | tool turns | top-1 | top-1 (acc.) | retrieval recall | none turns | none R | fallback | review turns | missed review |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for key, r in tag_rows.items():
            print(f"| {key} | {r['turns']} | {r['tool_turns']} | {_cell(r['top1'])} | {_cell(r['top1_acceptable'])} | {_cell(r['retrieval_recall'])}"
                  f" | {r['none_turns']} | {_cell(r['none_recall'])} | {_cell(r['fallback_rate'])}"
                  f" | {r['review_turns']} | {_cell(r['missed_review_rate'])} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
