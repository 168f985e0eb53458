"""The console with a team's months of data: big sessions, a big folder, big catalogs.

    nice python benchmarks/bench_console_scale.py [--data DIR] [--runs 3] [--only open,label,filter,picker,review,save,whatif]

Data: benchmarks/scale_data.py (synthetic, deterministic, nothing tuned on it), generated in DIR
(default: a temporary folder) unless already there: a 5,000-turn session over a 1,000-tool catalog,
a folder of 50 sessions (20,000 turns), and a 10,000-tool catalog. Backend `local` (catalog 1,000)
and `bm25` (catalog 10,000: the semantic backend's first start embeds for minutes, and the
embedding is not what is measured here). Headless, 120x40.

Each figure is a median over --runs, and each comes with the event-loop stalls seen while it ran
(median and worst; a probe callback every 5 ms: a stall is the time the UI could not paint or read
a key). On a machine shared with other jobs the worst stall includes the time the process waited
for a CPU: read the medians, and compare runs made together (`--base DIR` below).

- open: `tui-router open big.toml` as a fresh process, spawn to the first full frame, to the session
  read and shown (this tree reads it after the first frame; an older one before) and to the router ready.
- label: `a` on a turn in the middle of the 5,000, until its autosave is on disk; then `u` (undo).
- filter: one keystroke in the Catalog pane's filter over 10,000 tools, until the list is painted.
- picker: `l` (the label picker over 10,000 options) until painted, then one keystroke in its filter.
- review: `tui-router review FOLDER` (50 files) to the first frame (this tree: "Reading 50 session
  files…"; an older one read the folder first, so its first frame was the queue) and to the queue
  painted, then `1` (label, written to its file) and `u` (undo); the palette's review queue over the
  same folder from the console.
- save: in the 5,000-turn session just labelled, the palette's review queue (it saves the session
  first) and `save as`, each to painted.
- whatif: the what-if dialog over the 5,000-turn session.
- replay: the console's replay of the 5,000-turn session, to its summary line.
"""

from __future__ import annotations

import time

_CHILD_START = time.time()

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SIZE = (120, 40)


class LagProbe:
    """The longest time the event loop was busy elsewhere (a frame could not be painted or a key
    read): a callback that reschedules itself every 5 ms notes how late it ran. Scheduled at once
    on entry, so a handler that blocks right after is measured too."""

    def __init__(self, tick: float = 0.005) -> None:
        self.tick = tick
        self.worst = 0.0
        self._handle: asyncio.TimerHandle | None = None

    def _beat(self, due: float) -> None:
        loop = asyncio.get_running_loop()
        self.worst = max(self.worst, loop.time() - due)
        self._handle = loop.call_at(loop.time() + self.tick, self._beat, loop.time() + self.tick)

    def __enter__(self) -> LagProbe:
        loop = asyncio.get_running_loop()
        self.worst = 0.0
        self._handle = loop.call_at(loop.time() + self.tick, self._beat, loop.time() + self.tick)
        return self

    def __exit__(self, *exc) -> None:
        assert self._handle is not None
        self._handle.cancel()

    @property
    def ms(self) -> float:
        return self.worst * 1000


def ensure_data(folder: Path) -> dict[str, Path]:
    from benchmarks.scale_data import make_catalog, make_folder, make_session

    paths = {
        "catalog1k": folder / "catalog-1000.toml",
        "catalog10k": folder / "catalog-10000.toml",
        "big": folder / "big.toml",
        "folder": folder / "folder",
    }
    if not paths["catalog1k"].exists():
        make_catalog(1000, paths["catalog1k"])
    if not paths["catalog10k"].exists():
        make_catalog(10000, paths["catalog10k"])
    if not paths["big"].exists():
        make_session(paths["big"], paths["catalog1k"], 5000)
    if not paths["folder"].exists():
        make_folder(paths["folder"], paths["catalog1k"], 50, 20000)
    return paths


def config_for(catalog: Path, backend: str, sessions: Path):
    from tui_router.config import Config

    return Config(catalog=str(catalog), backend=backend, sessions_dir=str(sessions), local={"examples": []})


# -- open: a fresh process ------------------------------------------------------------------
def paints_first() -> bool:
    """This tree's console reads `open FILE` and `review FILES` after its first frame (an older
    tree, run with --base, read them before it started)."""
    import inspect

    from tui_router.app.app import RouterConsole

    return "open_path" in inspect.signature(RouterConsole.__init__).parameters


