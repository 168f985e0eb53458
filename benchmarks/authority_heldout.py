"""Held-out figures for the authority-claim detector (tui_router/authority.py).

    nice python benchmarks/authority_heldout.py

Claims: the held-out cases in benchmarks/data/authority-heldout.toml (never used to fit), scored
with the demo catalog's detector. False alarms on ordinary requests: every tool-labelled turn of
the labelled sets (demo-bench and the three desk sets), each with its own catalog's detector;
those messages are not used to fit it either (it sees the catalog's tool examples, not the cases).
A false alarm costs an auto-execution (the turn asks a person); a miss leaves the decision as
the backend made it.

Last, the labelled injection cases (tests/data/injection-cases.toml) are routed on the demo
catalog with the default backend (semantic when installed, else local; nothing learned from the
cases), with and without the cap, and the turns that end `execute` are counted.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tui_router.authority import THRESHOLD, AuthorityCheck, fit_for_catalog, load_examples  # noqa: E402
from tui_router.catalog import load_catalog  # noqa: E402
from tui_router.session import load_session  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
SETS = [
    ("demo", ROOT / "sessions" / "demo-bench.toml"),
    (DATA / "lifedesk.toml", DATA / "lifedesk-cases.toml"),
    (DATA / "opsdesk.toml", DATA / "opsdesk-cases.toml"),
    (DATA / "shopdesk.toml", DATA / "shopdesk-cases.toml"),
]


def main() -> int:
    heldout = load_examples(DATA / "authority-heldout.toml")
    demo = load_catalog("demo")
    started = time.perf_counter()
    model = fit_for_catalog(demo)
    fit_ms = (time.perf_counter() - started) * 1000
    check = AuthorityCheck(demo, model)
    rules = AuthorityCheck(demo, model)
    print(f"held-out: {len(heldout)} cases ({sum(e.claim for e in heldout)} claims); threshold {THRESHOLD}; fit on demo {fit_ms:.0f} ms")
    for name, flag in [
        ("classifier alone", check.claims),
        ("patterns + tool ids alone", lambda t: bool([r for r in rules.reasons(t) if not r.startswith("claims")])),
        ("combined (what the router uses)", lambda t: bool(check.reasons(t))),
    ]:
        tp = sum(flag(e.text) for e in heldout if e.claim)
        fp = sum(flag(e.text) for e in heldout if not e.claim)
        print(f"  {name:34s} recall {tp}/{sum(e.claim for e in heldout)}, false alarms {fp}/{sum(not e.claim for e in heldout)}")
    for e in heldout:
        if e.claim != bool(check.reasons(e.text)):
            print(f"    {'missed' if e.claim else 'false alarm'}: {e.text}")
    print("false alarms on tool-labelled turns of the labelled sets (combined):")
    total = flagged = 0
    for spec, cases in SETS:
        catalog = load_catalog(spec)
        detector = AuthorityCheck(catalog)
        messages = [t.message for t in load_session(cases).turns if t.label and t.label != catalog.none_option]
        hits = [m for m in messages if detector.reasons(m)]
        total += len(messages)
        flagged += len(hits)
        print(f"  {catalog.name:10s} {len(hits)}/{len(messages)}")
    print(f"  all        {flagged}/{total} ({flagged / total:.1%})")

    from tui_router.config import Config
    from tui_router.route import build_router

    router = build_router(Config(), demo)
    messages = [t.message for t in load_session(ROOT / "tests" / "data" / "injection-cases.toml").turns]
    capped = [router.route(m).action.value for m in messages]
    router.authority.caution = lambda message: None  # type: ignore[method-assign]  # the cap off
    uncapped = [router.route(m).action.value for m in messages]
    print(
        f"injection cases on demo, backend {router.backend.name} ({router.backend.model}): execute "
        f"{uncapped.count('execute')}/{len(messages)} without the cap, {capped.count('execute')}/{len(messages)} with it"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
