"""An eval over session archives of any size: one streaming pass, shards, merge.

1. The first pass (evalplan.plan_eval) reads every file once, one at a time, checks it and spools
   the turns to route.
2. The spool is cut into shards [lo, hi); each is routed and scored by the shard function
   (shard.eval_shard) on an engine (engines.py: this process, --jobs N processes, Ray), or read
   back from the run's store (runstore.py) when a previous run of the same fingerprint finished it.
3. The shards' states merge by adding (evalstate.py) and the report is computed from the merged
   state: the same report, bit for bit, as one run over all the turns (the wall-clock latency
   figures aside).
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import UserError
from .evalplan import plan_eval
from .evalstate import EvalState
from .runstore import RunStore, default_root, fingerprint
from .shard import FAULT_ENV, EvalJob, ShardFailed, ShardResult

if TYPE_CHECKING:
    from .catalog import Catalog
    from .config import Config
    from .engines import Task
    from .evaluate import EvalReport, TurnResult

SHARD_TURNS = 1000  # turns per shard when the run cuts them itself: progress and resume in steps this big


class ShardError(UserError):
    """A shard failed: named in one sentence; the finished ones are kept for a rerun."""

    exit_code = 3


def split(total: int, count: int) -> list[tuple[int, int]]:
    """`count` contiguous ranges covering 0..total-1, sizes differing by one at most (--shard I/N)."""
    return [(total * i // count, total * (i + 1) // count) for i in range(count)]


def cover(total: int, stored: dict[int, int], step: int) -> list[tuple[int, int]]:
    """Ranges covering 0..total-1: the stored ones that fit end to end from 0, new ones of at most
    `step` turns in the gaps (so the parts of an earlier --shard I/N run are used whatever N)."""
    ranges, lo = [], 0
    while lo < total:
        if lo in stored and stored[lo] <= total:
            ranges.append((lo, stored[lo]))
            lo = stored[lo]
            continue
        gap_end = min([s for s in stored if s > lo] + [total])
        count = max(1, math.ceil((gap_end - lo) / step))
        ranges += [(lo + a, lo + b) for a, b in split(gap_end - lo, count)]
        lo = gap_end
    return ranges


@dataclass
class EvalRun:
    """A finished run: the report, and the turns of each shard in run order (`turn_lines`)."""

    report: EvalReport
    shards: int
    reused: int  # shards read back from an earlier run's store
    store: RunStore | None = None
    ranges: list[tuple[int, int]] = field(default_factory=list)
    results: list[ShardResult] = field(default_factory=list)

    @property
    def store_problem(self) -> str:
        return self.store.problem if self.store is not None else ""

    def turn_lines(self) -> Iterator[str]:
        """Each scored turn's report JSON (without the newline), in run order: streamed from the
        store, or from memory where the disk refused to keep them."""
        for (lo, hi), result in zip(self.ranges, self.results, strict=True):
            if result.turns is not None:
                yield from result.turns.decode("utf-8").splitlines()
            elif self.store is not None:
                with self.store.turns(lo, hi).open(encoding="utf-8") as handle:
                    for line in handle:
                        yield line.rstrip("\n")

    def close(self) -> None:
        if self.store is not None:
            self.store.finish()


Progress = Callable[[int, int], None]


def run_eval_shards(
    paths: Sequence[str | Path],
    config: Config,
    *,
    catalog: Catalog,
    backend: str | None = None,
    learn: bool = True,
    concurrency: int = 1,
    label_sources: Iterable[str] | None = None,
    strict: bool = True,
    engine: Any = None,
    jobs: int = 1,
    shard: tuple[int, int] | None = None,
    store_root: Path | None = None,
    use_store: bool = True,
    keep_parts: bool = False,
    with_turns: bool = False,
    keep_turns: bool = False,
    keep_errors: int = 10,
    progress: Progress | None = None,
) -> EvalRun:
    """Plan, route the shards not already done on `engine`, merge; raise ShardError naming the
    first shard that failed (the finished ones stay in the store, and a rerun resumes)."""
    import os

    from .engines import InProcess, Task

    engine = engine or InProcess(keep_results=keep_turns)
    root = store_root or default_root()
    scratch: Path | None = root if use_store else None
    if use_store:
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError:
            scratch = None  # the store says why below, once
    with tempfile.TemporaryDirectory(prefix="plan-", dir=scratch) as tmp:
        plan = plan_eval(paths, catalog, Path(tmp), label_sources=label_sources, strict=strict)
        total = plan.spool.count
        setup = {
            "config": config.model_dump(mode="json"),
            "catalog": catalog.model_dump(mode="json"),
            "backend": backend,
            "learn": learn,
            "label_sources": sorted(label_sources) if label_sources is not None else None,
            "strict": strict,
            "with_turns": with_turns,
            "keep_errors": keep_errors,
        }
        key = fingerprint("eval", plan.digest, setup)
        store = RunStore(root, key, keep=keep_parts or shard is not None).open() if use_store else None
        stored = store.parts() if store is not None else {}
        if shard is not None:
            ranges = [split(total, shard[1])[shard[0]]]
        else:
            step = SHARD_TURNS if jobs <= 1 else max(1, min(SHARD_TURNS, math.ceil(total / jobs)))
            ranges = cover(total, stored, step)
        job = EvalJob(
            key=key, config=config, catalog=catalog, backend=backend, learn=learn, kept=plan.kept, excluded=plan.excluded,
            concurrency=concurrency, keep_errors=keep_errors, with_turns=with_turns, spool=str(plan.spool.path),
            spool_offsets=tuple(plan.spool.offsets), spool_count=plan.spool.count, fault=os.environ.get(FAULT_ENV, ""),
        )
        if plan.spool.in_memory and learn:  # the disk refused the spool: the label set goes with the job
            from dataclasses import replace

            from .shard import exemplar_pairs_of

            job = replace(job, spool=None, exemplars=tuple(exemplar_pairs_of(plan.spool, plan.excluded)))
        results: dict[int, ShardResult] = {}
        tasks: list[Task] = []
        for index, (lo, hi) in enumerate(ranges):
            saved = store.load(lo, hi) if store is not None and stored.get(lo) == hi else None
            if saved is not None and (not with_turns or store.turns(lo, hi).exists()):
                results[index] = ShardResult.from_json(saved)
            else:
                tasks.append(Task(index, lo, hi))
        reused = len(results)
        done = sum(hi - lo for (lo, hi), i in zip(ranges, range(len(ranges)), strict=True) if i in results)
        if progress is not None:
            progress(done, total)
        failures: list[ShardFailed] = []
        try:
            for outcome in engine.run(job, tasks, lambda task: plan.spool.read(task.lo, task.hi)):
                if isinstance(outcome, ShardFailed):
                    failures.append(outcome)
                    continue
                if store is not None and store.save(outcome):
                    outcome.turns = None  # on disk now: read back when printed, not held
                results[outcome.index] = outcome
                done += outcome.hi - outcome.lo
                if progress is not None:
                    progress(done, total)
        finally:
            if isinstance(engine, InProcess):
                from .shard import close_routers

                close_routers()
        missing = [t for t in tasks if t.index not in results and all(f.index != t.index for f in failures)]
        failures += [ShardFailed(t.index, t.lo, t.hi, "it was never run (the engine stopped first)") for t in missing]
        if failures:
            raise _failed(sorted(failures, key=lambda f: f.index)[0], len(ranges), len(results), store)
    ordered = [results[i] for i in range(len(ranges))]
    report = _report(ordered, plan, catalog, keep_errors, keep_turns)
    return EvalRun(report=report, shards=len(ranges), reused=reused, store=store, ranges=ranges, results=ordered)


def _failed(first: ShardFailed, count: int, finished: int, store: RunStore | None) -> ShardError:
    where = f"turns {first.lo + 1}-{first.hi}" if first.hi > first.lo else "no turns"
    kept = (
        f"; the {finished} finished shard{'' if finished == 1 else 's'} are kept in {store.dir}: run the same command again to route only the rest"
        if store is not None and finished
        else ""
    )
    if store is not None:
        store.keep = True  # what finished is what a rerun resumes from
    return ShardError(f"shard {first.index + 1} of {count} ({where}) failed: {first.reason}{kept}")


def _report(ordered: list[ShardResult], plan: Any, catalog: Catalog, keep_errors: int, keep_turns: bool) -> EvalReport:
    state = EvalState(keep_errors=keep_errors)
    for result in ordered:
        state.merge(EvalState.from_json(result.state))
    head = ordered[0]
    turns: list[TurnResult] | None = None
    if keep_turns:
        turns = [t for r in ordered for t in (r.results or [])]
    report = state.report(catalog, backend=head.backend, model=head.model, learning=head.learning, files=plan.files, turns=turns)
    report.thresholds = dict(head.thresholds)
    report.cache_problem = next((r.cache_problem for r in ordered if r.cache_problem), "")
    report.load_problems = next((r.load_problems for r in ordered if r.load_problems), [])
    report.copies = list(plan.copies)
    report.skipped = list(plan.gaps.skipped)
    report.blank = list(plan.gaps.blank)
    report.invalid = list(plan.invalid)
    report.ignored_fields = list(plan.ignored_fields)
    report.catalog_lines = list(plan.catalog_lines)
    return report


class RunProgress:
    """`eval: 12,000 of 100,000 turns (12%), 410 turns/s, 3 min 10 s left` on one self-rewriting
    stderr line, at most four times a second; nothing unless stderr is a terminal."""

    def __init__(self, stream: Any, what: str = "eval") -> None:
        self.stream = stream
        self.what = what
        self.started = time.monotonic()
        self.first: int | None = None
        self.drawn = 0.0
        self.width = 0  # of the line drawn last: a shorter one must cover it

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if self.first is None:
            self.first, self.started = done, now  # turns read back from a store are not this run's rate
        if done < total and now - self.drawn < 0.25:
            return
        self.drawn = now
        elapsed = now - self.started
        rate = (done - self.first) / elapsed if elapsed > 0 else 0.0
        line = f"\rtui-router: {self.what}: {done:,} of {total:,} turns ({100 * done // max(total, 1)}%)"
        if rate > 0:
            line += f", {rate:,.0f} turns/s"
            if done < total:
                line += f", {_duration((total - done) / rate)} left"
        shown = len(line)
        line += " " * max(0, self.width - shown)
        self.width = shown
        if done >= total:
            line += "\n"
        try:
            self.stream.write(line)
            self.stream.flush()
        except (OSError, ValueError):
            pass


def _duration(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"
