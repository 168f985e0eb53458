"""Learning curve: how routing quality grows with labelled turns per option, cross-validated.

    nice python benchmarks/learning_curve.py [--sets demo,opsdesk,...] [--backends semantic,bm25]
        [--ks 0,1,2,4,8] [--folds 5] [--metatool ../shared/data/metatool] [--max-turns N]
        [--markdown docs/learning-curve.md [--append TITLE]] [--svg docs/learning-curve.svg] [--loo]
        [--seeds 1,2,3,12]

For each labelled set and k: the turns are split into `folds` folds; for each fold, a fresh router
is taught up to k labelled turns per tool or escalation option drawn from the OTHER folds (the
none option, one class for every kind of request no tool serves, at the tools' labelling rate:
--none-rate natural; or k like the others: --none-rate k), then routes the fold's turns. So a turn is never trained on when it is
scored. k = 0 routes every turn with the catalog alone. `--loo` adds eval's own mode (every other
labelled turn taught, leave-one-out through Question.holdout).

With `--seeds`, every k >= 1 row is the mean over those seeds (each seed draws its own folds and its
own labels), and a column gives the lowest and highest top-1 (acceptable) among them: on a set of
about 160 turns one seed's split moves top-1 by several turns, so a dip between two k of one seed
can be the split, not the labels. k = 0 and loo do not depend on the seed and run once.

Prints aggregate figures only (top-1, top-1 acceptable, none recall, missed review, wrong execute,
ECE), never a turn: the blind sets (benchmarks/data/blind/) must stay unseen.
"""

from __future__ import annotations

import argparse
import random
import shlex
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tui_router.catalog import Catalog, load_catalog  # noqa: E402
from tui_router.config import Config  # noqa: E402
from tui_router.evaluate import LabelledCase, always_offered_ids, build_report, load_cases, route_all, score_turn  # noqa: E402
from tui_router.route import Router, build_router  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
METRICS = ("top1", "top1_acceptable", "none_recall", "missed_review_rate", "wrong_execute_rate", "ece")
SHORT = {"top1": "top-1", "top1_acceptable": "top-1 acc.", "none_recall": "none recall",
         "missed_review_rate": "missed review", "wrong_execute_rate": "wrong execute", "ece": "ECE"}


def known_sets(metatool: Path) -> dict[str, tuple[Path, Path, str]]:
    """name -> (catalog, cases, provenance: tuned-on or blind)."""
    sets = {
        "demo-bench": (ROOT / "catalogs" / "demo.toml", ROOT / "sessions" / "demo-bench.toml", "tuned-on"),
        "metatool-dev": (metatool / "catalog.toml", metatool / "cases-dev.toml", "tuned-on"),
    }
    for name in ("opsdesk", "lifedesk", "shopdesk"):
        sets[name] = (DATA / f"{name}.toml", DATA / f"{name}-cases.toml", "tuned-on")
    for name in ("labdesk", "citydesk"):
        sets[name] = (DATA / "blind" / f"{name}.toml", DATA / "blind" / f"{name}-cases.toml", "blind")
    return sets


def pick(train: list[LabelledCase], k: int, seed: int, none_option: str, none_rate: str) -> list[tuple[str, str]]:
    """Up to k labelled turns per tool or escalation option, drawn at random from `train`. The none
    option is one class for every kind of request no tool serves: with none_rate "natural" it gets
    labels at the rate the tools do (k / the mean turns per tool in `train`, times its own turns),
    as an operator labelling turns as they come would give it; with "k", k like any option."""
    return pick_pairs([(c.turn.label or "", c.turn.message) for c in train], k, seed, none_option, none_rate)


def pick_pairs(train: list[tuple[str, str]], k: int, seed: int, none_option: str, none_rate: str = "natural") -> list[tuple[str, str]]:
    """`pick` over (label, message) pairs (benchmarks/fit_label_terms.py draws its groups the same way)."""
    by_label: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for pair in train:
        by_label[pair[0]].append(pair)
    rng = random.Random(seed)
    tool_counts = [len(v) for label, v in by_label.items() if label != none_option]
    mean = sum(tool_counts) / len(tool_counts) if tool_counts else 1.0
    out = []
    for label in sorted(by_label):
        members = by_label[label][:]
        rng.shuffle(members)
        take = k
        if label == none_option and none_rate == "natural":
            take = max(k, round(min(1.0, k / mean) * len(members)))
        out += members[:take]
    return out


