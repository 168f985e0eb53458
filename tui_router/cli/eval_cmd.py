"""`tui-router eval`, `tui-router replay`, `tui-router calibrate`: labelled sessions as an eval set.

Exit codes: 0 ok; 1 a --gate condition failed, or (replay) a labelled turn that was right is now
wrong; 2 bad input (no labelled turns, no label that is an option of the catalog, with --strict a
label that is not one, bad flags), as for every command.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .common import add_common, config_from_args, note_copies, positive_int, warn_cache_problems


def register(sub: argparse._SubParsersAction) -> None:
    ev = sub.add_parser(
        "eval",
        help="route every labelled turn afresh and measure",
        description="Route every labelled turn of the session files afresh and report retrieval, decision, "
        "band and calibration metrics. A backend that learns from labels (local, semantic) learns leave-one-out "
        "from the other labelled turns. A turn whose label is not an option of the catalog (a tool removed or "
        "renamed since) is skipped, with one line on stderr naming how many and which labels (--strict refuses).",
        epilog="exit codes: 0 ok; 1 a --gate condition failed; 2 bad input (no labelled turns, no label that is "
        "an option of the catalog, with --strict a label that is not one or a session made for another catalog); "
        "3 a shard failed (named on stderr; the same command again resumes from the finished ones).",
    )
    ev.add_argument("cases", nargs="+", metavar="CASES", help="session files or folders of them")
    ev.add_argument("--json", action="store_true", help="print one JSON object (per-turn results included)")
    ev.add_argument("--markdown", metavar="FILE", help="also write the tables as Markdown to FILE")
    ev.add_argument("--concurrency", type=positive_int, default=1, metavar="N", help="route N turns at a time (HTTP backends)")
    ev.add_argument("--compare", metavar="BACKEND", help="run a second backend on the same cases, side by side")
    ev.add_argument("--no-learn", action="store_true", help="do not let the backend learn from the cases (local, semantic)")
    ev.add_argument("--gate", metavar="CONDITIONS", help='fail (exit 1) unless e.g. "top1>=0.8,missed_review_rate<=0,ece<=0.1"')
    ev.add_argument("--errors", type=int, default=10, metavar="N", help="list the first N wrong turns (default 10; 0: none)")
    ev.add_argument(
        "--label-source",
        type=_label_sources,
        metavar="SOURCES",
        help='only labels from these sources, e.g. "review,hand", or --label-source=-confirm for all but confirm; sources: confirm, review, hand (no source = hand)',
    )
    ev.add_argument("--strict", action="store_true", help=_STRICT_HELP)
    add_scale_options(ev)
    add_common(ev)
    ev.set_defaults(handler=run_eval_cmd)

    rp = sub.add_parser(
        "replay",
        help="re-route recorded turns and diff against what was recorded",
        description="Re-route a session's recorded turns with the current catalog, backend and thresholds. "
        "Without --headless the console opens in replay mode. A turn whose label is not an option of the "
        "catalog (a tool removed or renamed since) is replayed and shown, but not scored (--strict refuses).",
        epilog="exit codes (--headless): 0 ok; 1 a labelled turn that was right is now wrong, or a --gate "
        "condition failed; 2 bad input (no turns, with --strict a label that is not an option or a session made "
        "for another catalog).",
    )
    rp.add_argument("sessions", nargs="+", metavar="SESSION", help="session files (folders with --headless)")
    rp.add_argument("--headless", action="store_true", help="print the diff instead of opening the console")
    rp.add_argument("--json", action="store_true", help="(headless) print one JSON object")
    rp.add_argument("--all", action="store_true", help="(headless) list every turn, not only changed ones")
    rp.add_argument("--gate", metavar="CONDITIONS", help='(headless) e.g. "broken<=0,flips<=3,top1>=0.8"')
    rp.add_argument(
        "--what-if",
        metavar="THRESHOLDS",
        help='(headless) re-band the recorded decisions under e.g. "high=0.8,medium=0.5" and list the turns whose band or action would change; routes and writes nothing',
    )
    rp.add_argument("--strict", action="store_true", help=_STRICT_HELP)
    add_common(rp)
    rp.set_defaults(handler=run_replay_cmd)

    cal = sub.add_parser(
        "calibrate",
        help="suggest thresholds per risk level (and fit the local backend)",
        description="With the local backend, fit its temperature and none margin on labelled turns (k held-out "
        "folds); then, for any backend, per risk level find the thresholds that maximise auto-execution subject "
        "to a target precision and zero missed reviews. Needs at least 50 labelled turns.",
    )
    cal.add_argument("cases", nargs="+", metavar="CASES", help="session files or folders of them")
    cal.add_argument("--target-precision", type=float, default=0.95, metavar="P", help="precision auto-executed turns must reach (default 0.95)")
    cal.add_argument("--confirm-precision", type=float, default=0.5, metavar="P", help="precision the confirm band must reach (default 0.5)")
    cal.add_argument("--folds", type=positive_int, default=5, metavar="K", help="held-out folds for the local backend's fit (default 5)")
    cal.add_argument("--write-config", metavar="PATH", help="merge the thresholds (and the local fit) into this TOML config")
    cal.add_argument("--no-learn", action="store_true", help="do not let the backend learn from the cases (local, semantic)")
    cal.add_argument("--json", action="store_true", help="print one JSON object")
    add_common(cal)
    cal.set_defaults(handler=run_calibrate_cmd)


LABEL_SOURCES = ("confirm", "review", "hand")
_STRICT_HELP = (
    "refuse (exit 2) a label that is not an option of the catalog, or a session made for a catalog of another name, "
    "instead of skipping (eval) or not scoring (replay) those turns"
)


def _label_sources(text: str) -> frozenset[str]:
    """"review,hand" keeps those; "-confirm" keeps every source but those."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    exclude = bool(parts) and all(p.startswith("-") for p in parts)
    names = [p.removeprefix("-") for p in parts]
    unknown = [n for n in names if n not in LABEL_SOURCES]
    if not names or unknown or (not exclude and any(p.startswith("-") for p in parts)):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give sources to keep (review,hand) or to drop (-confirm) among {', '.join(LABEL_SOURCES)}"
        )
    return frozenset(set(LABEL_SOURCES) - set(names)) if exclude else frozenset(names)


