"""Refit time of the fitted head after one new label, at 2,000 labels (issue 12, item 7).

    nice python benchmarks/bench_refit.py [--metatool ../shared/data/metatool] [--labels 2000] [--repeats 20]
        [--logistic N]

The semantic backend on the MetaTool catalog (199 tools + none = 200 classes) is taught --labels
labelled turns (the MetaTool dev cases, cycled), then, --repeats times: one more label is added and
a message is routed. Reported (medians): the whole step (embed the new label, rebuild the head's
statistics with every label at its class's weight, the (d+1) x (d+1) solve, score) and the head's
refit alone (rebuild + solve). Nothing here is fitted; the figures depend on
the machine (2 shared cores here): quote them with the command.

--logistic N also times the logistic label term's refit (tui_router/decide/logistic.py; needs
scikit-learn), N times: from zero (what eval does) and warm-started from the model before the new
label (what the console's background refit does), and the wait until a routing in the console's
background mode sees the new model. The console never routes on the fit: it runs on its own thread.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tui_router.catalog import load_catalog  # noqa: E402
from tui_router.config import RetrievalConfig  # noqa: E402
from tui_router.decide.base import Question  # noqa: E402
from tui_router.decide.semantic import SemanticBackend  # noqa: E402
from tui_router.session import load_session  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--metatool", default=str(ROOT.parent.parent / "shared" / "data" / "metatool"))
    parser.add_argument("--labels", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--logistic", type=int, default=0, metavar="N", help="also time N refits of the logistic label term")
    args = parser.parse_args()
    folder = Path(args.metatool)
    if not folder.is_dir():
        folder = Path("/work/shared/data/metatool")
    catalog = load_catalog(folder / "catalog.toml")
    turns = [t for t in load_session(folder / "cases-dev.toml").turns if t.label]
    backend = SemanticBackend(catalog, exemplars=[], retrieval=RetrievalConfig())
    for i in range(args.labels):
        turn = turns[i % len(turns)]
        backend.add_exemplar(turn.label, turn.message if i < len(turns) else f"{turn.message} ({i})")
    options = [*catalog.option_ids[:20], catalog.none_option]
    backend.decide(Question(message=turns[0].message, options={o: "" for o in options}, none_option=catalog.none_option))
    step, solve = [], []
    for r in range(args.repeats):
        turn = turns[(r * 37) % len(turns)]
        started = time.perf_counter()
        backend.add_exemplar(turn.label, f"{turn.message} [new label {r}]")
        backend.decide(Question(message=turn.message, options={o: "" for o in options}, none_option=catalog.none_option))
        step.append((time.perf_counter() - started) * 1000)
        backend.head._weights = None  # time the refit (rebuild + solve) on its own
        started = time.perf_counter()
        backend.head._solve()
        solve.append((time.perf_counter() - started) * 1000)
    print(f"labels: {backend.head.labels}; classes: {len(backend.head.classes)}; dim: {backend.head.dim}")
    print(f"new label + route one turn: median {statistics.median(step):.1f} ms (max {max(step):.1f})")
    print(f"head refit alone: median {statistics.median(solve):.1f} ms (max {max(solve):.1f})")
    if args.logistic:
        logistic_refit(backend, turns, catalog, options, args.logistic)
    return 0


def logistic_refit(backend: SemanticBackend, turns: list, catalog, options: list[str], repeats: int) -> None:
    from tui_router.decide import logistic, semantic

    if not logistic.available():
        print("logistic term: scikit-learn is not installed (pip install -e '.[bench]')")
        return
    semantic.LOGISTIC_TERM = True
    labels, keys, vectors = backend._labels, backend._keys, backend._vectors
    started = time.perf_counter()
    model = backend._logistic_fit(labels, keys, vectors, None)
    first = (time.perf_counter() - started) * 1000
    cold, warm, joined = [], [], []
    backend.learn_in_background()
    for r in range(repeats):
        turn = turns[(r * 53 + 11) % len(turns)]
        backend.add_exemplar(turn.label, f"{turn.message} [logistic label {r}]")
        backend._flush()
        labels, keys, vectors = backend._labels, backend._keys, backend._vectors
        started = time.perf_counter()
        backend._logistic_fit(labels, keys, vectors, None)
        cold.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        backend._logistic_fit(labels, keys, vectors, None, warm=model)
        warm.append((time.perf_counter() - started) * 1000)
        # the console's path: the routing returns at once, the model joins when its thread is done
        backend._logistic = (backend._generation - 1, model, {})
        started = time.perf_counter()
        backend.decide(Question(message=turn.message, options={o: "" for o in options}, none_option=catalog.none_option))
        routed = (time.perf_counter() - started) * 1000
        backend.wait_for_refit(120)
        joined.append(((time.perf_counter() - started) * 1000, routed))
        model = backend._logistic[1]
    print(f"logistic term ({len(labels)} labels, C {logistic.LOGISTIC_C:g}, max_iter {logistic.LOGISTIC_MAX_ITER}): "
          f"first fit {first:.0f} ms; refit after a new label from zero: median {statistics.median(cold):.0f} ms "
          f"(max {max(cold):.0f}), warm-started: median {statistics.median(warm):.0f} ms (max {max(warm):.0f})")
    print(f"console (background refit): routing the next turn median {statistics.median(r for _, r in joined):.1f} ms; "
          f"the new model joins after median {statistics.median(j for j, _ in joined):.0f} ms (max {max(j for j, _ in joined):.0f})")


if __name__ == "__main__":
    raise SystemExit(main())
