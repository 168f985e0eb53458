"""Fit the semantic backend's constants on MetaTool dev and blind catalogs, check them on held-out data.

    python benchmarks/fit_semantic.py [--metatool ../shared/data/metatool] [--cv] [--no-extra] [--quick]

Fitting data:
  * from the fitting half (even positions) of MetaTool cases-dev.toml:
    - zero-shot: the MetaTool catalog as released (no keywords, no examples);
    - learn: the same cases with leave-one-out exemplars from every dev case (what `tui-router eval`
      gives a learning backend);
    - examples: the catalog given 3 examples per tool taken from the OTHER half (so the weight of
      catalog examples is learnt; the released catalog has none);
    - translated: benchmarks/data/metatool-dev-translated.toml (fitting-half queries translated by
      hand into 8 languages), zero-shot and with exemplars from the other half; counted 3 times;
  * every benchmarks/data/<name>.toml with a <name>-cases.toml (catalogs and cases written blind:
    opsdesk, shopdesk, lifedesk), catalog only and leave-one-out, counted twice (--no-extra: none).
--cv first scores each of those sets with constants fitted without it (leave-one-set-out), the
honest figure for a catalog nobody fitted on. Then the final fit is checked on the other MetaTool
half, on the demo bench and on tests/data/demo-multilingual.toml; neither of the last two is used
for fitting.

The default execute threshold is fitted last: the lowest `high` at which wrong executes stay within
EXECUTE_TARGET of turns on every fitting group (the router uses it when the config sets none).
Prints the fitted constants (--write stores them in tui_router/decide/fitted-model.json) and the check tables. Query
embeddings are cached in the embedding cache; a run with --cv takes about 11 minutes here.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tui_router.catalog import Catalog, Risk, Tool, load_catalog  # noqa: E402
from tui_router.confidence import reference_confidence  # noqa: E402
from tui_router.config import PolicyConfig, RetrievalConfig  # noqa: E402
from tui_router.decide import semantic  # noqa: E402
from tui_router.decide.fitted import CONSTANTS  # noqa: E402
from tui_router.decide.semantic import Observation, SemanticBackend  # noqa: E402
from tui_router.embed import QUERY, Embedder  # noqa: E402
from tui_router.hybrid import RetrievalWeights, cos_feature, example_feature  # noqa: E402
from tui_router.session import Turn, load_session  # noqa: E402

TRANSLATED = ROOT / "benchmarks" / "data" / "metatool-dev-translated.toml"
DEMO_BENCH = ROOT / "sessions" / "demo-bench.toml"
MULTILINGUAL = ROOT / "tests" / "data" / "demo-multilingual.toml"
NONE_FEATURES = list(semantic.NONE_WEIGHTS)
EMBEDDER = Embedder()
# the default execute threshold is fitted so that, on every fitting set, wrong executes stay within this
# share of turns (issue 12: wrong_execute_rate <= 0.02); medium stays the config default unless above it
EXECUTE_TARGET = 0.02
HIGH_GRID = [round(0.5 + 0.01 * i, 2) for i in range(50)]
CONFIRMED = frozenset(PolicyConfig().confirm_risks) | {Risk.escalation}  # never executed at a high band


@dataclass
class Case:
    obs: Observation
    answers: set[str]  # label + acceptable
    none: bool
    retrieved: bool
    tags: list[str]
    auto: frozenset[str] = frozenset()  # offered tools a high band executes (not escalation, no confirm risk)


@dataclass
class Condition:
    name: str
    catalog: Catalog
    turns: list[Turn]
    exemplars: list[tuple[str, str]]
    weight: int = 1


def with_examples(catalog: Catalog, turns: list[Turn], per_tool: int = 3) -> Catalog:
    examples: dict[str, list[str]] = {}
    for turn in turns:
        if turn.label and turn.label in catalog and len(turn.message) < 300:
            bucket = examples.setdefault(turn.label, [])
            if len(bucket) < per_tool:
                bucket.append(turn.message)
    tools = tuple(
        Tool.model_validate({**t.model_dump(by_alias=True), "examples": examples.get(t.id, [])}) for t in catalog.tools
    )
    return catalog.model_copy(update={"tools": tools, "name": f"{catalog.name}-with-examples"})


def backend_for(cond: Condition) -> SemanticBackend:
    # one process-wide embedder, primed from the disk cache: case messages are embedded once
    backend = SemanticBackend(cond.catalog, exemplars=[], retrieval=RetrievalConfig(), embedder=EMBEDDER)
    prime(backend, cond.turns)
    for label, message in cond.exemplars:
        backend.add_exemplar(label, message)
    return backend


def prime(backend: SemanticBackend, turns: list[Turn]) -> None:
    texts = [backend.embedder.cut(t.message) for t in turns]
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    vectors = backend.store.load_or_embed(
        "fit-cases", digest, QUERY, texts, backend.embedder.embed, backend.embedder.dim
    )
    backend.embedder.remember(QUERY, texts, vectors)


def signals_table(backend: SemanticBackend, turns: list[Turn]) -> tuple[list[np.ndarray], list[set[int]]]:
    """Per tool case: (cos, example, bm25 share, log bm25) for every tool, and the gold indexes."""
    position = {t.id: i for i, t in enumerate(backend.index.tools)}
    feats, golds = [], []
    for turn in turns:
        answers = {a for a in [turn.label, *turn.acceptable] if a in position}
        if not answers:
            continue
        s = backend.hybrid.signals(turn.message)
        top = s.bm25.max() if s.bm25.max() > 0 else 1.0
        feats.append(np.stack([cos_feature(s.cos), example_feature(s.example), s.bm25 / top, np.log1p(s.bm25)], -1))
        golds.append({position[a] for a in answers})
    return feats, golds


def observe_all(backend: SemanticBackend, turns: list[Turn], learn: bool) -> list[Case]:
    cases = []
    none_option = backend.catalog.none_option
    for turn in turns:
        holdout = turn.message if learn else None
        extra = backend.suggest_candidates(turn.message, holdout)
        retrieval = backend.hybrid.retrieve(turn.message, extra=extra)
        options = [c.id for c in retrieval.candidates] + [none_option]
        obs = backend.observe(turn.message, options, holdout)
        answers = {turn.label, *turn.acceptable}
        auto = frozenset(t for t in obs.tools if (tool := backend.catalog.get(t)) is not None and tool.risk not in CONFIRMED)
        cases.append(Case(obs, answers, turn.label == none_option, bool(answers & set(obs.tools)), list(turn.tags), auto))
    return cases


# -- optimisers (numpy Adam; both problems are convex) ---------------------------------------
def fit_choice(feats: list[np.ndarray], golds: list[set[int]], l2: float = 1e-3, steps: int = 1500) -> np.ndarray:
    """Conditional logit: softmax over each case's rows, likelihood of its acceptable set."""
    width = max(len(f) for f in feats)
    dim = feats[0].shape[1]
    X = np.zeros((len(feats), width, dim))
    mask = np.zeros((len(feats), width), bool)
    good = np.zeros((len(feats), width), bool)
    for k, (f, g) in enumerate(zip(feats, golds, strict=True)):
        X[k, : len(f)] = f
        mask[k, : len(f)] = True
        good[k, list(g)] = True
    w = np.zeros(dim)
    m = np.zeros(dim)
    v = np.zeros(dim)
    for t in range(1, steps + 1):
        U = np.where(mask, X @ w, -1e9)
        U -= U.max(1, keepdims=True)
        P = np.exp(U)
        P /= P.sum(1, keepdims=True)
        Q = P * good
        Q /= np.maximum(Q.sum(1, keepdims=True), 1e-12)
        g = ((P - Q)[:, :, None] * X).sum((0, 1)) / len(X) + l2 * w
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w -= 0.05 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return w


