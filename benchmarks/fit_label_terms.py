"""Fit the semantic backend's label terms on cross-validated k-label groups, the other weights frozen.

    nice python benchmarks/fit_label_terms.py [--metatool ../shared/data/metatool] [--write] [--logistic]

The label terms (tui_router/decide/semantic.py LABEL_FEATURES, LABEL_NONE_FEATURES) are exactly 0
when nothing is taught, so catalog-only routing is what fit_semantic.py's weights give, whatever is
fitted here. They are fitted by maximum likelihood, with every other weight held at its value in
fitted-model.json (their scores are the offset), on the regime a labelling operator creates: for
k = 1, 2, 4, 8, each set's turns split into folds, each fold routed by a router taught up to k
labelled turns per option from the OTHER folds (the none option at the tools' rate, as
benchmarks/learning_curve.py does), so a turn is never taught when it is scored; plus leave-one-out
with every other turn (what `tui-router eval` gives) on the small sets. Fitting sets, all tuned-on:
MetaTool dev's fitting half (even positions; the odd half is the check), the hand-translated
MetaTool queries (labels from the odd half, as fit_semantic.py does), opsdesk, lifedesk, shopdesk
and the escalation bank (benchmarks/data/escalation/). The blind sets are never read.

Prints the weights, each group's top-1 / none recall / wrong execute with the terms at 0 and fitted,
and a check on MetaTool's odd half (k = 8 from its own other folds); --write stores the weights in
tui_router/decide/fitted-model.json under "label_terms". Observations are cached in a pickle under
the system temp folder keyed by the head settings and the data (--fresh ignores it).

--logistic observes the logistic label term (label_lr, label_lr_none: tui_router/decide/logistic.py,
needs scikit-learn) even while fitted-model.json gives it no weight, fits it with the other terms,
and prints beside them the same fit without it (its columns at 0), so the two can be compared on
every group before --write. Observing it fits a logistic regression per router (seconds each on
MetaTool); leave-one-out groups are scored by cross-fitted models (5 folds, as eval does).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import pickle
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from fit_semantic import TRANSLATED, Case, Condition, backend_for, executes, observe_all, wrong_execute  # noqa: E402
from learning_curve import pick_pairs  # noqa: E402

from tui_router.catalog import Catalog, load_catalog  # noqa: E402
from tui_router.decide import semantic  # noqa: E402
from tui_router.decide.fitted import CONSTANTS, head_settings  # noqa: E402
from tui_router.session import Turn, load_session  # noqa: E402

KS = (1, 2, 4, 8)
FOLDS = 5
SEED = 3  # not learning_curve.py's 12: the measurement draws other labels than the fit
EXECUTE_TARGET = 0.02
L2 = 1e-2  # the label terms are few, but the groups are small: keep them near 0 unless the data insist


def pick(train: list[Turn], k: int, seed: int, none_option: str) -> list[tuple[str, str]]:
    """Up to k labelled turns per option from `train`, the none option at the tools' rate
    (learning_curve.pick with --none-rate natural)."""
    return pick_pairs([(t.label or "", t.message) for t in train], k, seed, none_option)


def k_groups(name: str, catalog: Catalog, turns: list[Turn], k: int, label_pool: list[Turn] | None = None) -> list[Case]:
    """The turns routed in FOLDS folds, each taught k labels per option from the other folds (or,
    with `label_pool`, from that pool, which holds no scored turn)."""
    if label_pool is not None:
        return observe_all(backend_for(Condition(name, catalog, turns, pick(label_pool, k, SEED, catalog.none_option))), turns, False)
    order = list(range(len(turns)))
    random.Random(SEED).shuffle(order)
    fold_of = {i: n % FOLDS for n, i in enumerate(order)}
    cases: list[Case] = []
    for f in range(FOLDS):
        test = [t for i, t in enumerate(turns) if fold_of[i] == f]
        train = [t for i, t in enumerate(turns) if fold_of[i] != f]
        taught = pick(train, k, SEED + f, catalog.none_option)
        cases += observe_all(backend_for(Condition(name, catalog, test, taught)), test, False)
    return cases


def small_sets() -> list[tuple[str, Catalog, list[Turn]]]:
    found = []
    for folder in (ROOT / "benchmarks" / "data", ROOT / "benchmarks" / "data" / "escalation"):
        for cases_path in sorted(folder.glob("*-cases.toml")):
            catalog_path = cases_path.with_name(cases_path.name.removesuffix("-cases.toml") + ".toml")
            if catalog_path.exists():
                found.append((catalog_path.stem, load_catalog(catalog_path), load_session(cases_path).labelled()))
    return found


def observe_groups(metatool: Path) -> tuple[list[tuple[str, list[Case], int]], list[tuple[str, list[Case], int]]]:
    """(fitting groups, check groups): (name, cases, weight)."""
    mt = load_catalog(metatool / "catalog.toml")
    dev = [t for t in load_session(metatool / "cases-dev.toml").turns if t.label]
    fit_half, check_half = dev[0::2], dev[1::2]
    translated = [t for t in load_session(TRANSLATED).turns if t.label]
    groups: list[tuple[str, list[Case], int]] = []
    for k in KS:
        groups.append((f"metatool even half, k={k}", k_groups("mt", mt, fit_half, k), 1))
        groups.append((f"translated, k={k} from the odd half", k_groups("tr", mt, translated, k, check_half), 2))
        print(f"  metatool k={k} observed", flush=True)
    for name, catalog, turns in small_sets():
        for k in KS:
            groups.append((f"{name}, k={k}", k_groups(name, catalog, turns, k), 2))
        pairs = [(t.label, t.message) for t in turns]
        groups.append((f"{name}, loo", observe_all(backend_for(Condition(name, catalog, turns, pairs)), turns, True), 2))
        print(f"  {name} observed", flush=True)
    checks = [(f"metatool odd half, k={k}", k_groups("mt", mt, check_half, k), 1) for k in (2, 8)]
    return groups, checks


def fit_tool_terms(groups: list[tuple[str, list[Case], int]], steps: int = 2000, drop: tuple[str, ...] = ()) -> np.ndarray:
    """Conditional logit over each case's offered tools: the frozen weights' scores as offset,
    the label terms' weights fitted (likelihood of the acceptable set)."""
    offsets, feats, golds, weights = [], [], [], []
    base = np.asarray(semantic.TOOL_WEIGHTS)
    for _, cases, weight in groups:
        for c in cases:
            if c.none or not c.obs.tools or c.obs.label_features is None:
                continue
            g = [i for i, t in enumerate(c.obs.tools) if t in c.answers]
            if g:
                offsets.append(c.obs.tool_features @ base)
                feats.append(c.obs.label_features)
                golds.append(g)
                weights.append(weight)
    width = max(len(o) for o in offsets)
    dim = len(semantic.LABEL_FEATURES)
    n = len(offsets)
    X, base_scores = np.zeros((n, width, dim)), np.full((n, width), -1e9)
    good = np.zeros((n, width), bool)
    for i, (o, f, g) in enumerate(zip(offsets, feats, golds, strict=True)):
        X[i, : len(o)] = f
        base_scores[i, : len(o)] = o
        good[i, g] = True
    for name in (d for d in drop if d in semantic.LABEL_FEATURES):  # a term left out: its column at 0 keeps its weight at 0
        X[:, :, semantic.LABEL_FEATURES.index(name)] = 0.0
    sw = np.asarray(weights, float) / sum(weights)
    w, m, v = np.zeros(dim), np.zeros(dim), np.zeros(dim)
    for t in range(1, steps + 1):
        U = base_scores + X @ w
        U -= U.max(1, keepdims=True)
        P = np.exp(U)
        P /= P.sum(1, keepdims=True)
        Q = P * good
        Q /= np.maximum(Q.sum(1, keepdims=True), 1e-12)
        g = (((P - Q)[:, :, None] * X).sum(1) * sw[:, None]).sum(0) + L2 * w
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w -= 0.05 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return w


