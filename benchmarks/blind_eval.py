"""Aggregate figures on the blind check sets (benchmarks/data/blind): never a message, never a per-turn row.

The blind sets were written before the fitted-model work and nobody may read their turns or tune on
them (benchmarks/data/blind/README.md). This script runs the same in-process eval as `tui-router eval`
on each set and prints one table of aggregate metrics, one row per set.

    python benchmarks/blind_eval.py                      # configured default backend, catalog only
    python benchmarks/blind_eval.py --backend bm25
    python benchmarks/blind_eval.py --with-labels        # leave-one-out learning from the set's own labels
    python benchmarks/blind_eval.py --json               # the same aggregates as one JSON object
    python benchmarks/blind_eval.py --by-tag             # also one row per set and turn tag (counts and rates)

Conditions:
  catalog only (default)  the router sees only the set's catalog: `eval --no-learn`, with the config's
                          [local] examples dropped (they are labelled for other catalogs).
  --with-labels           `eval` as it runs by default: every other labelled turn of the set is taught
                          to backends that learn from labels, each turn held out when it is scored.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui_router.evaluate import EvalReport

ROOT = Path(__file__).resolve().parents[1]
BLIND = ROOT / "benchmarks" / "data" / "blind"
SETS = ("labdesk", "citydesk")

# the table columns: whole-set aggregates only, by design
COLUMNS = (
    "top-1",
    "top-1 (acc.)",
    "retrieval recall",
    "none P",
    "none R",
    "missed review",
    "wrong execute",
    "fallback",
    "ECE",
)


def aggregates(report: EvalReport) -> dict[str, float | int | None]:
    o = report.overall
    return {
        "turns": report.n,
        "top1": o.top1.value,
        "top1_acceptable": o.top1_acceptable.value,
        "retrieval_recall": o.retrieval_recall.value,
        "none_precision": o.none_precision.value,
        "none_recall": o.none_recall.value,
        "missed_review_rate": report.missed_review_rate.value,
        "wrong_execute_rate": report.wrong_execute_rate.value,
        "fallback_rate": o.fallback_rate.value,
        "ece": report.ece,
    }


def _cell(value: float | int | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", help="decision backend (default: the configured one)")
    parser.add_argument("--with-labels", action="store_true", help="learn leave-one-out from the set's own labelled turns")
    parser.add_argument("--config", metavar="PATH", help="config file (default: as for tui-router)")
    parser.add_argument("--sets", default=str(BLIND), metavar="DIR", help=argparse.SUPPRESS)  # for the tests
    parser.add_argument("--json", action="store_true", help="print the aggregates as one JSON object")
    parser.add_argument("--by-tag", action="store_true", help="also one row per set and turn tag (still aggregates: counts and rates)")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    from tui_router.catalog import load_catalog
    from tui_router.config import load_config
    from tui_router.decide import BACKENDS, resolve_backend
    from tui_router.errors import UserError, did_you_mean
    from tui_router.evaluate import missed_review, run_eval

    try:
        config = load_config(args.config)
        backend = args.backend or config.backend
        if backend not in BACKENDS:
            print(f"blind_eval: unknown backend '{backend}'{did_you_mean(backend, BACKENDS)}; use one of {', '.join(BACKENDS)}", file=sys.stderr)
            return 2
        if not args.with_labels:  # catalog only: labels kept for other catalogs must not leak in either
            config = config.model_copy(update={"local": config.local.model_copy(update={"examples": []})})
        folder = Path(args.sets)
        rows: dict[str, dict[str, float | int | None]] = {}
        tag_rows: dict[str, dict[str, float | int | None]] = {}
        learning = model = ""
        for name in SETS:
            catalog_path, cases_path = folder / f"{name}.toml", folder / f"{name}-cases.toml"
            if not catalog_path.is_file() or not cases_path.is_file():
                print(f"blind_eval: {catalog_path} or {cases_path} is missing", file=sys.stderr)
                return 2
            report = run_eval([cases_path], config, backend=backend, catalog=load_catalog(str(catalog_path)), learn=args.with_labels)
            rows[name] = aggregates(report)
            for tag, group in sorted(report.per_tag.items()):
                missed = missed_review([r for r in report.turns if tag in r.tags])  # as the report counts it
                tag_rows[f"{name} / {tag}"] = {
                    "turns": group.n,
                    "tool_turns": group.tool_cases,
                    "top1_acceptable": group.top1_acceptable.value,
                    "retrieval_recall": group.retrieval_recall.value,
                    "none_turns": group.none_cases,
                    "none_recall": group.none_recall.value,
                    "fallback_rate": group.fallback_rate.value,
                    "review_turns": missed.total,
                    "missed_review_rate": missed.value,
                }
            learning, model = report.learning, f"{report.backend} / {report.model}"
    except UserError as exc:  # messages name files and fields, never a turn's text
        print(f"blind_eval: {exc.message}", file=sys.stderr)
        return 2

    resolved = resolve_backend(backend)
    source = "--backend" if args.backend else "the configured default"
    condition = "with labels (leave-one-out)" if args.with_labels else "catalog only"
    if args.json:
        out = {"backend": resolved, "backend_from": source, "model": model, "condition": condition, "learning": learning, "sets": rows}
        if args.by_tag:
            out["tags"] = tag_rows
        print(json.dumps(out))
        return 0
    print(f"backend: {resolved} ({source}{', auto' if backend == 'auto' else ''}); model: {model}")
    print(f"condition: {condition}; learning: {learning}")
    print()
    print("| set | turns | " + " | ".join(COLUMNS) + " |")
    print("| --- | ---: | " + " | ".join("---:" for _ in COLUMNS) + " |")
    for name, r in rows.items():
        cells = [r["top1"], r["top1_acceptable"], r["retrieval_recall"], r["none_precision"], r["none_recall"],
                 r["missed_review_rate"], r["wrong_execute_rate"], r["fallback_rate"], r["ece"]]
        print(f"| {name} | {r['turns']} | " + " | ".join(_cell(c) for c in cells) + " |")
    if args.by_tag:
        print()
        print("| set / tag | turns | tool turns | top-1 (acc.) | retrieval recall | none turns | none R | fallback | review turns | missed review |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name, r in tag_rows.items():
            cells = [r["top1_acceptable"], r["retrieval_recall"]]
            print(f"| {name} | {r['turns']} | {r['tool_turns']} | " + " | ".join(_cell(c) for c in cells)
                  + f" | {r['none_turns']} | {_cell(r['none_recall'])} | {_cell(r['fallback_rate'])}"
                  + f" | {r['review_turns']} | {_cell(r['missed_review_rate'])} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