def fit_logistic(H: np.ndarray, y: np.ndarray, offset: np.ndarray, l2: float = 1e-3, steps: int = 3000) -> np.ndarray:
    w = np.zeros(H.shape[1])
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for t in range(1, steps + 1):
        p = 1 / (1 + np.exp(-np.clip(H @ w + offset, -50, 50)))
        g = H.T @ (p - y) / len(y) + l2 * w
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w -= 0.05 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return w


def pooled_of(obs: Observation, tool_w: np.ndarray) -> float:
    s = obs.tool_features @ tool_w
    peak = float(s.max())
    return peak + math.log(float(np.exp(s - peak).sum()))


def injection_offset(obs: Observation) -> float:
    """The fixed (not fitted) injection terms of the none log-odds."""
    return semantic.none_log_odds(obs, 0.0, {k: 0.0 for k in NONE_FEATURES})


def fit_decision(groups: list[tuple[list[Case], int]]) -> tuple[np.ndarray, dict[str, float]]:
    feats, golds = [], []
    for cases, weight in groups:
        for c in cases:
            if c.obs.tools and not c.none:
                g = {i for i, t in enumerate(c.obs.tools) if t in c.answers}
                if g:
                    feats.extend([c.obs.tool_features] * weight)
                    golds.extend([g] * weight)
    tool_w = fit_choice(feats, golds)
    rows, ys, offs = [], [], []
    for cases, weight in groups:
        for c in cases:
            if not c.obs.tools:
                continue
            f = c.obs.none_features(pooled_of(c.obs, tool_w))
            for _ in range(weight):
                rows.append([f[k] for k in NONE_FEATURES])
                ys.append(float(c.none))
                offs.append(injection_offset(c.obs))
    none_w = fit_logistic(np.asarray(rows), np.asarray(ys), np.asarray(offs))
    return tool_w, dict(zip(NONE_FEATURES, (round(float(x), 3) for x in none_w), strict=True))