def child(big: str, catalog: str) -> None:
    """What `tui-router open big.toml` does after the command line: the file claimed, the console
    run; marks when the first frame, the session read and the router ready were painted."""
    from tui_router.app.app import RouterConsole
    from tui_router.session import load_session
    from tui_router.storage import claim_session_file

    marks: dict[str, float] = {}
    later = paints_first()

    class Timed(RouterConsole):
        def _maybe_done(self) -> None:
            if "router_ready" in marks and "loaded" in marks:
                self.exit()

        def on_mount(self) -> None:
            def drawn() -> None:
                marks.setdefault("first_frame", time.time())
                if not later:  # read before the console started: the first frame shows it
                    marks["loaded"] = marks["first_frame"]
                    self._maybe_done()

            self.call_after_refresh(drawn)

        def on_session_read(self, message) -> None:
            def done() -> None:
                marks["loaded"] = time.time()
                self._maybe_done()

            self.call_after_refresh(done)

        def on_router_ready(self, message) -> None:
            def done() -> None:
                marks["router_ready"] = time.time()
                self._maybe_done()

            self.call_after_refresh(done)

    sessions = tempfile.mkdtemp(prefix="bench-scale-")
    copy = Path(sessions) / "big.toml"
    shutil.copy(big, copy)
    claim_session_file(copy)
    config = config_for(Path(catalog), "local", Path(sessions))
    if later:
        Timed(config, open_path=copy).run(headless=True, size=SIZE)
    else:
        Timed(config, session=load_session(copy)).run(headless=True, size=SIZE)
    print(json.dumps({"start": _CHILD_START, **marks}))


def bench_open(paths: dict[str, Path], runs: int) -> dict[str, float]:
    frames, readies, loads = [], [], []
    for _ in range(runs):
        spawned = time.time()
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(paths["big"]), str(paths["catalog1k"])],
            capture_output=True, text=True, cwd=ROOT, timeout=300,
        )
        line = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
        if not line:
            raise SystemExit(f"child failed: {out.stderr[-2000:]}")
        marks = json.loads(line[-1])
        loads.append(marks["loaded"] - spawned)
        frames.append(marks["first_frame"] - spawned)
        readies.append(marks["router_ready"] - spawned)
    return {"open_first_frame_s": statistics.median(frames), "open_session_shown_s": statistics.median(loads), "open_router_ready_s": statistics.median(readies)}


async def _review_app(config, folder: Path):
    """The console as `tui-router review FOLDER` opens it: this tree lists the files and reads them
    in the console's worker; an older one read them (Review.of_files) before the console started."""
    from tui_router.app.app import RouterConsole

    if paints_first():
        from tui_router.review import session_files

        return RouterConsole(config, review_files=session_files([folder]))
    from tui_router.review import Review

    return RouterConsole(config, review=Review.of_files([folder]))


# -- in-process measures ----------------------------------------------------------------------
async def _ready_app(config, **kwargs):
    from tui_router.app.app import RouterConsole

    return RouterConsole(config, **kwargs)


async def painted(app) -> None:
    done = asyncio.Event()
    app.call_after_refresh(done.set)
    await asyncio.wait_for(done.wait(), 60)