def fit_none_terms(groups: list[tuple[str, list[Case], int]], steps: int = 3000, drop: tuple[str, ...] = ()) -> np.ndarray:
    """Logistic "none" with the frozen none model (at the catalog-only pooled score) as offset."""
    rows, ys, offs, sw = [], [], [], []
    base = np.asarray(semantic.TOOL_WEIGHTS)
    for _, cases, weight in groups:
        for c in cases:
            if not c.obs.tools or not c.obs.label_none:
                continue
            s = c.obs.tool_features @ base  # the catalog-only pooled score (semantic.distribution)
            peak = float(s.max())
            pooled = peak + math.log(float(np.exp(s - peak).sum()))
            offs.append(semantic.none_log_odds(c.obs, pooled, semantic.NONE_WEIGHTS))
            rows.append([0.0 if k in drop else c.obs.label_none.get(k, 0.0) for k in semantic.LABEL_NONE_FEATURES])
            ys.append(float(c.none))
            sw.append(weight)
    H, y, off = np.asarray(rows), np.asarray(ys), np.asarray(offs)
    sw_arr = np.asarray(sw, float) / sum(sw)
    w, m, v = np.zeros(H.shape[1]), np.zeros(H.shape[1]), np.zeros(H.shape[1])
    for t in range(1, steps + 1):
        p = 1 / (1 + np.exp(-np.clip(H @ w + off, -50, 50)))
        g = H.T @ ((p - y) * sw_arr) + L2 * w
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w -= 0.05 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return w


