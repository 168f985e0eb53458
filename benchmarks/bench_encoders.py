"""Speed of each encoder of [semantic] encoders and of the reranker (issue 30), all in one run.

    nice python benchmarks/bench_encoders.py [--encoders e5,bge-small-en,use-multilingual] [--folder DIR]
        [--tools 10000] [--skip-large] [--reps 40] [--metatool DIR] [--readme]

Per encoder: cold load (a fresh process: imports and model), ms per query p50/p90 for a short and a
300-character message (the encoder alone, one text per call, as a routed turn embeds), ms per text
for a batch of 256 catalog texts (the Embedder: shared among both cores where the encoder has
replicas), and for bge the two ways of using both cores on that batch (two runs of one session side
by side vs one run on two intra-op threads). The reranker: ms for 5 and 10 pairs. A first start
(build_router, empty cache; each in a fresh process) on the 40-tool demo catalog and on a synthetic
catalog of --tools tools with each encoder as the only one, and the start after it (cache filled).
--metatool: top-1 over MetaTool dev's tool turns, argmax cosine against each tool's when_to_use (no
labels; a tuned-on development set, aggregates only), per encoder and for bge without its query
instruction. The load average is printed at the start and the end; the tables go to
docs/figures/encoder-speed.md, and with --readme into README.md's figures:encoder-speed block.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_semantic import synthetic_catalog  # noqa: E402

SHORT = "remind me to call the dentist tomorrow"
LONG = (
    "Hi, could you please set up a meeting with the whole platform team for next Thursday afternoon, "
    "ideally around 3pm, to go over the incident review from last week's database outage, and make "
    "sure Priya and Tom are both invited since they led the recovery and have the full timeline ready now?"
)
assert 290 <= len(LONG) <= 310
RERANK_TEXTS = [
    "Set a personal reminder to do something at a given time.",
    "Create an event or a meeting in the calendar.",
    "Send a short text message to a phone number.",
    "Search the product documentation for an answer.",
    "Check the weather forecast for a city.",
    "Send an email message to a colleague or a customer.",
    "Delete a file from a folder.",
    "Book a flight or a train ticket.",
    "Translate a text into another language.",
    "Create an invoice for a customer.",
]

LOAD_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from tui_router.encoders import load_encoder, load_reranker
spec = sys.argv[1]
thing = load_reranker(spec) if spec == "ms-marco-minilm" else load_encoder(spec)
print(json.dumps({"load_s": time.perf_counter() - t0}))
"""

START_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from tui_router.catalog import load_catalog
from tui_router.config import config_from_dict
from tui_router.route import build_router
catalog = load_catalog(sys.argv[1])
config = config_from_dict({"backend": "semantic", "catalog": sys.argv[1], "semantic": {"encoders": [sys.argv[2]]}})
router = build_router(config, catalog)
built = time.perf_counter() - t0
backend = router.backend
print(json.dumps({"start_s": built, "start_cpu_s": time.process_time(), "encoded": backend.embedder.encoded,
                  "model": backend.embedder.model_id, "workers": backend.embedder.workers}))
