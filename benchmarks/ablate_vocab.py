"""Ablation of the hand-entered vocabulary: each list switched off in turn, on every labelled set.

    nice python benchmarks/ablate_vocab.py --jobs 2                # every configuration, then the doc
    nice python benchmarks/ablate_vocab.py --only actions.received  # one configuration (appends)
    python benchmarks/ablate_vocab.py --doc                         # rewrite docs/vocab-ablation.md

One worker process per configuration (TUI_ROUTER_VOCAB_OFF set for it, so every module builds its
tables from the reduced lists), in-process evaluation (tui_router.evaluate.evaluate_router) of
each set with the local and the semantic backend, catalog only (--no-learn) and with labels
(leave-one-out learning). The semantic backend's fitted constants are NOT refitted without the list:
the figure is what the shipped model loses when the list goes. Results append to
benchmarks/results/vocab-ablation.jsonl (one line per configuration); --doc writes the table.
MetaTool dev is subsampled (every 2nd case from position 1: its odd half, which the semantic
fit did not use; ABLATE_METATOOL_STEP=8 for a quicker run) to keep the run near 40 minutes of CPU. The blind sets (benchmarks/data/blind,
from the main checkout when not in this tree) are reported as aggregates only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "vocab-ablation.jsonl"
DOC = ROOT / "docs" / "vocab-ablation.md"
METATOOL = ROOT.parent / "shared" / "data" / "metatool"
if not METATOOL.is_dir():
    METATOOL = Path("/work/shared/data/metatool")
BLIND = ROOT / "benchmarks" / "data" / "blind"
if not BLIND.is_dir():
    BLIND = Path("/work/main/benchmarks/data/blind")
METATOOL_STEP = int(os.environ.get("ABLATE_METATOOL_STEP", "2"))  # every Nth case of cases-dev from position 1

# set name -> (catalog, cases, aggregate only)
SETS: dict[str, tuple[str, str, bool]] = {
    "demo-bench": (str(ROOT / "catalogs" / "demo.toml"), str(ROOT / "sessions" / "demo-bench.toml"), False),
    "metatool-dev (odd half)": (str(METATOOL / "catalog.toml"), str(METATOOL / "cases-dev.toml"), False),
    "metatool-translated": (str(METATOOL / "catalog.toml"), str(ROOT / "benchmarks" / "data" / "metatool-dev-translated.toml"), False),
    "opsdesk": (str(ROOT / "benchmarks/data/opsdesk.toml"), str(ROOT / "benchmarks/data/opsdesk-cases.toml"), False),
    "shopdesk": (str(ROOT / "benchmarks/data/shopdesk.toml"), str(ROOT / "benchmarks/data/shopdesk-cases.toml"), False),
    "lifedesk": (str(ROOT / "benchmarks/data/lifedesk.toml"), str(ROOT / "benchmarks/data/lifedesk-cases.toml"), False),
    "citydesk (blind)": (str(BLIND / "citydesk.toml"), str(BLIND / "citydesk-cases.toml"), True),
    "labdesk (blind)": (str(BLIND / "labdesk.toml"), str(BLIND / "labdesk-cases.toml"), True),
}
BACKENDS = ("semantic", "local")


def configurations() -> dict[str, str]:
    """Configuration name -> TUI_ROUTER_VOCAB_OFF value."""
    sys.path.insert(0, str(ROOT))
    from tui_router import vocab

    lists = vocab.all_lists(ignore_off=True)
    concepts = lists["lexicon.concepts"]
    out = {"all on": ""}
    out.update({f"-{name}": name for name in lists})
    for tag in ("demo-bench", "metatool"):
        groups = [g for g, src in concepts.sources.items() if src == f"set {tag}"]
        out[f"-lexicon.concepts written for {tag}"] = ",".join(f"lexicon.concepts.{g}" for g in groups)
    out["all off"] = ",".join(lists)
    if "actions.cues_reply" in lists:  # the removals decided from the single-list rows, measured together
        reply_grant = (
            "actions.cues_reply,actions.cues_grant,actions.permitted,actions.received,actions.access_nouns,"
            "actions.tool_verbs.reply,actions.tool_verbs.grant"
        )
        out["-reply and grant actions"] = reply_grant
        out["-every removed list"] = ",".join(
            [reply_grant, "actions.cues_read,actions.request_openers,actions.negated_send",
             "semantic.injection_prototypes", "textnorm.unstemmed", out["-lexicon.concepts written for metatool"]]
        )
    return out


def worker(name: str) -> dict:
    """Evaluate every set with the lists of TUI_ROUTER_VOCAB_OFF switched off (run in a child)."""
    sys.path.insert(0, str(ROOT))
    from tui_router.catalog import load_catalog
    from tui_router.config import Config
    from tui_router.decide.local import LocalBackend
    from tui_router.decide.semantic import SemanticBackend
    from tui_router.embed import Embedder
    from tui_router.evaluate import check_cases, evaluate_router, load_cases
    from tui_router.route import Router

    started, cpu0 = time.perf_counter(), time.process_time()
    embedder = Embedder(remember=50_000)
    rows = []
    for set_name, (catalog_path, cases_path, aggregate) in SETS.items():
        if not Path(cases_path).exists():
            continue
        catalog = load_catalog(catalog_path)
        cases, sessions = load_cases([cases_path])
        if set_name.startswith("metatool-dev"):
            cases = cases[1::METATOOL_STEP]
        check_cases(sessions, cases, catalog)
        for backend_name in BACKENDS:
            for learn in (True, False):  # learning first: its exemplar vectors serve the catalog-only run
                config = Config()
                if backend_name == "semantic":
                    backend = SemanticBackend(catalog, embedder=embedder)
                else:
                    backend = LocalBackend(catalog)
                router = Router(catalog, config, backend=backend)
                report = evaluate_router(router, cases, learn=learn)
                m = report.gate_metrics()
                rows.append(
                    {
                        "set": set_name,
                        "aggregate_only": aggregate,
                        "backend": backend_name,
                        "learn": learn,
                        "n": report.n,
                        "top1": m["top1_acceptable"],
                        "top1_hits": report.overall.top1_acceptable.hits,
                        "tool_cases": report.overall.top1_acceptable.total,
                        "none_recall": m["none_recall"],
                        "none_hits": report.overall.none_recall.hits,
                        "none_cases": report.overall.none_recall.total,
                        "wrong_execute": m["wrong_execute_rate"],
                    }
                )
    return {
        "config": name,
        "off": os.environ.get("TUI_ROUTER_VOCAB_OFF", ""),
        "rows": rows,
        "metatool_step": METATOOL_STEP,
        "seconds": round(time.perf_counter() - started, 1),
        "cpu_seconds": round(time.process_time() - cpu0, 1),
    }


def run_one(name: str, off: str) -> str:
    env = {**os.environ, "TUI_ROUTER_VOCAB_OFF": off, "PYTHONHASHSEED": "0", "ABLATE_METATOOL_STEP": str(METATOOL_STEP)}
    done = subprocess.run(
        [sys.executable, __file__, f"--worker={name}"], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode:
        return f"{name}: failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}"
    line = done.stdout.strip().splitlines()[-1]
    with RESULTS.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")
    result = json.loads(line)
    return f"{name}: {result['seconds']} s ({result['cpu_seconds']} s CPU)"


def load_results() -> dict[str, dict]:
    out: dict[str, dict] = {}
    if RESULTS.exists():
        for line in RESULTS.read_text(encoding="utf-8").splitlines():
            if line.strip():
                result = json.loads(line)
                out[result["config"]] = result  # the latest run of a configuration wins
    return out


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}"


def _delta(x: float | None, base: float | None) -> str:
    if x is None or base is None:
        return "n/a"
    d = 100 * (x - base)
    return "0" if abs(d) < 0.05 else f"{d:+.1f}"


def write_doc() -> None:
    sys.path.insert(0, str(ROOT))
    from tui_router import vocab

    results = load_results()
    base = results.get("all on")
    if base is None:
        print("ablate_vocab: no 'all on' result yet", file=sys.stderr)
        return
    lists = {**vocab.all_lists(ignore_off=True), **lists_at(ABLATION_COMMIT)}
    step = base.get("metatool_step", 8)
    n_meta = next((r["n"] for r in base["rows"] if r["set"].startswith("metatool-dev")), 0)
    key = lambda r: (r["set"], r["backend"], r["learn"])  # noqa: E731
    base_rows = {key(r): r for r in base["rows"]}
    lines = [
        "# Vocabulary ablation",
        "",
        "Each hand-entered list (tui_router/vocab/*.toml) switched off in turn (`TUI_ROUTER_VOCAB_OFF`),",
        "every set evaluated with the local and the semantic backend, catalog only and with labels",
        "(leave-one-out learning). Written by `nice python benchmarks/ablate_vocab.py --jobs 2`, run from a",
        f"checkout of commit {ABLATION_COMMIT} (every list still present; run today it measures the lists that",
        "remain). Results in benchmarks/results/vocab-ablation.jsonl. MetaTool dev is subsampled: every",
        f"{'second' if step == 2 else f'{step}th'} case from position 1 ({n_meta} cases of its odd half, not used by the semantic fit).",
        "The semantic backend's fitted constants are not refitted without the list: a figure is what the",
        "shipped model loses. Which sets each list was written from comes from its provenance line",
        "(tui_router/vocab/*.toml, `git log -S`, docs/semantic-method.md).",
        "Blind sets (citydesk, labdesk) appear in aggregates only.",
        "",
        "## Baseline (all lists on)",
        "",
        "| set | backend | labels | n | top-1 (acceptable) | none recall | wrong execute |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for r in base["rows"]:
        lines.append(
            f"| {r['set']} | {r['backend']} | {'yes' if r['learn'] else 'no'} | {r['n']} | {_pct(r['top1'])} | "
            f"{_pct(r['none_recall'])} | {_pct(r['wrong_execute'])} |"
        )
    lines += [
        "",
        "## Effect of switching one list off",
        "",
        "Points of change against the baseline (negative top-1 / none recall, positive wrong execute: the",
        "list helps), summed over turns: `written for` sets are those the list was written from or",
        "after reading (see provenance); `other` sets are the rest. Cells: top-1 / none recall / wrong",
        "execute, in turns (hits gained or lost), over all four runs of each backend x labels.",
        "",
        "The last column applies the rule of the Decisions section: net = top-1 + none recall turns -",
        "wrong execute turns on the other sets, per backend; the list helps when the sum over both",
        "backends is -3 or less (switching it off loses 3 turns or more).",
        "",
        "| switched off | entries | written for | semantic, written-for sets | semantic, other sets | local, written-for sets | local, other sets | net other (sem / local) | helps elsewhere |",
        "| --- | ---: | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, result in results.items():
        if name == "all on":
            continue
        names = [n for n in result["off"].split(",") if n]
        entries = sum(
            lists[n].size() if n in lists else len(lists[n.rsplit(".", 1)[0]].groups.get(n.rsplit(".", 1)[1], ()))
            for n in names
            if n in lists or n.rsplit(".", 1)[0] in lists
        )
        written = written_for(name, names, lists)
        cells = []
        nets = []
        for backend in BACKENDS:
            for group in ("written", "other"):
                dt = dn = dw = 0
                for r in result["rows"]:
                    if r["backend"] != backend or (r["set"] in written) != (group == "written"):
                        continue
                    b = base_rows.get(key(r))
                    if b is None:
                        continue
                    dt += r["top1_hits"] - b["top1_hits"]
                    dn += r["none_hits"] - b["none_hits"]
                    dw += round((r["wrong_execute"] or 0) * r["n"]) - round((b["wrong_execute"] or 0) * b["n"])
                cells.append(f"{dt:+d} / {dn:+d} / {dw:+d}")
                if group == "other":
                    nets.append(dt + dn - dw)
        verdict = "yes" if sum(nets) <= -3 else "no"
        cells += [f"{nets[0]:+d} / {nets[1]:+d}", verdict]
        lines.append(f"| {name} | {entries} | {', '.join(sorted(written)) or 'none'} | " + " | ".join(cells) + " |")
    lines += ["", "## Per set (top-1 acceptable, points vs baseline; semantic / local, catalog only | with labels)", ""]
    sets = list(dict.fromkeys(r["set"] for r in base["rows"]))
    lines.append("| switched off | " + " | ".join(sets) + " |")
    lines.append("| --- | " + " | ".join("---" for _ in sets) + " |")
    for name, result in results.items():
        if name == "all on":
            continue
        rows = {key(r): r for r in result["rows"]}
        cells = []
        for s in sets:
            parts = []
            for learn in (False, True):
                pair = []
                for backend in BACKENDS:
                    r, b = rows.get((s, backend, learn)), base_rows.get((s, backend, learn))
                    pair.append(_delta(r and r["top1"], b and b["top1"]))
                parts.append("/".join(pair))
            cells.append(" \\| ".join(parts))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    cpu = sum(r.get("cpu_seconds", 0) for r in results.values())
    lines += ["", f"CPU time of the workers: {cpu / 60:.0f} min in all ({len(results)} configurations).", ""]
    DOC.write_text("\n".join(lines) + DECISIONS, encoding="utf-8")


# The results in benchmarks/results/vocab-ablation.jsonl were measured with the lists of this commit
# (before the removals they decided); the doc takes removed lists' sizes from it.
ABLATION_COMMIT = "5742508"


def lists_at(commit: str) -> dict:
    import tomllib

    from tui_router.vocab import VocabList

    out = {}
    for stem in ("actions", "injection", "lexicon", "semantic", "textnorm"):
        shown = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{commit}:tui_router/vocab/{stem}.toml"], capture_output=True, check=False
        )
        if shown.returncode == 0:
            for name, body in tomllib.loads(shown.stdout.decode()).items():
                out[f"{stem}.{name}"] = VocabList.model_validate(body)
    return out


# Which evaluation sets a list was written from or after reading (from its provenance).
WRITTEN_FOR = {
    "actions.cues_reply": {"demo-bench"},
    "actions.cues_grant": {"demo-bench"},
    "actions.permitted": {"demo-bench"},
    "actions.received": {"demo-bench"},
    "actions.negated_send": {"demo-bench"},
    "actions.access_nouns": {"demo-bench"},
    "actions.tool_verbs": {"demo-bench"},
    "injection.patterns": {"opsdesk", "shopdesk", "lifedesk"},
    "lexicon.llm_native": {"metatool-dev (odd half)", "metatool-translated", "demo-bench"},
    "lexicon.concepts": {"demo-bench", "metatool-dev (odd half)", "metatool-translated"},
}
FITTED_ON = {"metatool-dev (odd half)", "metatool-translated", "opsdesk", "shopdesk", "lifedesk"}  # the semantic fit's data


def written_for(config: str, names: list[str], lists: dict) -> set[str]:
    if config.endswith("written for demo-bench"):
        return {"demo-bench"}
    if config.endswith("written for metatool"):
        return {"metatool-dev (odd half)", "metatool-translated"}
    out: set[str] = set()
    for n in names:
        out |= WRITTEN_FOR.get(n, set())
        if n.startswith("lexicon.concepts."):
            source = lists["lexicon.concepts"].sources.get(n.rsplit(".", 1)[1])
            out |= {"demo-bench"} if source == "set demo-bench" else {"metatool-dev (odd half)", "metatool-translated"}
    return out


DECISIONS = """
## Decisions