def _warn_examples(config) -> None:
    from ..config import unmatched_example_patterns

    for line in unmatched_example_patterns(config):
        print(f"tui-router: warning: {line}", file=sys.stderr)


def _catalog(config):
    from ..catalog import load_catalog

    catalog = load_catalog(config.catalog_spec())
    for warning in catalog.warnings:
        print(f"tui-router: warning: {warning}", file=sys.stderr)
    return catalog


def _print_gate(results, to_stderr: bool) -> bool:
    from ..evaluate import gate_lines

    for line in gate_lines(results):
        print(line, file=sys.stderr if to_stderr else sys.stdout)
    return all(r.passed for r in results)


# -- eval ---------------------------------------------------------------------------------------


def run_eval_cmd(args: argparse.Namespace) -> int:
    from ..decide import BACKENDS
    from ..errors import ConfigError, did_you_mean
    from ..evaluate import EVAL_GATE_METRICS, parse_gate

    config = config_from_args(args)
    _warn_examples(config)
    # `is not None`: an empty --gate "$GATE" (an unset CI variable) is refused, never a silent pass
    conditions = parse_gate(args.gate, EVAL_GATE_METRICS) if args.gate is not None else None
    if args.compare and args.compare not in BACKENDS:
        raise ConfigError(f"--compare: unknown backend '{args.compare}'{did_you_mean(args.compare, BACKENDS)}; use one of {', '.join(BACKENDS)}")
    if args.markdown:
        _check_report_target(args.markdown, args.cases)
    catalog = _catalog(config)
    runs = [_sharded_eval(args, config, catalog, None)]
    try:
        for line in runs[0].report.catalog_lines:  # what was left out, and why (the comparison leaves out the same)
            print(f"tui-router: warning: {line}", file=sys.stderr)
        if args.compare:
            runs.append(_sharded_eval(args, config, catalog, args.compare))
        return _eval_output(args, config, runs, conditions)
    finally:
        for run in runs:
            run.close()