_EMBEDDER = None


def make_router(config: Config, catalog: Catalog, backend: str, cases: list[LabelledCase]) -> Router:
    """A fresh router per fold; the semantic backend shares one embedder whose memo holds every
    case message, embedded once in batches (the folds then cost no re-embedding)."""
    global _EMBEDDER
    if backend != "semantic":
        return build_router(config, catalog, backend)
    from tui_router.decide.semantic import SemanticBackend
    from tui_router.embed import QUERY, Embedder

    if _EMBEDDER is None:
        _EMBEDDER = Embedder(remember=20000)
    texts = [_EMBEDDER.cut(c.turn.message) for c in cases]
    _EMBEDDER.embed_known(texts, QUERY)
    semantic = SemanticBackend(catalog, settings=config.semantic, exemplars=[], retrieval=config.retrieval, embedder=_EMBEDDER)
    return Router(catalog, config, backend=semantic)


def run(catalog: Catalog, cases: list[LabelledCase], backend: str, k: int | str, folds: int, seed: int, none_rate: str = "natural") -> dict:
    config = Config()
    results = []
    name = model = ""
    if k == 0:
        groups = [(cases, [])]
    elif k == "loo":
        groups = [(cases, [(c.turn.label, c.turn.message) for c in cases])]
    else:
        order = list(range(len(cases)))
        random.Random(seed).shuffle(order)
        fold_of = {i: n % folds for n, i in enumerate(order)}
        groups = []
        for f in range(folds):
            test = [c for i, c in enumerate(cases) if fold_of[i] == f]
            train = [c for i, c in enumerate(cases) if fold_of[i] != f]
            groups.append((test, pick(train, int(k), seed + f, catalog.none_option, none_rate)))
    for test, taught in groups:
        router = make_router(config, catalog, backend, cases)
        add = getattr(router.backend, "add_exemplar", None)
        if callable(add):
            for label, message in taught:
                add(label, message)
        decisions = route_all(router, [c.turn.message for c in test])
        always = always_offered_ids(catalog, config)
        results += [score_turn(c.turn, d, catalog, always_offered=always, source=c.source, index=c.index) for c, d in zip(test, decisions, strict=True)]
        name, model = router.backend.name, router.backend.model
    report = build_report(results, catalog, backend=name, model=model, learning=str(k), files=[])
    metrics = report.gate_metrics()
    return {m: metrics.get(m) for m in METRICS} | {"n": len(results)}