Rule: a list stays when switching it off costs at least 3 turns net (top-1 hits plus none-recall
hits minus wrong executes, over the four runs and both backends) on the sets it was NOT written from; within
+-2 is noise (single turns flip between configurations). The semantic constants were not refitted
without the list, which favours keeping (a fitted feature loses its input); lists that still show
no effect elsewhere are removed, data and code path. Counts: `python scripts/count_vocab.py --code
f34ea10` (before: 2,354 entries in 22 lists) and `python scripts/count_vocab.py` (after: 1,821
entries in 12 lists). The rows above were measured at commit 5742508 (all lists present).

Kept, with the figure that justifies each (net turns on the other sets when switched off,
semantic / local):

| list | entries | net elsewhere | note |
| --- | ---: | --- | --- |
| lexicon.concepts, demo-catalog groups | 900 | -24 / -60 | written with the demo catalog's tools in view, yet they help on every other set |
| actions.tool_verbs (create/remove/update/read/send) | 105 | -30 / 0 | only the semantic backend has action features |
| actions.cues_remove | 123 | -14 / 0 | |
| actions.cues_update | 107 | -7 / 0 | |
| actions.cues_send | 92 | -6 / 0 | |
| actions.cues_create | 116 | -3 / 0 | at the threshold |
| injection.patterns | 34 | -4 / -6 | written after reading the desk sets' 24 injection cases (there -44 / -46 none-recall turns); elsewhere it still catches demo-bench's and the blind sets' injection turns |
| lexicon.llm_native | 69 | -15 / -23 | none recall -17 / -21 turns when off; it costs a few top-1 turns (+4 / +7) |
| semantic.none_prototypes | 51 | -65 / 0 | none recall -105 turns when off, top-1 +55 |
| semantic.english_words | 40 | -84 / 0 | none recall -119 turns when off, top-1 +54 |
| textnorm.stopwords | 164 | +6 / -419 | the local backend and BM25 retrieval need it |
| textnorm.suffixes | 20 | -7 / -34 | |