"""


def child(script: str, *args: str, cache: Path | None = None) -> dict:
    env = dict(os.environ)
    env.pop("TUI_ROUTER_CONFIG", None)
    if cache is not None:
        env["XDG_CACHE_HOME"] = str(cache)
    out = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def timed(call, reps: int) -> list[float]:  # noqa: ANN001 (a callable)
    call()  # warm: first-run allocations are not a query's cost
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return times


def catalog_texts(n: int) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.toml"
        synthetic_catalog(n, path)
        from tui_router.catalog import load_catalog
        from tui_router.hybrid import tool_passage

        return [tool_passage(t) for t in load_catalog(path).tools]


def metatool_top1(encoders: dict, metatool: Path) -> dict[str, float]:
    """Top-1 of argmax cosine(message, when_to_use) over MetaTool dev's tool turns (aggregate only)."""
    from metatool_ceiling import load_set

    from tui_router.embed import Embedder
    from tui_router.encoders import PASSAGE, QUERY
    from tui_router.onnx_encoders import OnnxEncoder

    catalog, cases = load_set(str(metatool), "metatool-dev")
    tools = [t for t in catalog.tools if not t.is_escalation]
    ids = [t.id for t in tools]
    turns = [(c.turn.message, {c.turn.label, *(c.turn.acceptable or [])}) for c in cases if c.turn.label in ids]
    variants = dict(encoders)
    if "bge-small-en" in encoders:  # the same model without its query instruction
        bge = encoders["bge-small-en"]
        plain = object.__new__(OnnxEncoder)
        plain.__dict__.update(bge.__dict__)
        plain.prompts = {QUERY: "", PASSAGE: ""}
        variants["bge-small-en, no query instruction"] = plain
    result = {}
    for name, encoder in variants.items():
        embedder = Embedder(encoder=encoder, remember=0)
        passages = embedder.embed([t.when_to_use for t in tools], PASSAGE)
        queries = embedder.embed([m for m, _ in turns], QUERY)
        best = (queries @ passages.T).argmax(axis=1)
        result[name] = sum(ids[b] in labels for b, (_, labels) in zip(best.tolist(), turns, strict=True)) / len(turns)
    result["turns"] = len(turns)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--encoders", default="e5,bge-small-en,use-multilingual")
    parser.add_argument("--folder", action="append", default=[], help="also a local ONNX folder (a path)")
    parser.add_argument("--tools", type=int, default=10000)
    parser.add_argument("--skip-large", action="store_true", help="no first start on the --tools catalog")
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--metatool", default="", help="MetaTool folder: also top-1 per encoder on its dev turns")
    parser.add_argument("--readme", action="store_true", help="also refresh the README's figures:encoder-speed block")
    args = parser.parse_args()

    from tui_router.embed import PASSAGE, QUERY, Embedder
    from tui_router.encoders import load_encoder, load_reranker
    from tui_router.onnx_encoders import bge_small_en

    specs = [s for s in args.encoders.split(",") if s] + [str(Path(f).resolve()) for f in args.folder]
    load_start = os.getloadavg()[0]
    print(f"load average at the start: {load_start:.2f}; {os.cpu_count()} CPUs; Python {sys.version.split()[0]}", flush=True)
    texts = catalog_texts(256)
    rows: list[dict] = []
    encoders = {}
    for spec in specs:
        cold = statistics.median(child(LOAD_CHILD, spec)["load_s"] for _ in range(3))
        encoder = load_encoder(spec)
        encoders[spec] = encoder
        short = timed(lambda e=encoder: e.encode([SHORT], QUERY), args.reps)
        long = timed(lambda e=encoder: e.encode([LONG], QUERY), args.reps)
        embedder = Embedder(encoder=encoder, remember=0)
        batch = timed(lambda em=embedder: em.embed(texts, PASSAGE), 3)
        rows.append({"encoder": spec, "model": encoder.model_id, "dim": encoder.dim, "cold_s": cold,
                     "short": (statistics.median(short), pct(short, 0.9)), "long": (statistics.median(long), pct(long, 0.9)),
                     "batch_ms_per_text": statistics.median(batch) / len(texts), "workers": embedder.workers if hasattr(encoder, "replica") else 1})
        print(json.dumps(rows[-1]), flush=True)

    both_cores = {}
    if "bge-small-en" in specs:
        pooled = Embedder(encoder=encoders["bge-small-en"], workers=2, remember=0)
        intra = Embedder(encoder=bge_small_en(threads=2), workers=1, threads=2, remember=0)
        serial = Embedder(encoder=encoders["bge-small-en"], workers=1, remember=0)
        for name, embedder in (("2 runs side by side, 1 thread each", pooled), ("1 run, 2 intra-op threads", intra), ("1 run, 1 thread", serial)):
            both_cores[name] = statistics.median(timed(lambda em=embedder: em.embed(texts, PASSAGE), 3)) / len(texts)
        print(json.dumps({"bge both cores, ms per text": both_cores}), flush=True)

    rerank = {}
    reranker = load_reranker("ms-marco-minilm")
    rerank["cold_s"] = statistics.median(child(LOAD_CHILD, "ms-marco-minilm")["load_s"] for _ in range(3))
    for n in (5, 10):
        times = timed(lambda n=n: reranker.score(SHORT, RERANK_TEXTS[:n]), args.reps)
        rerank[n] = (statistics.median(times), pct(times, 0.9))
    print(json.dumps({"reranker": rerank}), flush=True)

    starts = []
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / f"synthetic-{args.tools}.toml"
        catalogs = [("demo (40 tools + 2 escalation)", "demo")]
        if not args.skip_large:
            synthetic_catalog(args.tools, big)
            catalogs.append((f"synthetic ({args.tools:,} tools)", str(big)))
        for label, catalog in catalogs:
            for spec in specs:
                cache = Path(tmp) / f"cache-{len(starts)}"
                cold = child(START_CHILD, catalog, spec, cache=cache)
                warm = child(START_CHILD, catalog, spec, cache=cache)
                starts.append({"catalog": label, "encoder": spec, "cold_s": cold["start_s"], "cold_cpu_s": cold["start_cpu_s"],
                               "encoded": cold["encoded"], "warm_s": warm["start_s"], "warm_encoded": warm["encoded"], "workers": cold["workers"]})
                print(json.dumps(starts[-1]), flush=True)

    quality = metatool_top1(encoders, Path(args.metatool)) if args.metatool else {}
    if quality:
        print(json.dumps({"metatool-dev top-1": quality}), flush=True)
    load_end = os.getloadavg()[0]
    text = report(rows, both_cores, rerank, starts, quality, load_start, load_end)
    print(text)
    from figures import publish

    command = "nice python benchmarks/bench_encoders.py" + (f" --metatool {args.metatool}" if args.metatool else "")
    print(f"wrote {publish('encoder-speed', command, text, readme=args.readme)}")
    return 0