def summary(cases: list[Case], tool_terms, none_terms: dict[str, float], high: float) -> str:
    """top-1 over tool turns, none recall, wrong execute at `high`."""
    right = tools_n = none_hit = none_n = 0
    for c in cases:
        tools, p_none = semantic.distribution(c.obs, label_weights=tool_terms, label_none_weights=none_terms)
        best = max(tools, key=tools.get) if tools else None
        choice = best if best is not None and tools[best] > p_none else "NONE"
        if c.none:
            none_n += 1
            none_hit += choice == "NONE"
        else:
            tools_n += 1
            right += choice in c.answers
    rows = executes_with(cases, tool_terms, none_terms)
    return f"{right / max(tools_n, 1):.3f} | {none_hit / none_n if none_n else float('nan'):.3f} | {wrong_execute(rows, high):.3f}"


def executes_with(cases: list[Case], tool_terms, none_terms):
    saved = semantic.LABEL_WEIGHTS, semantic.LABEL_NONE_WEIGHTS
    semantic.LABEL_WEIGHTS, semantic.LABEL_NONE_WEIGHTS = tuple(tool_terms), none_terms
    try:
        # executes() calls distribution() with the module's label weights as defaults
        return executes(cases, semantic.TOOL_WEIGHTS, semantic.NONE_WEIGHTS)
    finally:
        semantic.LABEL_WEIGHTS, semantic.LABEL_NONE_WEIGHTS = saved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--metatool", default=str(ROOT.parent / "shared" / "data" / "metatool"))
    parser.add_argument("--write", action="store_true", help="write the label terms into tui_router/decide/fitted-model.json")
    parser.add_argument("--fresh", action="store_true", help="observe again even if a cached pickle exists")
    parser.add_argument("--logistic", action="store_true",
                        help="observe the logistic label term even at weight 0, and compare the fit with and without it")
    args = parser.parse_args()
    if args.logistic:
        semantic.LOGISTIC_TERM = True
    metatool = Path(args.metatool)
    if not (metatool / "catalog.toml").is_file():
        metatool = Path("/work/shared/data/metatool")
    started = time.perf_counter()
    constants = json.loads(CONSTANTS.read_text(encoding="utf-8"))
    key = json.dumps([constants.get(k) for k in ("retrieval_weights", "tool_weights", "none_weights", "head")], sort_keys=True)
    key += repr((head_settings(), KS, FOLDS, SEED, semantic.LABEL_FEATURES, semantic.LABEL_NONE_FEATURES, semantic.LOGISTIC_TERM))
    cache = Path(tempfile.gettempdir()) / f"fit-label-terms-{hashlib.sha256(key.encode()).hexdigest()[:12]}.pkl"
    if cache.exists() and not args.fresh:
        groups, checks = pickle.loads(cache.read_bytes())
    else:
        groups, checks = observe_groups(metatool)
        cache.write_bytes(pickle.dumps((groups, checks)))
    print(f"observed in {time.perf_counter() - started:.0f} s ({sum(len(c) for _, c, _ in groups)} fitting cases)", flush=True)
    logistic_off = () if semantic.LOGISTIC_TERM else ("label_lr", "label_lr_none")
    tool_terms = fit_tool_terms(groups, drop=logistic_off)
    none_terms = fit_none_terms(groups, drop=logistic_off)
    tool_w = {k: round(float(x), 3) for k, x in zip(semantic.LABEL_FEATURES, tool_terms, strict=True)}
    none_w = {k: round(float(x), 3) for k, x in zip(semantic.LABEL_NONE_FEATURES, none_terms, strict=True)}
    print(f"label tool weights: {tool_w}\nlabel none weights: {none_w}")
    high = float(constants["thresholds"]["high"])
    zero_t, zero_n = (0.0,) * len(tool_w), dict.fromkeys(none_w, 0.0)
    fitted_t = tuple(tool_w.values())
    if args.logistic:  # the same fit without the logistic term, for comparison
        off = ("label_lr", "label_lr_none")
        base_t = tuple(round(float(x), 3) for x in fit_tool_terms(groups, drop=off))
        base_n = {k: round(float(x), 3) for k, x in zip(semantic.LABEL_NONE_FEATURES, fit_none_terms(groups, drop=off), strict=True)}
        print(f"without the logistic term: tool {base_t}, none {base_n}")
    head = "terms 0 | without logistic | fitted" if args.logistic else "terms 0 | fitted"
    print(f"\n| group | n | top-1 / none recall / wrong execute at {high}: {head} |\n| --- | ---: | --- |{' --- |' * (2 if args.logistic else 1)}")
    for name, cases, _ in [*groups, *checks]:
        middle = f" {summary(cases, base_t, base_n, high)} |" if args.logistic else ""
        print(f"| {name} | {len(cases)} | {summary(cases, zero_t, zero_n, high)} |{middle} {summary(cases, fitted_t, none_w, high)} |")
    if args.write:
        data = json.loads(CONSTANTS.read_text(encoding="utf-8"))
        data["label_terms"] = {"tool_weights": tool_w, "none_weights": none_w}
        CONSTANTS.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {CONSTANTS}")
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