Removed:

| list | entries | net elsewhere | written from |
| --- | ---: | --- | --- |
| actions.cues_read | 141 | -2 / 0 | none (a general list) |
| reply and grant actions: actions.cues_reply, cues_grant, permitted, received, access_nouns, tool_verbs reply/grant | 191 | 0 / 0 | demo-bench's two misses (-2 tool turns there per semantic run) |
| actions.request_openers | 7 | 0 / 0 | |
| actions.negated_send | 1 | +2 / 0 | a demo-catalog case |
| semantic.injection_prototypes | 16 | 0 / 0 | the patterns decide every injection turn of every set |
| textnorm.unstemmed | 11 | 0 / +2 | |
| lexicon.concepts, MetaTool-topic groups (translate, weather, news, buy, price, travel, food, music, video, image, job, stock, map, learn) | 166 | +3 / -3 | MetaTool (there -10 / -10 top-1 turns on the odd half) |

All removals together (row "-every removed list", 533 entries): on the sets none of them was
written from, +3 top-1 / -1 none / -2 wrong-execute turns with the semantic backend (net +4) and
-2 / +3 / +3 with local (net -2); on the two blind sets +2 (semantic) and +4 (local) top-1 turns.
Where they were written from, they did help: demo-bench loses 2 of its 25 tool turns with the
semantic backend (100% -> 92%: the two turns the reply and grant lists were written for; the tests
that held those phrasings were removed with them), MetaTool's odd half 11 top-1 turns (semantic)
and 10 (local) of 879 x 2 runs, mostly the MetaTool-topic concept groups.

