"""The shard function of an eval: route and score one slice [lo, hi) of a run's spooled turns.

Pure over its inputs: the job (what every shard of the run shares) and the slice's lines. A
process keeps one router per job (built and taught once, "each loading the model once"), whatever
engine runs it: this process, a pool of local processes, or Ray actors (engines.py).

Learning from labels, sharded: every shard's router learns from the run's whole label set (every
kept labelled turn, in run order, as `evaluate.teach_local_backend` teaches it) and scores its own
turns each held out from itself, so each turn is scored exactly as in a single run.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .evalplan import CASE, DECLINED, item_case
from .evalstate import ContextSizes, EvalState
from .spool import Spool, lines_of

if TYPE_CHECKING:
    from .catalog import Catalog
    from .config import Config
    from .evaluate import TurnResult
    from .route import Router

FAULT_ENV = "TUI_ROUTER_SHARD_FAULT"  # tests: "N" makes shard N (1-based) raise, "N:exit" kill its process


@dataclass(frozen=True)
class EvalJob:
    """What every shard of one eval run shares; sent to each worker once."""

    key: str  # the run's fingerprint: a process keeps one router per key
    config: Config
    catalog: Catalog
    backend: str | None
    learn: bool
    kept: int  # labelled turns the whole run routes (the learning note counts the others)
    excluded: frozenset[int]
    concurrency: int = 1
    arguments: bool = True
    keep_errors: int = 10
    with_turns: bool = False
    # the label set to learn from: the spool on this machine, or its pairs (a cluster's workers)
    spool: str | None = None
    spool_offsets: tuple[int, ...] = ()
    spool_count: int = 0
    exemplars: tuple[tuple[str, str], ...] | None = None
    fault: str = ""


@dataclass
class ShardResult:
    index: int
    lo: int
    hi: int
    state: dict[str, Any]  # EvalState.to_json()
    backend: str
    model: str
    learning: str
    thresholds: dict[str, float]
    cache_problem: str = ""
    load_problems: list[str] = field(default_factory=list)  # encoders or a reranker that did not load
    turns: bytes | None = None  # each routed turn's report JSON, one line each (--json)
    results: list[TurnResult] | None = None  # the scored turns themselves (in-process runs that keep them)

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("index", "lo", "hi", "state", "backend", "model", "learning", "thresholds", "cache_problem", "load_problems")}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ShardResult:
        return cls(**data)


class ShardFailed(Exception):
    """A shard that did not finish: which one and why, in one sentence."""

    def __init__(self, index: int, lo: int, hi: int, reason: str) -> None:
        super().__init__(reason)
        self.index, self.lo, self.hi, self.reason = index, lo, hi, reason


def exemplar_pairs(job: EvalJob) -> list[tuple[str, str]]:
    """(label, message) of every kept labelled turn of the run, in run order."""
    if job.exemplars is not None:
        return list(job.exemplars)
    if job.spool is None:
        return []
    return exemplar_pairs_of(Spool.on_disk(Path(job.spool), list(job.spool_offsets), job.spool_count), job.excluded)


def exemplar_pairs_of(spool: Spool, excluded: frozenset[int]) -> list[tuple[str, str]]:
    return [(item["t"]["label"], item["t"]["message"]) for item in spool.items() if item["k"] == CASE and item["c"] not in excluded]


_routers: dict[str, tuple[Router, str, ContextSizes]] = {}


def job_router(job: EvalJob) -> tuple[Router, str, ContextSizes]:
    """This process's router for the job: built and taught on the first shard, kept for the rest."""
    if job.key in _routers:
        return _routers[job.key]
    from .evaluate import learning_mode
    from .route import build_router

    for router, _, _ in _routers.values():
        router.backend.close()
    _routers.clear()
    router = build_router(job.config, job.catalog, job.backend)
    taught = False
    if job.learn and router.backend.learns_from_examples:
        for label, message in exemplar_pairs(job):
            router.backend.add_exemplar(label, message)
        taught = True
    entry = (router, learning_mode(router, job.learn, taught, job.kept), ContextSizes.of(job.catalog))
    _routers[job.key] = entry
    return entry


def _fault(job: EvalJob, index: int) -> None:
    number, _, how = job.fault.partition(":")
    if number.strip() == str(index + 1):
        if how == "exit":
            os._exit(17)  # a worker killed mid-shard (out of memory, a node lost)
        raise RuntimeError(f"fault injected by {FAULT_ENV}")


def eval_shard(job: EvalJob, index: int, lo: int, hi: int, chunk: bytes, keep_results: bool = False) -> ShardResult:
    """Route and score the spooled turns lo..hi-1 (`chunk`: their lines) into an EvalState."""
    from .evaluate import route_and_score

    if job.fault:
        _fault(job, index)
    router, learning, sizes = job_router(job)
    cases, declined, positions = [], [], []
    for position, item in enumerate(lines_of(chunk), lo):
        if item["k"] == CASE and item["c"] not in job.excluded:
            cases.append(item_case(item))
            positions.append(position)
        elif item["k"] == DECLINED:
            declined.append(item_case(item))
    results, repeats = route_and_score(router, cases, declined, concurrency=job.concurrency, arguments=job.arguments)
    state = EvalState(keep_errors=job.keep_errors)
    for position, result in zip(positions, results, strict=True):
        state.add(result, position, sizes)
    for repeated in repeats:
        state.add_not_this(repeated)
    turns = None
    if job.with_turns:
        turns = "".join(json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in results).encode("utf-8")
    policy = router.config.policy
    return ShardResult(
        index=index, lo=lo, hi=hi, state=state.to_json(), backend=router.backend.name, model=router.backend.model,
        learning=learning, thresholds={"high": policy.high, "medium": policy.medium}, cache_problem=router.backend.cache_problem(),
        load_problems=router.backend.load_problems(), turns=turns, results=results if keep_results else None,
    )


def close_routers() -> None:
    for router, _, _ in _routers.values():
        router.backend.close()
    _routers.clear()
