"""`tui-router route MESSAGE`: one turn through the pipeline, as JSON or a short summary."""

from __future__ import annotations

import argparse
import json
import sys

from .common import add_common, config_from_args


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("route", help="route one message and print the decision", description="Route one message: retrieve candidates, ask the decision model, band the answer.")
    parser.add_argument("message", help="the user message ('-' reads it from stdin)")
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object")
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..route import build_router

    message = sys.stdin.read() if args.message == "-" else args.message
    config = config_from_args(args)
    router = build_router(config)
    try:
        decision = router.route(message)
    finally:
        router.backend.close()
    if args.json:
        print(json.dumps(decision.to_json(), ensure_ascii=False))
    else:
        print(format_summary(decision))
    if decision.band.value == "unresolved":
        # a failing or misbehaving backend: the decision is printed, and the exit code says so
        print(f"tui-router: unresolved: {decision.error}", file=sys.stderr)
        return 1
    return 0


def format_summary(decision) -> str:
    probs = sorted(decision.probabilities.items(), key=lambda kv: -kv[1])[:4]
    conf = "-" if decision.confidence is None else f"{decision.confidence:.2f}"
    lines = [
        f"choice      {decision.choice or '(none)'}  band {decision.band.value}  action {decision.action.value}",
        f"confidence  {conf} ({decision.formula}; high >= {decision.thresholds.high}, medium >= {decision.thresholds.medium})",
        "candidates  " + ", ".join(f"{c.id} {c.score:.2f}" for c in decision.candidates),
        "top options " + ", ".join(f"{k} {v:.2f}" for k, v in probs),
        f"model       {decision.model} ({decision.backend}), {decision.latency_ms:.1f} ms",
    ]
    if decision.error:
        lines.append(f"error       {decision.error}")
    if decision.caution:
        lines.append(f"caution     {decision.caution}")
    return "\n".join(lines)