def report(rows: list[dict], both: dict, rerank: dict, starts: list[dict], quality: dict, load_start: float, load_end: float) -> str:
    lines = [
        f"{os.cpu_count()} CPUs shared with other jobs, Python {sys.version.split()[0]}, one thread per model run; "
        f"load average {load_start:.1f} at the start and {load_end:.1f} at the end of the run "
        "(the command below):",
        "",
        "| encoder | model id | dim | cold load | query p50 / p90 (38 chars) | query p50 / p90 (300 chars) | catalog batch, per text |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| `{r['encoder']}` | `{r['model']}` | {r['dim']} | {r['cold_s']:.2f} s | {r['short'][0]:.1f} / {r['short'][1]:.1f} ms | "
            f"{r['long'][0]:.1f} / {r['long'][1]:.1f} ms | {r['batch_ms_per_text']:.2f} ms ({r['workers']} model{'s' if r['workers'] > 1 else ''}) |"
        )
    if both:
        lines += ["", "bge-small-en on 256 catalog texts, ms per text: " + "; ".join(f"{k}: {v:.2f}" for k, v in both.items()) + "."]
    lines += ["", f"Reranker `ms-marco-minilm` (cold load {rerank['cold_s']:.2f} s): 5 pairs {rerank[5][0]:.0f} / {rerank[5][1]:.0f} ms, "
              f"10 pairs {rerank[10][0]:.0f} / {rerank[10][1]:.0f} ms (p50 / p90, one run per question).", ""]
    lines += ["| first start (fresh process) | encoder | empty cache (CPU time) | texts embedded | cache filled | texts embedded |",
              "| --- | --- | ---: | ---: | ---: | ---: |"]
    for s in starts:
        lines.append(f"| {s['catalog']} | `{s['encoder']}` | {s['cold_s']:.1f} s ({s['cold_cpu_s']:.1f} s) | {s['encoded']:,} | {s['warm_s']:.2f} s | {s['warm_encoded']} |")
    if quality:
        lines += ["", f"MetaTool dev, {quality['turns']:,} tool turns, top-1 of argmax cosine against when_to_use, no labels (a tuned-on development set): "
                  + "; ".join(f"`{k}` {v:.3f}" for k, v in quality.items() if k != "turns") + "."]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