def _eval_output(args: argparse.Namespace, config, runs, conditions) -> int:
    from ..evaluate import check_gate
    from ..report import eval_sections, print_sections

    reports = [run.report for run in runs]
    primary = reports[0]
    fitted = config.policy.fitted_for
    for report in reports:
        used = f"{config.policy.confidence} / {report.model}"
        if fitted and fitted != used:
            print(f"tui-router: warning: the thresholds were calibrated for '{fitted}'; this run uses '{used}'", file=sys.stderr)
    for report in reports:
        _warn_unresolved(report)
    warn_cache_problems(*(p for r in reports for p in (*r.load_problems, r.cache_problem)))
    note_copies(primary.copies)  # the comparison read the same files
    gate = check_gate(conditions, primary.gate_metrics()) if conditions else None
    sections = eval_sections(reports, errors=max(args.errors, 0))
    if args.json:
        out = primary.to_json(with_turns=False)
        out["turns"] = _TURNS
        if len(reports) > 1:
            out["compare"] = reports[1].to_json(with_turns=False) | {"turns": _TURNS}
        if gate is not None:
            out["gate"] = [{"line": r.line(), "passed": r.passed} for r in gate]
        _print_with_turns(out, runs)
    else:
        print(_header(primary, len(reports) > 1))
        print_sections(sections)
    passed = gate is None or _print_gate(gate, to_stderr=args.json)
    if args.markdown:  # after the printed results: a report the disk refuses does not take them with it
        _write_markdown(args.markdown, reports, sections, _command_line(args))
    return 0 if passed else 1


_TURNS = "\u0000turns of this run\u0000"  # where each run's turns are streamed into the JSON


def _print_with_turns(out: dict, runs) -> None:
    """The JSON object, each run's "turns" array streamed from its shards' results (never all in
    memory): the same text json.dumps of the whole object would give."""
    pieces = json.dumps(out, ensure_ascii=False).split(json.dumps(_TURNS))
    write = sys.stdout.write
    for piece, run in zip(pieces, runs, strict=False):
        write(piece)
        write("[")
        for i, line in enumerate(run.turn_lines()):
            write(line if i == 0 else ", " + line)
        write("]")
    write(pieces[-1] + "\n")


def add_scale_options(parser: argparse.ArgumentParser) -> None:
    """--jobs, --shard, --engine, --ray-address, --work-dir: how a big run is cut and where it runs."""
    parser.add_argument("--jobs", type=positive_int, default=1, metavar="N", help="route in N processes, each loading the model once (default 1)")
    parser.add_argument(
        "--shard", type=_shard, metavar="I/N",
        help="route only the I-th of N equal slices of the turns (CI jobs splitting a suite); its results are kept "
        "(--work-dir), and a run without --shard uses them",
    )
    parser.add_argument("--engine", choices=("local", "ray"), default="local", help="local processes (default) or Ray (the ray extra)")
    parser.add_argument("--ray-address", metavar="ADDRESS", help="a running Ray cluster (ray://host:10001, auto); default: start a local Ray")
    parser.add_argument(
        "--work-dir", metavar="DIR",
        help="keep the finished shards' results in DIR (default: the user cache, removed once the run is done); a rerun resumes from them",
    )


def _shard(text: str) -> tuple[int, int]:
    number, sep, count = text.partition("/")
    try:
        i, n = int(number), int(count)
    except ValueError:
        i = n = 0
    if not sep or n < 1 or not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"{text!r}: write I/N with 1 <= I <= N, e.g. 2/4")
    return i - 1, n


def _sharded_eval(args: argparse.Namespace, config, catalog, backend):
    from ..engines import make_engine
    from ..errors import UserError
    from ..evalrun import RunProgress, run_eval_shards

    if args.ray_address and args.engine != "ray":
        raise UserError("--ray-address needs --engine ray")
    raw = getattr(sys.stderr, "stream", sys.stderr)  # the real stderr: its \r must act
    try:
        tty = raw.isatty()
    except (AttributeError, ValueError):
        tty = False
    run = run_eval_shards(
        args.cases, config, catalog=catalog, backend=backend, learn=not args.no_learn, concurrency=args.concurrency,
        label_sources=args.label_source, strict=args.strict, engine=make_engine(args.engine, args.jobs, args.ray_address),
        jobs=args.jobs, shard=args.shard, store_root=Path(args.work_dir) if args.work_dir else None, keep_parts=bool(args.work_dir),
        with_turns=args.json, keep_errors=max(args.errors, 0), progress=RunProgress(raw, "eval") if tty else None,
    )
    if run.store_problem:
        print(f"tui-router: warning: {run.store_problem}", file=sys.stderr)
    if args.shard is not None:
        (lo, hi), where = run.ranges[0], run.store.dir if run.store is not None and not run.store_problem else None
        kept = f"; its results are kept in {where} for a run without --shard" if where else ""
        print(f"tui-router: note: shard {args.shard[0] + 1} of {args.shard[1]}: turns {lo + 1}-{hi} of the run{kept}", file=sys.stderr)
    return run


