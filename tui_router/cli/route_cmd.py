"""`tui-router route MESSAGE`: one turn through the pipeline, as JSON or a short summary."""

from __future__ import annotations

import argparse
import json
import sys

from .common import add_common, config_from_args, warn_cache_problems


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("route", help="route one message and print the decision", description="Route one message: retrieve candidates, ask the decision model, band the answer.")
    parser.add_argument("message", help="the user message ('-' reads it from stdin)")
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object")
    parser.add_argument("--args", action="store_true", help="also build and validate the chosen tool's arguments ([arguments] in the config)")
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import UserError
    from ..route import build_router
    from ..textsafe import is_blank

    message, replaced = read_message(args.message)
    if is_blank(message):  # whitespace, or characters that draw nothing (U+200B, bidi controls)
        raise UserError("the message is empty: give the text to route (or '-' with text on stdin)")
    if replaced:
        print("tui-router: warning: the message was not valid UTF-8; the bad bytes were replaced with U+FFFD", file=sys.stderr)
    config = config_from_args(args)
    router = build_router(config)
    for warning in router.catalog.warnings:  # an unknown field is ignored: said, as eval says it
        print(f"tui-router: warning: {warning}", file=sys.stderr)
    try:
        # the console's and mcp-serve's policy: arguments for an execute or a confirm, invalid ones demote
        decision = router.route_turn(message, arguments=args.args)
    finally:
        router.backend.close()
    if args.json:
        out = decision.to_json()
        if args.args:
            out.setdefault("arguments", None)  # no tool chosen: nothing to build
        print(json.dumps(out, ensure_ascii=False))
    else:
        print(format_summary(decision))
    warn_cache_problems(*router.backend.load_problems(), router.backend.cache_problem())
    if decision.band.value == "unresolved":
        # a failing or misbehaving backend: the decision is printed, and the exit code says so
        print(f"tui-router: unresolved: {decision.error}", file=sys.stderr)
        return 1
    return 0


def read_message(value: str) -> tuple[str, bool]:
    """The message from argv or stdin as valid text, and whether bad bytes had to be replaced.

    Python hands undecodable argv bytes over as lone surrogates, which break every encoder after
    this point (the embedding backend among them), and a strict stdin read raises: decode the raw
    bytes with replacement instead."""
    if value == "-":
        raw = sys.stdin.buffer.read()
    else:
        raw = value.encode("utf-8", "surrogateescape")
    text = raw.decode("utf-8", "replace")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return text, True
    return text, False


def format_summary(decision) -> str:
    probs = sorted(decision.probabilities.items(), key=lambda kv: -kv[1])[:4]
    conf = "-" if decision.confidence is None else f"{decision.confidence:.2f}"
    lines = [
        f"choice      {decision.choice or '(none)'}  band {decision.band.value}  action {decision.action.value}",
        f"confidence  {conf} ({decision.formula}; high >= {decision.thresholds.high}, medium >= {decision.thresholds.medium})",
        "candidates  " + ", ".join(f"{c.id} {c.score:.2f}" for c in decision.candidates),
        "top options " + (", ".join(f"{k} {v:.2f}" for k, v in probs) or "- (no answer)"),  # unresolved: no distribution
        f"model       {decision.model} ({decision.backend}), {decision.latency_ms:.1f} ms",
    ]
    if decision.arguments is not None:
        made = decision.arguments
        lines.append(f"arguments   {json.dumps(made.values, ensure_ascii=False)}  {made.summary()}")
        if decision.demoted:
            lines.append("            invalid arguments: execute demoted to confirm")
    if decision.error:
        lines.append(f"error       {decision.error}")
    if decision.caution:
        lines.append(f"caution     {decision.caution}")
    return "\n".join(lines)
