"""How often the single nearest labelled turn carries the right label (why learning can hurt).

    python benchmarks/exemplar_neighbours.py

For each blind set (benchmarks/data/*-cases.toml) and a quarter of MetaTool dev, every labelled turn
is embedded and compared with the other turns of its set (leave-one-out, as the eval learns). At
each cosine threshold it prints the share of turns whose right label has an exemplar that close,
the share with a wrong label that close, and, among turns with any exemplar that close, how often
the nearest one has the right label. The semantic backend's example feature uses the best cosine
per label, so a wrong near neighbour is what pulls a case away when it learns.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tui_router.catalog import load_catalog
from tui_router.decide.semantic import SemanticBackend
from tui_router.session import load_session

ROOT = Path(__file__).resolve().parent.parent
METATOOL = ROOT.parent / "shared" / "data" / "metatool"
THRESHOLDS = (0.80, 0.83, 0.85, 0.87, 0.89, 0.91)


def sets():
    for cases in sorted((ROOT / "benchmarks" / "data").glob("*desk-cases.toml")):
        catalog = cases.with_name(cases.name.removesuffix("-cases.toml") + ".toml")
        yield catalog.stem, load_catalog(catalog), load_session(cases).labelled()
    if (METATOOL / "catalog.toml").exists():
        turns = [t for t in load_session(METATOOL / "cases-dev.toml").turns if t.label][::4]
        yield "metatool dev (every 4th case)", load_catalog(METATOOL / "catalog.toml"), turns


def main() -> int:
    for name, catalog, turns in sets():
        backend = SemanticBackend(catalog, exemplars=[(t.label, t.message) for t in turns])
        right, wrong = [], []
        for turn in turns:
            best = backend._exemplar_best(backend.hybrid.signals(turn.message).vector, turn.message)
            right.append(best.get(turn.label, -1.0))
            wrong.append(max([s for label, s in best.items() if label != turn.label] or [-1.0]))
        r, w = np.asarray(right), np.asarray(wrong)
        print(f"{name}: {len(turns)} labelled turns")
        print("  cosine >=  right label near  wrong label near  nearest is right")
        for th in THRESHOLDS:
            near = np.maximum(r, w) >= th
            share = f"{np.mean((r > w)[near]):.0%}" if near.any() else "n/a"
            print(f"  {th:9.2f}  {np.mean(r >= th):15.0%}  {np.mean(w >= th):15.0%}  {share:>16}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