def _warn_unresolved(report) -> None:
    """A dead server left every turn "unresolved" with its reason only in the JSON: say why, once."""
    from ..report import shorten

    first = report.first_unresolved  # kept by the run in run order (evalstate), with the count
    if first is not None:
        print(
            f"tui-router: warning: {report.overall.unresolved} of {report.n} turns unresolved ({report.backend}); "
            f"the first, {first.source} turn {first.index + 1}: {shorten(first.error or 'no reason given', 400)}",
            file=sys.stderr,
        )


def _header(report, compared: bool) -> str:
    files = ", ".join(report.files)
    return (
        f"eval: {report.n} labelled turns ({report.tool_cases} tool, {report.none_cases} none"
        + (f"; {len(report.skipped)} more skipped, their label not in the catalog" if report.skipped else "")
        + (f"; {len(report.blank)} skipped, their message blank" if report.blank else "")
        + (f"; {len(report.invalid)} turn{'' if len(report.invalid) == 1 else 's'} left out, not valid" if report.invalid else "")
        + f") from {files}; "
        f"catalog '{report.catalog}' ({report.options} options); backend {report.backend} ({report.model})"
        + (" and a comparison backend" if compared else "")
        + (f"; high >= {report.thresholds['high']:g}, medium >= {report.thresholds['medium']:g}" if report.thresholds else "")
        + f"; learning: {report.learning}"
        + (
            f"\nnot this: {report.not_this.hits} of {report.not_this.total} turns with declined options routed again to one of them (decision errors)"
            if report.not_this.total
            else ""
        )
    )


def _command_line(args: argparse.Namespace) -> str:
    """The eval command that produced a report, as the user gave its paths (for the Markdown)."""
    import shlex

    parts = ["tui-router", "eval", *args.cases]
    for flag in ("config", "catalog", "backend", "compare"):
        value = getattr(args, flag, None)
        if value:
            parts += [f"--{flag}", value]
    if args.no_learn:
        parts.append("--no-learn")
    if args.label_source is not None:
        parts += ["--label-source", ",".join(sorted(args.label_source))]
    if args.concurrency != 1:
        parts += ["--concurrency", str(args.concurrency)]
    parts += ["--markdown", args.markdown]
    return " ".join(shlex.quote(p) for p in parts)


def _check_report_target(path: str, cases) -> None:
    """--markdown FILE must not be one of the files being measured, nor any TOML file: `--markdown
    s1.toml` replaced the labelled session with the report (every turn lost)."""
    from ..errors import UserError
    from ..session import iter_session_files

    target = Path(path)
    try:
        inputs = {f.resolve() for f in iter_session_files(list(cases))}
    except UserError:
        inputs = set()  # a missing case file is reported by the eval itself
    if target.resolve() in inputs or (target.suffix.lower() == ".toml" and target.exists()):
        raise UserError(f"--markdown {path}: that is a TOML file (a session or config), not a report; nothing was written. Name a .md file")


def _write_markdown(path: str, reports, sections, command: str) -> None:
    from pathlib import Path

    from ..errors import UserError
    from ..report import sections_markdown
    from ..session import atomic_write_text

    head = reports[0]
    lines = [
        f"## Eval: {', '.join(Path(f).name for f in head.files)} on catalog `{head.catalog}`",
        "",
        f"{head.n} labelled turns ({head.tool_cases} tool cases, {head.none_cases} none cases), "
        f"{head.options} options. Backends: " + "; ".join(f"`{r.backend}` ({r.model}), learning: {r.learning}" for r in reports) + ".",
        *([""] + [f"Left out: {line}." for line in head.catalog_lines] if head.catalog_lines else []),
        "",
        f"Generated by `{command}` (definitions: [eval-metrics.md](eval-metrics.md)).",
        "",
        sections_markdown(sections),
    ]
    from ..textsafe import visible

    try:  # names from files and servers: control characters as escapes, as on the terminal
        atomic_write_text(Path(path), visible("\n".join(lines).rstrip()) + "\n")
    except OSError as exc:
        raise UserError(f"{path}: cannot write the Markdown report ({exc.strerror or exc})") from None


# -- replay -------------------------------------------------------------------------------------