async def bench_label(paths: dict[str, Path], runs: int) -> dict[str, float]:
    from tui_router.app.widgets.decision_log import DecisionLog
    from tui_router.session import load_session

    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    copy = work / "big.toml"
    shutil.copy(paths["big"], copy)
    session = load_session(copy)
    app = await _ready_app(config_for(paths["catalog1k"], "local", work), session=session)
    label_ms, undo_ms, stalls, scroll_ms = [], [], [], []
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_for_router()
        await app.workers.wait_for_complete()
        await pilot.pause()
        log = app.query_one(DecisionLog)
        log.focus()
        await pilot.pause()
        base = []
        for _ in range(4):  # a key nothing is bound to: what Pilot and one frame cost by themselves
            started = time.perf_counter()
            await pilot.press("f19")
            await painted(app)
            base.append((time.perf_counter() - started) * 1000)
        for key in ("home", "end", "home", "end"):
            with LagProbe() as probe:
                started = time.perf_counter()
                await pilot.press(key)
                await painted(app)
                scroll_ms.append((time.perf_counter() - started) * 1000)
            stalls.append(probe.ms)
        unlabelled = [i for i, t in enumerate(session.turns) if not t.label and t.decision is not None and t.decision.choice and t.decision.band != "unresolved"]
        middle = [i for i in unlabelled if i >= 2500][: runs * 2]
        for index in middle:
            log.select(index)
            await pilot.pause()
            for key, sink in (("a", label_ms), ("u", undo_ms)):
                with LagProbe() as probe:
                    started = time.perf_counter()
                    await pilot.press(key)
                    while not app.workspace.saved:
                        await asyncio.sleep(0.002)
                    await painted(app)
                    sink.append((time.perf_counter() - started) * 1000)
                stalls.append(probe.ms)
            assert session.turns[index].label is None, "undo did not put the label back"
        await app.workers.wait_for_complete()
    return {
        "idle_key_ms": statistics.median(base),
        "home_end_ms": statistics.median(scroll_ms),
        "label_autosave_ms": statistics.median(label_ms),
        "undo_autosave_ms": statistics.median(undo_ms),
        "label_stall_p50_ms": statistics.median(stalls),
        "label_worst_stall_ms": max(stalls),
    }


STALLS: list[float] = []  # every key's stall in the current measure (the medians printed)


async def _type_keys(app, pilot, keys: str) -> tuple[list[float], float]:
    times, worst = [], 0.0
    for key in keys:
        with LagProbe() as probe:
            started = time.perf_counter()
            await pilot.press(key)
            await app.workers.wait_for_complete()
            await painted(app)
            times.append((time.perf_counter() - started) * 1000)
        worst = max(worst, probe.ms)
        STALLS.append(probe.ms)
    return times, worst


async def bench_filter(paths: dict[str, Path], runs: int) -> dict[str, float]:
    from textual.widgets import Input

    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    app = await _ready_app(config_for(paths["catalog10k"], "bm25", work))
    STALLS.clear()
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_for_router()
        await app.workers.wait_for_complete()
        await pilot.pause()
        times, worst = [], 0.0
        for _ in range(runs):
            box = app.query_one("#catalog-filter", Input)
            box.focus()
            await pilot.pause()
            t, w = await _type_keys(app, pilot, "ship")  # "s" matches thousands, "ship" a few hundred
            times += t
            worst = max(worst, w)
            t, w = await _type_keys(app, pilot, ["backspace"] * 4)
            times += t
            worst = max(worst, w)
    return {"filter_key_ms": statistics.median(times), "filter_key_max_ms": max(times), "filter_stall_p50_ms": statistics.median(STALLS), "filter_worst_stall_ms": worst}


async def bench_picker(paths: dict[str, Path], runs: int) -> dict[str, float]:
    from tui_router.app.messages import TurnSubmitted
    from tui_router.app.screens.picker import OptionPicker
    from tui_router.app.widgets.decision_log import DecisionLog

    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    app = await _ready_app(config_for(paths["catalog10k"], "bm25", work))
    opens, keys, worst = [], [], 0.0
    STALLS.clear()
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_for_router()
        app.post_message(TurnSubmitted("archive the shipment record in SAP"))
        await app.workers.wait_for_complete()
        await pilot.pause()
        while app.screen is not app.screen_stack[0]:
            app.pop_screen()
            await pilot.pause()
        for _ in range(runs):
            app.query_one(DecisionLog).focus()
            await pilot.pause()
            with LagProbe() as probe:
                started = time.perf_counter()
                await pilot.press("l")
                assert isinstance(app.screen, OptionPicker)
                await painted(app)
                opens.append((time.perf_counter() - started) * 1000)
            worst = max(worst, probe.ms)
            STALLS.append(probe.ms)
            t, w = await _type_keys(app, pilot, "shp")
            keys += t
            worst = max(worst, w)
            await pilot.press("escape")
            await pilot.pause()
    return {"picker_open_ms": statistics.median(opens), "picker_key_ms": statistics.median(keys), "picker_stall_p50_ms": statistics.median(STALLS), "picker_worst_stall_ms": worst}