def executes(cases: list[Case], tool_w, none_w) -> list[tuple[float, bool, bool, bool]]:
    """Per case: (confidence, would execute at a high band, chosen right, none chosen), as `eval` scores a turn."""
    out = []
    for c in cases:
        tools, p_none = semantic.distribution(c.obs, tool_w, none_w)
        probabilities = {**tools, "NONE": p_none}
        choice = max(probabilities, key=probabilities.get)
        ok = (choice == "NONE" and c.none) or (choice in c.answers)
        out.append((reference_confidence(probabilities), choice in c.auto, ok, choice == "NONE"))
    return out


def wrong_execute(rows: list[tuple[float, bool, bool, bool]], high: float) -> float:
    return sum(conf >= high and auto and not ok for conf, auto, ok, _ in rows) / max(len(rows), 1)


def fit_high(groups: list[list[Case]], tool_w, none_w) -> float:
    """The lowest high threshold at which every fitting group's wrong-execute share is within target."""
    tables = [executes(cases, tool_w, none_w) for cases in groups if cases]
    for high in HIGH_GRID:
        if all(wrong_execute(rows, high) <= EXECUTE_TARGET for rows in tables):
            return high
    return HIGH_GRID[-1]


# -- scoring ------------------------------------------------------------------------------------
def score(cases: list[Case], tool_w: tuple[float, ...], none_w: dict[str, float]) -> dict[str, float]:
    right = tool_cases = none_hit = none_cases = none_called = none_called_right = 0
    conf_ok: list[tuple[float, bool]] = []
    for c in cases:
        tools, p_none = semantic.distribution(c.obs, tool_w, none_w)
        best = max(tools, key=tools.get) if tools else None
        choice = best if best is not None and tools[best] > p_none else "NONE"
        top = max([p_none, *tools.values()])
        ok = (choice == "NONE" and c.none) or (choice in c.answers)
        conf_ok.append((top, ok))
        if c.none:
            none_cases += 1
            none_hit += choice == "NONE"
        else:
            tool_cases += 1
            right += choice in c.answers
        if choice == "NONE":
            none_called += 1
            none_called_right += c.none
    bins: dict[int, list[tuple[float, bool]]] = {}
    for conf, ok in conf_ok:
        bins.setdefault(min(int(conf * 10), 9), []).append((conf, ok))
    ece = sum(
        len(b) / len(conf_ok) * abs(sum(x for x, _ in b) / len(b) - sum(o for _, o in b) / len(b))
        for b in bins.values()
    )
    return {
        "n": len(cases),
        "top1": 100 * right / max(tool_cases, 1),
        "none_recall": 100 * none_hit / none_cases if none_cases else float("nan"),
        "none_precision": 100 * none_called_right / none_called if none_called else float("nan"),
        "recall": 100 * sum(c.retrieved for c in cases if not c.none) / max(tool_cases, 1),
        "ece": ece,
    }