def run_replay_cmd(args: argparse.Namespace) -> int:
    from ..errors import UserError

    config = config_from_args(args)
    _warn_examples(config)
    if not args.headless:
        if args.json or args.gate is not None or args.all or args.what_if is not None:
            raise UserError("--json, --gate, --all and --what-if need --headless (without it the console opens in replay mode)")
        if len(args.sessions) != 1:
            raise UserError("the console replays one session at a time; use --headless for several")
        from ..session import load_session

        _check_replayable([load_session(args.sessions[0])], _catalog(config), args.strict)
        from functools import partial

        from ..app import run_replay  # type: ignore[attr-defined]  # the console, imported only here
        from .common import apply_args

        result = run_replay(config, args.sessions[0], command_line=partial(apply_args, args=args))
        return result if isinstance(result, int) else 0
    if args.what_if is not None:
        if args.gate is not None or args.all:
            raise UserError("--what-if re-bands the recorded decisions; --gate and --all belong to a replay")
        return _what_if(args, config)
    return _replay_headless(args, config)


def _check_replayable(sessions, catalog, strict: bool, verb: str = "replayed but not scored") -> None:
    """Replay checks what eval checks. --strict: the sessions were made for this catalog and every label
    is an option. Otherwise another catalog's name and a renamed none option are a line on stderr each,
    and turns labelled with ids the catalog lacks are replayed but not scored (the summary counts them)."""
    from ..evaluate import check_sessions

    gaps = check_sessions(sessions, catalog, strict=strict)
    for line in gaps.lines(catalog, verb=verb):  # a renamed tool gets its did-you-mean here
        print(f"tui-router: note: {line}", file=sys.stderr)


def _what_if(args: argparse.Namespace, config) -> int:
    from ..decide import backend_class
    from ..review import load_sessions, parse_what_if, what_if
    from ..route import with_backend_thresholds
    from ..session import copy_notes

    # "now" is what the router would use: the backend's fitted thresholds when the config sets none
    # (semantic, the default: 0.90, not the seeds' 0.75), as the console's what-if and replay show
    config = with_backend_thresholds(config, backend_class(config.backend))
    after = parse_what_if(args.what_if, config.policy)
    sessions = load_sessions(args.sessions)
    catalog = _catalog(config)
    # the risks that decide an action come from this catalog (a recorded choice it lacks has none: default thresholds)
    _check_replayable(sessions, catalog, args.strict, verb="compared with its recorded choice as it was (what-if routes nothing)")
    note_copies(copy_notes(sessions))
    report = what_if(sessions, config.policy, after, catalog)
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False))
    else:
        print(f"thresholds now: high >= {config.policy.high:g}, medium >= {config.policy.medium:g}; what-if: high >= {after.high:g}, medium >= {after.medium:g}")
        for line in report.lines():
            print(line)
    return 0


def _replay_headless(args: argparse.Namespace, config) -> int:
    from ..errors import SessionError
    from ..evaluate import (
        EVAL_GATE_METRICS,
        REPLAY_GATE_METRICS,
        check_gate,
        parse_gate,
        replay_eval_report,
        replay_report,
        replay_session,
    )
    from ..report import print_sections, replay_sections
    from ..route import build_router
    from ..session import copy_notes, iter_session_files, load_session, repeated_turns

    known = [*REPLAY_GATE_METRICS, *(m for m in EVAL_GATE_METRICS if m not in REPLAY_GATE_METRICS)]
    conditions = parse_gate(args.gate, known) if args.gate is not None else None
    files = iter_session_files(args.sessions)
    from ..gcpause import gc_paused

    with gc_paused():  # gcpause.py
        sessions = [load_session(f) for f in files]
    if not any(s.turns for s in sessions):
        raise SessionError(f"no turns to replay in {', '.join(str(f) for f in files) or ', '.join(args.sessions)}")
    catalog = _catalog(config)
    _check_replayable(sessions, catalog, args.strict)
    note_copies(copy_notes(sessions))
    router = build_router(config, catalog)
    repeated = repeated_turns(sessions)  # a followed live file's turns are replayed once, from the copy
    per_file = []
    try:
        for session in sessions:
            per_file.append((session, replay_session(router, session, {i for path, i in repeated if path == session.path})))
    finally:
        router.backend.close()
    warn_cache_problems(*router.backend.load_problems(), router.backend.cache_problem())
    rows = [row for _, report in per_file for row in report.rows]
    total = replay_report(rows)
    policy = router.config.policy  # the backend's fitted thresholds when the config sets none
    metrics = total.gate_metrics()
    if conditions:
        metrics.update(
            {k: v for k, v in replay_eval_report(rows, catalog, config, backend=router.backend.name).gate_metrics().items() if k not in metrics}
        )
    gate = check_gate(conditions, metrics) if conditions else None
    if args.json:
        out = total.to_json()
        out["backend"] = router.backend.name
        out["model"] = router.backend.model
        out["catalog"] = catalog.name
        out["thresholds"] = {"high": policy.high, "medium": policy.medium}  # the ones this replay used
        # one shape whatever the number of files (one file was a list of paths, several a list of objects)
        out["files"] = [{"file": str(s.path), **{k: v for k, v in r.to_json().items() if k != "rows"}} for s, r in per_file]
        sources = [str(s.path) for s, r in per_file for _ in r.rows]
        out["rows"] = [{"file": source, **row} for source, row in zip(sources, out["rows"], strict=True)]  # index is per file
        if gate is not None:
            out["gate"] = [{"line": r.line(), "passed": r.passed} for r in gate]
        print(json.dumps(out, ensure_ascii=False))
    else:
        setup = (
            f"{router.backend.name}, {router.backend.model}; catalog '{catalog.name}'; "
            f"high >= {policy.high:g}, medium >= {policy.medium:g}"
        )
        for session, report in per_file:
            print_sections(replay_sections(report, title=f"Replay: {session.path} ({setup})", show_all=args.all))
        if len(per_file) > 1:  # one file: its section's note already is the summary
            print(total.summary_line())
    code = 1 if total.broken else 0
    if gate is not None and not _print_gate(gate, to_stderr=args.json):
        code = 1
    return code


