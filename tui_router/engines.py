"""Who runs the shards of a run: this process, N local processes, or Ray.

Every engine runs the same shard function (shard.eval_shard) and yields what each shard gave, a
ShardResult or a ShardFailed, as shards finish (in any order: the merge orders them). `fetch(task)`
gives a shard's input lines; an engine asks for them only when it hands the shard out, so a run
holds the lines of a few shards at a time, never the whole spool. No scheduler or worker protocol
of our own: concurrent.futures for local processes, Ray actors (one per model) for a cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from .errors import UserError
from .shard import EvalJob, ShardFailed, ShardResult, eval_shard


class Task(NamedTuple):
    index: int
    lo: int
    hi: int


Outcome = ShardResult | ShardFailed
Fetch = Callable[[Task], bytes]


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class InProcess:
    """One shard after another in this process (--jobs 1): the router is built once."""

    name = "this process"

    def __init__(self, keep_results: bool = False) -> None:
        self.keep_results = keep_results

    def run(self, job: EvalJob, tasks: Iterable[Task], fetch: Fetch) -> Iterator[Outcome]:
        for task in tasks:
            try:
                yield eval_shard(job, task.index, task.lo, task.hi, fetch(task), self.keep_results)
            except UserError as exc:  # a config the router refuses: the same sentence as without shards
                raise exc
            except Exception as exc:
                yield ShardFailed(task.index, task.lo, task.hi, _reason(exc))


# -- local processes ------------------------------------------------------------------------------

_job: EvalJob | None = None


def _start_worker(job: EvalJob) -> None:
    global _job
    _job = job


def _run_in_worker(index: int, lo: int, hi: int, chunk: bytes) -> ShardResult:
    assert _job is not None
    return eval_shard(_job, index, lo, hi, chunk)


class LocalProcesses:
    """`jobs` worker processes on this machine, each building the model once (a process pool)."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.name = f"{jobs} local processes"

    def run(self, job: EvalJob, tasks: Iterable[Task], fetch: Fetch) -> Iterator[Outcome]:
        import multiprocessing
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
        from concurrent.futures.process import BrokenProcessPool

        # forkserver: workers start from a clean process (no threads or locks of this one); spawn elsewhere
        method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        context = multiprocessing.get_context(method)
        pending = iter(tasks)
        with ProcessPoolExecutor(max_workers=self.jobs, mp_context=context, initializer=_start_worker, initargs=(job,)) as pool:
            running: dict[Any, Task] = {}

            def submit() -> bool:
                task = next(pending, None)
                if task is None:
                    return False
                running[pool.submit(_run_in_worker, task.index, task.lo, task.hi, fetch(task))] = task
                return True

            for _ in range(self.jobs * 2):  # a shard queued behind each running one, no more
                if not submit():
                    break
            broken = False
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: running[f].index):
                    task = running.pop(future)
                    try:
                        yield future.result()
                    except BrokenProcessPool:
                        broken = True
                        yield ShardFailed(task.index, task.lo, task.hi, "its worker process died (killed, or out of memory)")
                    except Exception as exc:
                        yield ShardFailed(task.index, task.lo, task.hi, _reason(exc))
                    if not broken:
                        submit()


# -- Ray ------------------------------------------------------------------------------------------


class Ray:
    """Ray actors, one per model, each running shards of the run (`--engine ray`).

    `address`: a running cluster (`ray://host:10001`, `auto`); None starts a local Ray for this run
    with `jobs` CPUs. Workers get the shard lines and the label set through Ray's object store, so
    they need the catalog and config files only through the job (no shared filesystem for the
    sessions); tui-router itself must be installed on every node."""

    def __init__(self, jobs: int, address: str | None = None) -> None:
        self.jobs = jobs
        self.address = address
        self.name = f"Ray ({address or 'local'})"

    def run(self, job: EvalJob, tasks: Iterable[Task], fetch: Fetch) -> Iterator[Outcome]:
        try:
            import ray
        except ImportError:
            raise UserError("--engine ray needs the ray extra: pip install 'tui-router[ray]'") from None
        started = not ray.is_initialized()
        if started:
            try:
                if self.address:
                    ray.init(address=self.address, log_to_driver=False)
                else:
                    ray.init(num_cpus=self.jobs, include_dashboard=False, log_to_driver=False)
            except Exception as exc:  # no cluster at that address, a port taken
                raise UserError(f"--engine ray: cannot start or reach Ray{f' at {self.address}' if self.address else ''} ({_reason(exc)})") from None
        try:
            yield from self._run(ray, job, tasks, fetch)
        finally:
            if started:
                ray.shutdown()

    def _run(self, ray: Any, job: EvalJob, tasks: Iterable[Task], fetch: Fetch) -> Iterator[Outcome]:
        from dataclasses import replace

        from .shard import exemplar_pairs

        if job.learn and job.exemplars is None:  # the workers may be on other machines: ship the label set
            job = replace(job, exemplars=tuple(exemplar_pairs(job)), spool=None)
        job_ref = ray.put(job)
        actor_class = ray.remote(num_cpus=1)(ShardActor)
        count = self.jobs if not self.address else max(1, int(ray.cluster_resources().get("CPU", self.jobs)))
        actors = [actor_class.remote(job_ref) for _ in range(count)]
        pending = iter(tasks)
        running: dict[Any, tuple[Task, Any]] = {}

        def submit(actor: Any) -> None:
            task = next(pending, None)
            if task is not None:
                running[actor.run.remote(task.index, task.lo, task.hi, fetch(task))] = (task, actor)

        for actor in actors:
            submit(actor)
        while running:
            done, _ = ray.wait(list(running), num_returns=1)
            for ref in done:
                task, actor = running.pop(ref)
                try:
                    yield ray.get(ref)
                except Exception as exc:  # RayTaskError wraps the shard's own; RayActorError: the actor died
                    cause = getattr(exc, "cause", None)
                    if type(exc).__name__ == "ActorDiedError" or "ActorDied" in type(exc).__name__:
                        reason = "its Ray worker died (killed, or out of memory)"
                    else:
                        reason = _reason(cause) if isinstance(cause, BaseException) else _reason(exc)
                    yield ShardFailed(task.index, task.lo, task.hi, reason)
                    continue
                submit(actor)


class ShardActor:
    """One Ray actor: one model, loaded on its first shard, kept for the next ones."""

    def __init__(self, job: EvalJob) -> None:
        self.job = job

    def run(self, index: int, lo: int, hi: int, chunk: bytes) -> ShardResult:
        return eval_shard(self.job, index, lo, hi, chunk)


def make_engine(name: str, jobs: int, address: str | None = None, keep_results: bool = False):
    if name == "ray":
        return Ray(jobs, address)
    return InProcess(keep_results) if jobs <= 1 else LocalProcesses(jobs)