def mean_run(runs: list[dict]) -> dict:
    """Each metric's mean over the runs (seeds); a metric some run could not compute stays out of its mean."""
    out: dict = {"n": runs[0]["n"]}
    for m in METRICS:
        values = [r[m] for r in runs if r[m] is not None]
        out[m] = sum(values) / len(values) if values else None
    return out


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def svg(curves: dict[str, dict[int, float | None]], ks: list[int], path: Path, title: str) -> None:
    """A small line plot, written by hand (no plotting dependency)."""
    w, h, left, bottom, top, right = 640, 360, 50, 40, 30, 160
    pw, ph = w - left - right, h - top - bottom
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]

    def x(i: int) -> float:
        return left + pw * i / max(1, len(ks) - 1)

    def y(v: float) -> float:
        return top + ph * (1 - v)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
             f'<text x="{left}" y="18" font-size="13">{title}</text>']
    for v in (0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<line x1="{left}" x2="{left + pw}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 30}" y="{y(v) + 4:.1f}">{v:.2f}</text>')
    for i, k in enumerate(ks):
        parts.append(f'<text x="{x(i) - 4:.1f}" y="{h - bottom + 16}">{k}</text>')
    parts.append(f'<text x="{left + pw / 2 - 60:.1f}" y="{h - 6}">labelled turns per option (k)</text>')
    for n, (label, points) in enumerate(curves.items()):
        colour = colours[n % len(colours)]
        xy = [(x(i), y(points[k])) for i, k in enumerate(ks) if points.get(k) is not None]
        if xy:
            parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in xy)}"/>')
        parts.append(f'<text x="{left + pw + 10}" y="{top + 14 * n + 10}" fill="{colour}">{label}</text>')
    parts.append("</svg>")
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--metatool", default=str(ROOT.parent.parent / "shared" / "data" / "metatool"))
    parser.add_argument("--sets", default="demo-bench,opsdesk,lifedesk,shopdesk,labdesk,citydesk,metatool-dev")
    parser.add_argument("--backends", default="semantic,bm25")
    parser.add_argument("--ks", default="0,1,2,4,8")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--seeds", default="", help="comma-separated seeds: report each k >= 1 as the mean over them")
    parser.add_argument("--none-rate", choices=("natural", "k"), default="natural",
                        help="labels of the none option: at the tools' rate (natural) or k like any option")
    parser.add_argument("--loo", action="store_true", help="also eval's leave-one-out mode (every other turn taught)")
    parser.add_argument("--max-turns", type=int, default=0, help="every n-th turn so that at most this many are used")
    parser.add_argument("--markdown", default="")
    parser.add_argument("--append", default="", metavar="TITLE",
                        help="append the table to --markdown as a section with this title (and its command)")
    parser.add_argument("--svg", default="")
    args = parser.parse_args()
    metatool = Path(args.metatool)
    if not metatool.is_dir():
        metatool = Path("/work/shared/data/metatool")
    sets = known_sets(metatool)
    ks: list[int | str] = [int(k) for k in args.ks.split(",")]
    if args.loo:
        ks.append("loo")
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else [args.seed]
    spread = len(seeds) > 1
    lines = ["| set (provenance) | backend | k | n | " + " | ".join(SHORT[m] for m in METRICS) + (" | top-1 acc. range |" if spread else " |"),
             "| --- | --- | ---: | ---: | " + " | ".join("---:" for _ in METRICS) + (" | ---: |" if spread else " |")]
    print(lines[0] + "\n" + lines[1], flush=True)
    curves: dict[str, dict[int, float | None]] = {}
    started = time.perf_counter()
    for set_name in args.sets.split(","):
        catalog_path, cases_path, provenance = sets[set_name]
        catalog = load_catalog(catalog_path)
        cases, _ = load_cases([cases_path])
        if args.max_turns and len(cases) > args.max_turns:
            step = -(-len(cases) // args.max_turns)
            cases = cases[::step]
        for backend in args.backends.split(","):
            for k in ks if backend != "bm25" else [0]:
                drawn = isinstance(k, int) and k > 0
                runs = [run(catalog, cases, backend, k, args.folds, s, args.none_rate) for s in (seeds if drawn else seeds[:1])]
                r = mean_run(runs)
                line = f"| {set_name} ({provenance}) | {backend} | {k} | {r['n']} | " + " | ".join(fmt(r[m]) for m in METRICS)
                if spread:
                    tops = [x["top1_acceptable"] for x in runs if x["top1_acceptable"] is not None]
                    line += f" | {min(tops):.3f}-{max(tops):.3f}" if drawn and tops else " | -"
                line += " |"
                lines.append(line)
                print(line, flush=True)
                if backend != "bm25" and isinstance(k, int):
                    curves.setdefault(f"{set_name} ({provenance})", {})[k] = r["top1_acceptable"]
    elapsed = time.perf_counter() - started
    print(f"({elapsed:.0f} s)", file=sys.stderr)
    command = "nice python benchmarks/learning_curve.py " + shlex.join(sys.argv[1:])
    if spread:
        lines.append(f"\nk >= 1: mean over seeds {', '.join(map(str, seeds))} (each its own folds and labels); the last column "
                     "is the lowest and highest top-1 (acceptable) among them.")
        print(lines[-1])
    if args.markdown and args.append:
        with Path(args.markdown).open("a", encoding="utf-8") as out:
            out.write(f"\n## {args.append}\n\nMade by `{command}`.\n\n" + "\n".join(lines) + "\n")
    elif args.markdown:
        Path(args.markdown).write_text(
            "# Learning curve\n\nMade by `" + command + "` (cross-validated: a turn is never taught when it is "
            "scored; k = labelled turns per tool taught from the other folds, the none option at --none-rate; `loo` = every other turn, as "
            "`tui-router eval` does).\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
    if args.svg:
        int_ks = [k for k in ks if isinstance(k, int)]
        svg(curves, int_ks, Path(args.svg), "top-1 (acceptable) vs labelled turns per option, default backend")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