# -- calibrate ----------------------------------------------------------------------------------


def _calibrate_what_if(cases, config, catalog, result):
    """The recorded decisions re-banded under the suggested thresholds (those `--write-config` writes)."""
    from ..config import PolicyConfig
    from ..review import load_sessions, what_if

    update = result.policy_update()
    measured = {level.risk for level in result.levels if level.risk != "default"}
    risk = {k: v.model_dump() for k, v in config.policy.risk.items() if k.value not in measured} | update["risk"]
    after = PolicyConfig.model_validate({**config.policy.model_dump(), "high": update["high"], "medium": update["medium"], "risk": risk})
    return what_if(load_sessions(cases), config.policy, after, catalog)


def _stamp(path: Path | None) -> tuple[int, int] | None:
    """(inode, mtime_ns) of a file, None when absent: tells whether a command rewrote it."""
    try:
        st = path.stat() if path is not None else None
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns) if st else None


def run_calibrate_cmd(args: argparse.Namespace) -> int:
    from ..calibrate import calibrate, write_config
    from ..report import calibration_sections, print_sections

    config = config_from_args(args)
    _warn_examples(config)
    catalog = _catalog(config)
    result = calibrate(
        args.cases,
        config,
        catalog=catalog,
        target_precision=args.target_precision,
        confirm_precision=args.confirm_precision,
        folds=args.folds,
        learn=not args.no_learn,
    )
    warn_cache_problems(*result.load_problems, result.cache_problem)
    note_copies(result.copies)
    diff = _calibrate_what_if(args.cases, config, catalog, result)
    if not args.json:
        # the tables and the diff come before anything is written: a refusal to write (exit 2)
        # printed only the diff, above the header, and never the sweep that explains it
        print(
            f"calibrate: {result.n} labelled turns; backend {result.backend} ({result.model}); confidence formula "
            f"{result.formula}; learning: {result.learning}"
        )
        print_sections(calibration_sections(result))
        if result.unavoidable_missed_reviews:
            k = result.unavoidable_missed_reviews
            print(f"{k} review-labelled turn{'' if k == 1 else 's'} went to the none option or {'was' if k == 1 else 'were'} unresolved: no threshold can send {'it' if k == 1 else 'them'} to a person")
        for line in diff.lines():
            print(line)
        sys.stdout.flush()  # before a refusal on stderr
    backup = Path(args.write_config).with_name(Path(args.write_config).name + ".bak") if args.write_config else None
    before = _stamp(backup)
    written = write_config(args.write_config, result) if args.write_config else None
    if backup is not None and (not written or _stamp(backup) in (None, before)):
        backup = None  # written only when the old file had comments (the TOML writer drops them)
    if args.json:
        out = result.model_dump(mode="json")
        out["what_if"] = diff.to_json()
        out["written"] = str(written) if written else None
        out["backup"] = str(backup) if backup else None
        print(json.dumps(out, ensure_ascii=False))
        return 0
    if written:
        print(f"wrote [policy] thresholds{' and [local] temperature/none_margin' if result.fit and result.fit.folds else ''} to {written}")
        if backup is not None:
            print(f"its comments are not kept (the TOML writer drops them): the previous file, comments included, is {backup}")
    return 0