async def bench_review(paths: dict[str, Path], runs: int) -> dict[str, float]:
    from tui_router.app.screens import review as review_screens
    from tui_router.app.screens.review import ReviewScreen

    first_screens = tuple(getattr(review_screens, name) for name in ("ReviewReadingScreen", "ReviewScreen") if hasattr(review_screens, name))
    first, cli, palette, stalls, keys, key_stalls = [], [], [], [], [], []
    for _ in range(runs):
        work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
        folder = work / "folder"
        shutil.copytree(paths["folder"], folder)
        started = time.perf_counter()
        app = await _review_app(config_for(paths["catalog1k"], "local", work), folder)
        async with app.run_test(size=SIZE) as pilot:
            while not isinstance(app.screen, first_screens):  # the loading screen, or the queue
                await asyncio.sleep(0.002)
            await painted(app)
            first.append((time.perf_counter() - started) * 1000)
            while not isinstance(app.screen, ReviewScreen):
                await asyncio.sleep(0.002)
            await painted(app)
            cli.append((time.perf_counter() - started) * 1000)
            await app.wait_for_router()
            await app.workers.wait_for_complete()
            for key in "1u":  # label the first queued turn (written to its file), then undo
                with LagProbe() as probe:
                    started = time.perf_counter()
                    await pilot.press(key)
                    await app.workers.wait_for_complete()
                    await painted(app)
                    keys.append((time.perf_counter() - started) * 1000)
                key_stalls.append(probe.ms)
        app = await _ready_app(config_for(paths["catalog1k"], "local", folder))
        async with app.run_test(size=SIZE) as pilot:
            await app.wait_for_router()
            await app.workers.wait_for_complete()
            await pilot.pause()
            with LagProbe() as probe:
                started = time.perf_counter()
                app.action_review_queue()
                while not isinstance(app.screen, ReviewScreen):
                    await asyncio.sleep(0.002)
                await painted(app)
                palette.append((time.perf_counter() - started) * 1000)
                await app.workers.wait_for_complete()
            stalls.append(probe.ms)
    return {"review_cli_first_frame_ms": statistics.median(first), "review_cli_queue_ms": statistics.median(cli), "review_palette_ms": statistics.median(palette), "review_palette_stall_p50_ms": statistics.median(stalls), "review_palette_worst_stall_ms": max(stalls), "review_key_ms": statistics.median(keys), "review_key_stall_p50_ms": statistics.median(key_stalls)}



async def bench_save(paths: dict[str, Path], runs: int) -> dict[str, float]:
    """The 5,000-turn session labelled (autosaved), then the palette's review queue (which saves
    first) and `save as` (the method the prompt's Enter calls): each until painted, with its stall."""
    from tui_router.app.screens.review import ReviewScreen
    from tui_router.app.widgets.decision_log import DecisionLog
    from tui_router.session import load_session

    queue_ms, queue_stalls, save_ms, save_stalls = [], [], [], []
    for run in range(runs):
        work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
        copy = work / "big.toml"
        shutil.copy(paths["big"], copy)
        session = load_session(copy)
        app = await _ready_app(config_for(paths["catalog1k"], "local", work), session=session)
        async with app.run_test(size=SIZE) as pilot:
            await app.wait_for_router()
            await app.workers.wait_for_complete()
            await pilot.pause()
            log = app.query_one(DecisionLog)
            log.focus()
            log.select(2500 + run)
            await pilot.pause()
            await pilot.press("a")
            while not app.workspace.saved:
                await asyncio.sleep(0.002)
            await app.workers.wait_for_complete()
            await painted(app)
            with LagProbe() as probe:
                started = time.perf_counter()
                app.action_review_queue()
                while not isinstance(app.screen, ReviewScreen):
                    await asyncio.sleep(0.002)
                await painted(app)
                queue_ms.append((time.perf_counter() - started) * 1000)
                await app.workers.wait_for_complete()
            queue_stalls.append(probe.ms)
            app.pop_screen()
            await app.workers.wait_for_complete()
            await painted(app)
            with LagProbe() as probe:
                started = time.perf_counter()
                target = app.save_as(f"copy-{run}")
                await painted(app)
                save_ms.append((time.perf_counter() - started) * 1000)
            save_stalls.append(probe.ms)
            assert target is not None and target.read_text(encoding="utf-8").count("[[turns]]") == 5000
    return {
        "save_queue_ms": statistics.median(queue_ms),
        "save_queue_stall_p50_ms": statistics.median(queue_stalls),
        "save_as_ms": statistics.median(save_ms),
        "save_as_stall_p50_ms": statistics.median(save_stalls),
    }