def recall_at(backend: SemanticBackend, turns: list[Turn], weights: RetrievalWeights, ks=(1, 3, 5, 10)) -> dict:
    """Retrieval recall@k of BM25, cosine, reciprocal rank fusion and the fitted linear fusion."""
    position = {t.id: i for i, t in enumerate(backend.index.tools)}
    out: dict[str, list[float]] = {m: [0.0] * len(ks) for m in ("bm25", "cosine", "rrf", "linear")}
    n = 0
    for turn in turns:
        answers = {position[a] for a in [turn.label, *turn.acceptable] if a in position}
        if not answers:
            continue
        n += 1
        s = backend.hybrid.signals(turn.message)
        top = s.bm25.max() if s.bm25.max() > 0 else 1.0
        linear = (
            weights.cos * cos_feature(s.cos)
            + weights.example * example_feature(s.example)
            + weights.bm25 * s.bm25 / top
            + weights.log_bm25 * np.log1p(s.bm25)
        )
        rank_bm25 = np.argsort(np.argsort(-np.where(s.bm25 > 0, s.bm25, -1), kind="stable"), kind="stable")
        rank_cos = np.argsort(np.argsort(-s.cos, kind="stable"), kind="stable")
        rrf = 1 / (60 + rank_bm25) + 1 / (60 + rank_cos)
        for name, sc in (
            ("bm25", np.where(s.bm25 > 0, s.bm25, -1)),
            ("cosine", s.cos),
            ("rrf", rrf),
            ("linear", linear),
        ):
            order = np.argsort(-sc, kind="stable")
            for j, k in enumerate(ks):
                out[name][j] += bool(answers & set(order[:k].tolist()))
    return {name: [round(100 * x / max(n, 1), 1) for x in vals] for name, vals in out.items()}


def extra_sets() -> list[tuple[str, Catalog, list[Turn]]]:
    """benchmarks/data/<name>.toml + <name>-cases.toml pairs: catalogs written blind, with cases."""
    found = []
    for cases_path in sorted((ROOT / "benchmarks" / "data").glob("*-cases.toml")):
        catalog_path = cases_path.with_name(cases_path.name.removesuffix("-cases.toml") + ".toml")
        if catalog_path.exists():
            found.append((catalog_path.stem, load_catalog(catalog_path), load_session(cases_path).labelled()))
    return found


