"""Time `tui-router eval` on the 1,759 MetaTool dev cases (199 tools) with the local backend.

Each run is the whole eval in-process: load the catalog and the cases, build the router, teach the
local backend every case (leave-one-out), route every labelled turn afresh, compute every metric.
Runs are sequential; the median is the figure quoted in the README.

    python benchmarks/bench_eval.py --backend local                 # 3 runs
    python benchmarks/bench_eval.py --runs 5 --backend bm25
    python benchmarks/bench_eval.py --backend local --cases sessions/demo-bench.toml --catalog demo
    python benchmarks/bench_eval.py --readme-table [--readme]        # the README's headline rows

The backend is always named (default local, never the config's `auto`) and printed with its model.
The MetaTool data is looked for in ../shared/data/metatool (--metatool DIR to point elsewhere).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
METATOOL = ROOT.parent / "shared" / "data" / "metatool"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=str(METATOOL / "cases-dev.toml"))
    parser.add_argument("--catalog", default=str(METATOOL / "catalog.toml"))
    parser.add_argument("--backend", default="local")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-learn", action="store_true")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--readme-table", action="store_true", help="print the README headline table (demo-bench and MetaTool, local and bm25)")
    parser.add_argument("--readme", action="store_true", help="with --readme-table: also refresh the table in README.md")
    parser.add_argument("--metatool", type=Path, default=METATOOL, help="folder of the MetaTool cases-dev.toml and catalog.toml")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    if args.readme_table:
        return readme_table(args.metatool, args.readme)
    if args.metatool != METATOOL:
        args.cases = args.cases.replace(str(METATOOL), str(args.metatool))
        args.catalog = args.catalog.replace(str(METATOOL), str(args.metatool))
    from tui_router.catalog import load_catalog
    from tui_router.config import Config
    from tui_router.evaluate import run_eval

    if not Path(args.cases).exists():
        print(f"bench_eval: {args.cases} not found (the MetaTool data lives in ../shared/data/metatool)", file=sys.stderr)
        return 2
    times: list[float] = []
    cpu: list[float] = []
    report = None
    for _ in range(max(1, args.runs)):
        start, start_cpu = time.perf_counter(), time.process_time()
        catalog = load_catalog(args.catalog)
        report = run_eval([args.cases], Config(), catalog=catalog, backend=args.backend, learn=not args.no_learn)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    assert report is not None
    result = {
        "cases": Path(args.cases).name,
        "turns": report.n,
        "catalog_options": report.options,
        "backend": report.backend,
        "model": report.model,
        "learning": report.learning,
        "runs": len(times),
        "seconds": [round(t, 2) for t in times],
        "median_seconds": round(statistics.median(times), 2),
        # CPU time of this process: what the run costs on an idle core, whatever else shares the machine
        "cpu_seconds": [round(t, 2) for t in cpu],
        "median_cpu_seconds": round(statistics.median(cpu), 2),
        "turns_per_second": round(report.n / statistics.median(times), 1),
        "route_p50_ms": round(report.latency_ms["p50"] or 0.0, 2),
        "route_p95_ms": round(report.latency_ms["p95"] or 0.0, 2),
        "top1": report.overall.top1.value,
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"eval of {result['turns']} turns ({result['cases']}, {result['catalog_options']} options) with backend "
            f"{result['backend']} (model {result['model']}, learning {result['learning']}): median {result['median_seconds']} s wall over {result['runs']} runs {result['seconds']} "
            f"(median CPU {result['median_cpu_seconds']} s); "
            f"{result['turns_per_second']} turns/s; route p50 {result['route_p50_ms']} ms, p95 {result['route_p95_ms']} ms; "
            f"load average {result['load_average_1m']} on {result['cpus']} cpus"
        )
    return 0


def readme_table(metatool: Path, readme: bool) -> int:
    """The headline rows quoted in README.md, from the same eval as `tui-router eval`."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from figures import publish

    from tui_router.catalog import load_catalog
    from tui_router.config import Config
    from tui_router.evaluate import run_eval
    from tui_router.report import pct

    if not (metatool / "cases-dev.toml").exists():
        print(f"bench_eval: {metatool / 'cases-dev.toml'} not found (pass --metatool DIR)", file=sys.stderr)
        return 2
    # Whether anything was fitted or tuned on these very cases, said next to every figure.
    sets = [
        ("demo-bench (30)", [ROOT / "sessions" / "demo-bench.toml"], "demo", "yes: catalog keywords added after a failure review of it"),
        ("MetaTool dev (1,759, 199 tools)", [metatool / "cases-dev.toml"], str(metatool / "catalog.toml"), "no (only semantic was fitted on it)"),
    ]
    lines = [
        "| Cases | Backend (model) | Tuned on these cases? | Retrieval recall | Top-1 | Top-1 (acc.) | Top-3 | None P / R | Wrong-execute | ECE |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, cases, catalog_spec, tuned in sets:
        catalog = load_catalog(catalog_spec)
        for backend, label in (("local", "leave-one-out"), ("bm25", "baseline")):
            r = run_eval(cases, Config(backend=backend), catalog=catalog, backend=backend)
            o = r.overall
            cells = [
                name,
                f"`{r.backend}` ({r.model}), {label}",
                tuned,
                pct(o.retrieval_recall, counts=False),
                pct(o.top1, counts=False),
                pct(o.top1_acceptable, counts=False),
                pct(o.top3, counts=False),
                f"{pct(o.none_precision, counts=False)} / {pct(o.none_recall, counts=False)}",
                pct(r.wrong_execute_rate, counts=False),
                "n/a" if r.ece is None else f"{r.ece:.3f}",
            ]
            lines.append("| " + " | ".join(cells) + " |")
    body = "\n".join(lines)
    print(body)
    publish("eval-headline", "python benchmarks/bench_eval.py --readme-table", body, readme=readme)
    return 0


if __name__ == "__main__":
    sys.exit(main())
