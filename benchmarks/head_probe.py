"""The fitted head on its own, cross-validated like learning_curve.py, under several label weightings.

    nice python benchmarks/head_probe.py [--sets opsdesk,lifedesk,shopdesk,metatool-dev] [--ks 0,1,2,8]
        [--variant NAME=key:value,key:value ...]

For each set, k and head setting (tui_router.decide.fitted.HeadSettings fields, e.g.
`balanced=label_power:0,none_label_power:0.5,shrink:1`; the default variants are today's setting
and the balanced ones), the turns are split into 5 folds as learning_curve.py does, the head is
taught k labelled turns per option from the other folds (the none option at the tools' rate), and
each turn of the fold is scored by the head alone. Prints, per k: tool top-1 (acceptable) with
the head's argmax over the tools only (what the decision's softmax over offered tools sees) and
none recall of its argmax over every class. Aggregates only: the blind sets are not offered.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from learning_curve import known_sets, pick  # noqa: E402

from tui_router.catalog import load_catalog  # noqa: E402
from tui_router.config import RetrievalConfig  # noqa: E402
from tui_router.decide import semantic  # noqa: E402
from tui_router.decide.fitted import HeadSettings  # noqa: E402
from tui_router.decide.local import normalise_message  # noqa: E402
from tui_router.embed import QUERY, Embedder  # noqa: E402
from tui_router.evaluate import load_cases  # noqa: E402

TUNED_ON = ("demo-bench", "opsdesk", "lifedesk", "shopdesk", "metatool-dev")
VARIANTS = {
    "today": "",
    "balanced": "label_power:0,none_label_power:0.5",
    "balanced+shrunk": "label_power:0,none_label_power:0.5,shrink:1",
    "shrunk": "label_power:1,none_label_power:0.5,shrink:1",
}


def settings_of(spec: str) -> HeadSettings:
    values = dict(item.split(":", 1) for item in spec.split(",") if item)
    return HeadSettings(**{k: float(v) for k, v in values.items()})


def probe(name: str, metatool: Path, ks: list[int], variants: dict[str, HeadSettings], embedder: Embedder, folds: int = 5, seed: int = 12) -> None:
    catalog_path, cases_path, _ = known_sets(metatool)[name]
    catalog = load_catalog(catalog_path)
    cases, _ = load_cases([cases_path])
    vectors = embedder.embed_known([embedder.cut(c.turn.message) for c in cases], QUERY)
    vector_of = {c.turn.message: v for c, v in zip(cases, vectors, strict=True)}
    backend = semantic.SemanticBackend(catalog, exemplars=[], retrieval=RetrievalConfig(), embedder=embedder)
    none = catalog.none_option
    order = list(range(len(cases)))
    random.Random(seed).shuffle(order)
    fold_of = {i: n % folds for n, i in enumerate(order)}
    for label, settings in variants.items():
        semantic.head_settings = lambda s=settings: s  # the backend builds its head with these
        cells = []
        for k in ks:
            right = tools = none_right = nones = 0
            for f in range(folds):
                test = [c for i, c in enumerate(cases) if fold_of[i] == f]
                train = [c for i, c in enumerate(cases) if fold_of[i] != f]
                head = backend._fit_head()
                for lab, message in pick(train, k, seed + f, none, "natural") if k else []:
                    head.add_label(lab, normalise_message(message), vector_of[message])
                at_none = head.position[none]
                for c in test:
                    scores = head.scores(vector_of[c.turn.message])
                    if c.turn.label == none:
                        nones += 1
                        none_right += int(np.argmax(scores)) == at_none
                    else:
                        tools += 1
                        scores[at_none] = -np.inf
                        right += head.classes[int(np.argmax(scores))] in {c.turn.label, *c.turn.acceptable}
            cells.append(f"{right / max(tools, 1):.3f} / {none_right / max(nones, 1):.2f}")
        print(f"| {name} (tuned-on) | {label} | " + " | ".join(cells) + " |", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--metatool", default=str(ROOT.parent.parent / "shared" / "data" / "metatool"))
    parser.add_argument("--sets", default="opsdesk,lifedesk,shopdesk,metatool-dev")
    parser.add_argument("--ks", default="0,1,2,8")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=key:value,...")
    args = parser.parse_args()
    metatool = Path(args.metatool)
    if not metatool.is_dir():
        metatool = Path("/work/shared/data/metatool")
    if any("=" not in v for v in args.variant):
        print("error: a --variant is NAME=key:value,... (HeadSettings fields)", file=sys.stderr)
        return 2
    specs = dict(v.split("=", 1) for v in args.variant) if args.variant else VARIANTS
    try:
        variants = {name: settings_of(spec) for name, spec in specs.items()}
    except (TypeError, ValueError) as exc:
        print(f"error: a --variant is not NAME=key:value,... of HeadSettings fields ({exc})", file=sys.stderr)
        return 2
    sets = args.sets.split(",")
    unknown = [name for name in sets if name not in TUNED_ON]
    if unknown:
        print(f"error: {', '.join(unknown)}: not a tuned-on set ({', '.join(TUNED_ON)})", file=sys.stderr)
        return 2
    ks = [int(k) for k in args.ks.split(",")]
    print("| set | head labels | " + " | ".join(f"k = {k}" for k in ks) + " |")
    print("| --- | --- | " + " | ".join("---:" for _ in ks) + " |")
    embedder = Embedder(remember=20000)
    for name in sets:
        probe(name, metatool, ks, variants, embedder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