class Fitter:
    """Fits every constant from MetaTool's fitting half and a chosen list of extra sets."""

    def __init__(self, mt_catalog: Catalog, dev: list[Turn], translated: list[Turn]) -> None:
        self.mt_catalog = mt_catalog
        self.dev = dev
        self.fit_half, self.check_half = dev[0::2], dev[1::2]
        self.translated = translated

    def observed(self, cond: Condition, learn: bool, weights: RetrievalWeights) -> list[Case]:
        b = backend_for(cond)
        b.hybrid.weights = weights
        return observe_all(b, cond.turns, learn)

    def fit(self, extras: list[tuple[str, Catalog, list[Turn]]], extra_weight: int = 2):
        mt, fit_half, check_half = self.mt_catalog, self.fit_half, self.check_half
        all_pairs = [(t.label, t.message) for t in self.dev]
        other_pairs = [(t.label, t.message) for t in check_half]
        # 1. retrieval weights: conditional logit over every tool
        feats, golds = signals_table(backend_for(Condition("mt", mt, fit_half, [])), fit_half)
        ex_catalog = with_examples(mt, check_half)
        f2, g2 = signals_table(backend_for(Condition("mt-examples", ex_catalog, fit_half, [])), fit_half)
        feats, golds = feats + f2, golds + g2
        for name, catalog, turns in extras:
            f3, g3 = signals_table(backend_for(Condition(name, catalog, turns, [])), turns)
            feats, golds = feats + f3 * extra_weight, golds + g3 * extra_weight
        weights = RetrievalWeights(*(round(float(x), 2) for x in fit_choice(feats, golds)))
        semantic.RETRIEVAL_WEIGHTS = weights
        # 2. the decision, over candidates from the real hybrid retrieval
        groups = [
            (self.observed(Condition("mt", mt, fit_half, []), False, weights), 1),
            (self.observed(Condition("mt", mt, fit_half, all_pairs), True, weights), 1),
            (self.observed(Condition("mt-examples", ex_catalog, fit_half, []), False, weights), 1),
            (self.observed(Condition("tr", mt, self.translated, []), False, weights), 3),
            (self.observed(Condition("tr", mt, self.translated, other_pairs), True, weights), 3),
        ]
        for name, catalog, turns in extras:
            pairs = [(t.label, t.message) for t in turns]
            groups.append((self.observed(Condition(name, catalog, turns, []), False, weights), extra_weight))
            groups.append((self.observed(Condition(name, catalog, turns, pairs), True, weights), extra_weight))
        tool_w, none_w = fit_decision(groups)
        tool_w = tuple(round(float(x), 3) for x in tool_w)
        high = fit_high([cases for cases, _ in groups], tool_w, none_w)
        return weights, tool_w, none_w, high

    def check(self, name: str, cond: Condition, learn: bool, fitted) -> str:
        weights, tool_w, none_w, high = fitted
        cases = self.observed(cond, learn, weights)
        r = score(cases, tool_w, none_w)
        rows = executes(cases, tool_w, none_w)
        medium = min(PolicyConfig().medium, high)
        fallback = sum(conf < medium or none for conf, _, _, none in rows) / max(len(rows), 1)
        escalation = set(cond.catalog.escalation_ids)
        reviews = [(c, row) for c, row in zip(cases, rows, strict=True) if c.answers & escalation]
        # a person sees the turn: the escalation option chosen at medium or above (escalate)
        missed = sum(not (row[2] and row[0] >= medium) for _, row in reviews) / max(len(reviews), 1)
        return (
            f"| {name} | {r['n']} | {r['top1']:.1f} | {r['none_recall']:.1f} | {r['none_precision']:.1f} "
            f"| {r['recall']:.1f} | {r['ece']:.3f} | {wrong_execute(rows, 0.75):.3f} | {wrong_execute(rows, high):.3f} "
            f"| {fallback:.3f} | {missed:.2f} ({len(reviews)}) |"
        )


def write_constants(weights: RetrievalWeights, tool_w: tuple[float, ...], none_w: dict[str, float], high: float) -> None:
    """The fitted constants go to the data file the backend reads (never pasted into Python)."""
    data = json.loads(CONSTANTS.read_text(encoding="utf-8"))
    data["retrieval_weights"] = {"cos": weights.cos, "example": weights.example, "bm25": weights.bm25, "log_bm25": weights.log_bm25}
    data["tool_features"] = list(semantic.TOOL_FEATURES)
    data["tool_weights"] = [float(w) for w in tool_w]
    data["none_weights"] = {k: float(v) for k, v in none_w.items()}
    data["thresholds"] = {"high": high, "medium": min(PolicyConfig().medium, high)}
    CONSTANTS.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