Check: the code after the removals, run with every remaining list on (`python
benchmarks/ablate_vocab.py --only "all on" --results /tmp/after.jsonl`), reproduces the "-every
removed list" row exactly: the same top-1, none-recall and wrong-execute counts on all 32 rows.
"""


def main() -> int:
    global RESULTS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", metavar="NAME", help=argparse.SUPPRESS)
    parser.add_argument("--only", action="append", help="configuration(s) to run (names as in the doc)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--doc", action="store_true", help="only rewrite the doc from the results")
    parser.add_argument("--list", action="store_true", help="print the configuration names")
    parser.add_argument("--results", type=Path, help=f"results file (default {RESULTS.relative_to(ROOT)})")
    args = parser.parse_args()
    if args.results:
        RESULTS = args.results.resolve()
    if args.worker:
        print(json.dumps(worker(args.worker)))
        return 0
    configs = configurations()
    if args.list:
        print("\n".join(configs))
        return 0
    if not args.doc:
        names = args.only or list(configs)
        unknown = [n for n in names if n not in configs]
        if unknown:
            print(f"ablate_vocab: unknown configuration {unknown[0]!r} (see --list)", file=sys.stderr)
            return 2
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            for message in pool.map(lambda n: run_one(n, configs[n]), names):
                print(message, flush=True)
    if not args.results:  # a side run (a check) leaves the doc alone
        write_doc()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