async def bench_whatif(paths: dict[str, Path], runs: int) -> dict[str, float]:
    from tui_router.session import load_session

    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    copy = work / "big.toml"
    shutil.copy(paths["big"], copy)
    app = await _ready_app(config_for(paths["catalog1k"], "local", work), session=load_session(copy))
    times, worst = [], 0.0
    STALLS.clear()
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_for_router()
        await app.workers.wait_for_complete()
        await pilot.pause()
        for _ in range(runs):
            with LagProbe() as probe:
                started = time.perf_counter()
                app.show_what_if("0.8 0.5")
                await painted(app)
                times.append((time.perf_counter() - started) * 1000)
            worst = max(worst, probe.ms)
            STALLS.append(probe.ms)
            app.pop_screen()
            await pilot.pause()
    return {"whatif_ms": statistics.median(times), "whatif_stall_p50_ms": statistics.median(STALLS), "whatif_worst_stall_ms": worst}


async def bench_replay(paths: dict[str, Path], runs: int) -> dict[str, float]:
    """The console's replay of the 5,000-turn session (local backend): to the summary line, and the
    worst stall while rows arrive (keys are read meanwhile)."""
    from tui_router.app.screens.replay import ReplayScreen
    from tui_router.session import load_session

    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    copy = work / "big.toml"
    shutil.copy(paths["big"], copy)
    session = load_session(copy)
    app = await _ready_app(config_for(paths["catalog1k"], "local", work))
    times, stalls = [], []
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_for_router()
        await app.workers.wait_for_complete()
        await pilot.pause()
        for _ in range(max(1, runs // 3)):
            with LagProbe() as probe:
                started = time.perf_counter()
                app.open_replay(session)
                await pilot.pause()
                screen = app.screen
                assert isinstance(screen, ReplayScreen)
                while screen.report is None:
                    await asyncio.sleep(0.05)
                await painted(app)
                times.append(time.perf_counter() - started)
            stalls.append(probe.ms)
            app.pop_screen()
            await pilot.pause()
    return {"replay_5000_s": statistics.median(times), "replay_worst_stall_ms": max(stalls)}


def side_by_side(base: Path, data: Path, runs: int, wanted: list[str]) -> None:
    """Each measure in `base` (this script and the data generator copied there), then in this tree."""
    here = Path(__file__).resolve()
    for name in ("bench_console_scale.py", "scale_data.py"):
        shutil.copy(here.parent / name, base / "benchmarks" / name)
    rows: dict[str, list[float | None]] = {}
    for name in wanted:
        for column, tree in enumerate((base, ROOT)):
            out = subprocess.run(
                [sys.executable, str(tree / "benchmarks" / "bench_console_scale.py"), "--data", str(data), "--runs", str(runs), "--only", name],
                capture_output=True, text=True, cwd=tree, timeout=1800,
            )
            lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
            if not lines:
                raise SystemExit(f"{name} failed in {tree}: {out.stderr[-2000:]}")
            for key, value in json.loads(lines[-1]).items():
                rows.setdefault(key, [None, None])[column] = value
                if column == 1:
                    print(f"{key:32} {rows[key][0]:10.2f} {value:10.2f}", flush=True)
    print(json.dumps({key: {"before": b, "after": a} for key, (b, a) in rows.items()}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help="where the synthetic data is (made there if missing)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--base", type=Path, help="another checkout (e.g. `git archive OLD | tar -x -C DIR`): each measure runs there, then here, in turn")
    parser.add_argument("--only", default="open,label,filter,picker,review,save,whatif,replay")
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    data = args.data or Path(tempfile.mkdtemp(prefix="scale-data-"))
    paths = ensure_data(data)
    wanted = args.only.split(",")
    if args.base:
        side_by_side(args.base.resolve(), data, args.runs, wanted)
        return
    results: dict[str, float] = {}
    for name, run in (("open", bench_open), ("label", bench_label), ("filter", bench_filter), ("picker", bench_picker), ("review", bench_review), ("save", bench_save), ("whatif", bench_whatif), ("replay", bench_replay)):
        if name not in wanted:
            continue
        out = run(paths, args.runs)
        if asyncio.iscoroutine(out):
            out = asyncio.run(out)
        for key, value in out.items():
            print(f"{key:32} {value:10.2f}", flush=True)
        results.update(out)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