HEADER = (
    "| check | n | top-1 | none recall | none precision | retrieval recall | ECE | wrong execute at 0.75 "
    "| wrong execute at fitted high | fallback (low band) | missed review (n) |\n"
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--metatool", default=str(ROOT.parent / "shared" / "data" / "metatool"))
    parser.add_argument("--quick", action="store_true", help="a quarter of the MetaTool cases (for a smoke run)")
    parser.add_argument("--no-extra", action="store_true", help="fit on MetaTool only")
    parser.add_argument("--cv", action="store_true", help="also check each extra set with a fit that leaves it out")
    parser.add_argument("--write", action="store_true", help="write the constants into tui_router/decide/fitted-model.json")
    args = parser.parse_args()
    started = time.perf_counter()
    mt_catalog = load_catalog(Path(args.metatool) / "catalog.toml")
    dev = [t for t in load_session(Path(args.metatool) / "cases-dev.toml").turns if t.label]
    if args.quick:
        dev = dev[::4]
    translated = [t for t in load_session(TRANSLATED).turns if t.label]
    fitter = Fitter(mt_catalog, dev, translated)
    extras = [] if args.no_extra else extra_sets()
    print("extra fitting sets:", ", ".join(f"{n} ({len(t)} turns)" for n, _, t in extras) or "none", flush=True)

    if args.cv and extras:
        print("\nleave-one-set-out: each extra set checked with constants fitted without it")
        print(HEADER)
        for held in extras:
            name, catalog, turns = held
            fitted = fitter.fit([e for e in extras if e is not held])
            pairs = [(t.label, t.message) for t in turns]
            print(fitter.check(f"{name}, catalog only (held out)", Condition(name, catalog, turns, []), False, fitted))
            print(fitter.check(f"{name}, learn (held out)", Condition(name, catalog, turns, pairs), True, fitted))
            sys.stdout.flush()

    fitted = fitter.fit(extras)
    weights, tool_w, none_w, high = fitted
    print(f"\nRETRIEVAL_WEIGHTS = {weights}")
    print(f"default high threshold = {high}")
    print(f"TOOL_WEIGHTS = {tool_w}")
    print(f"NONE_WEIGHTS = {none_w}", flush=True)
    if args.write:
        write_constants(weights, tool_w, none_w, high)
        print(f"wrote {CONSTANTS}", flush=True)

    # checks on data not used for fitting
    fit_half, check_half = fitter.fit_half, fitter.check_half
    all_pairs = [(t.label, t.message) for t in dev]
    demo = load_catalog("demo")
    db = load_session(DEMO_BENCH).labelled()
    ml = load_session(MULTILINGUAL).labelled()
    checks = {
        "metatool odd half, zero-shot": (Condition("mt", mt_catalog, check_half, []), False),
        "metatool odd half, learn (LOO)": (Condition("mt", mt_catalog, check_half, all_pairs), True),
        "metatool odd half, catalog examples": (
            Condition("mt-examples", with_examples(mt_catalog, fit_half), check_half, []),
            False,
        ),
        "demo bench, zero-shot": (Condition("demo", demo, db, []), False),
        "demo bench, learn (LOO)": (Condition("demo", demo, db, [(t.label, t.message) for t in db]), True),
        "demo multilingual, zero-shot": (Condition("demo-ml", demo, ml, []), False),
        "demo multilingual, learn (LOO)": (Condition("demo-ml", demo, ml, [(t.label, t.message) for t in ml]), True),
    }
    print("\n" + HEADER)
    for name, (cond, learn) in checks.items():
        print(fitter.check(name, cond, learn, fitted), flush=True)
    print("\nretrieval recall@1/3/5/10, metatool odd half (zero-shot):")
    probe = backend_for(Condition("mt", mt_catalog, check_half, []))
    for name, vals in recall_at(probe, check_half, weights).items():
        print(f"  {name:7s} {vals}")
    print(f"\n({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
