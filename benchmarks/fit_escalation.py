"""Fit the escalation step's gate (tui_router/decide/escalation.py) across catalogs.

    nice python benchmarks/fit_escalation.py [--write] [--sets demo-bench,opsdesk,...]

Every labelled turn of every set is routed by the semantic backend as `tui-router eval` routes it,
three times: with the catalog alone; with up to 8 labels per option taught from the other half of
the set (each half in turn); with every other labelled turn taught (leave-one-out through
Question.holdout). The gate's evidence and the distribution before the gate are recorded (the gate
itself is switched off while recording), and every option's own when_to_use and examples are
embedded: with the escalation turns they teach the probe what a request for a person looks like.
Then:

0. The split (which escalation option gets the gate's mass): a ridge direction "ask which one"
   (ask_user turns and texts) against "a person decides" (the other escalation labels), and its
   weight, the one that puts the most held-out escalation turns' own option first (leave-one-set-out).
1. Leave-one-set-out: for each set, the gate is fitted on the other sets and scored on it (tool-turn
   top-1, none recall, missed review, wrong execute, fallback), beside the same figures without the
   gate. This picks the three settings: the weight of an escalation turn in the fit (escalating a
   request a tool could serve costs a confirmation; executing one a person should see costs more),
   the pull towards the gate that changes nothing, and the probe's ridge. A held-out set may not
   end above 0.02 wrong executes per turn (or above its own figure without the gate, for a bank
   set written to be hard).
2. With --write: the gate fitted on every set, into tui_router/decide/escalation-model.json.

Sets: the tuned-on ones (demo-bench, opsdesk, lifedesk, shopdesk) and the escalation bank
(benchmarks/data/escalation/<name>.toml + <name>-cases.toml: small catalogs with escalation options
and labelled turns written for this fit, in domains no eval set covers). Never the blind sets.
Prints aggregates only.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tui_router.catalog import Catalog, Risk, load_catalog  # noqa: E402
from tui_router.config import Config, PolicyConfig  # noqa: E402
from tui_router.decide import escalation, semantic  # noqa: E402
from tui_router.decide.base import Answer, argmax  # noqa: E402
from tui_router.decide.escalation import (  # noqa: E402
    FEATURES,
    IDENTITY,
    GateModel,
    apply_gate,
    gate_features,
    gate_log_odds,
    option_vector,
    split_tilt,
)
from tui_router.embed import QUERY, Embedder  # noqa: E402
from tui_router.policy import Action, band_answer  # noqa: E402
from tui_router.route import Router  # noqa: E402
from tui_router.session import Turn, load_session  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
BANK = DATA / "escalation"
TUNED = ("demo-bench", "opsdesk", "lifedesk", "shopdesk")
POS_WEIGHTS = (1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
# the most tool-turn top-1 (acceptable, pooled over the tuned-on desk sets, held out) the gate may
# cost: 1 point, about one turn per desk set, sent to a person instead of its tool
TOP1_COST = 0.01
WRONG_EXEC = 0.02  # the most wrong executes per turn the gate may leave on a held-out set (or the set's own before it)
PROBE_RIDGES = (0.001, 0.003, 0.03)  # the probe's L2 penalty (unit vectors, each side's weights sum to 0.5)
SPLIT_WEIGHTS = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)  # the split's tilt (0: the options keep the distribution's proportions)
SPLIT_RIDGE = 0.003
ASK = "ask_user"  # in the fitting sets the "ask which one" option is called so; at run time its texts place it
PULLS = (0.01, 0.1, 1.0, 10.0)  # L2 towards the identity gate, per unit of total case weight / 100


@dataclass
class Row:
    group: str  # the set
    condition: str  # catalog / few / loo, or text (an option's own text: teaches the probe only)
    features: dict[str, float] | None
    probabilities: dict[str, float]
    options: list[str]
    answers: set[str]
    label: str
    kind: str  # tool / escalation / none
    risks: dict[str, Risk | None]
    none_option: str
    vector: np.ndarray | None = None  # the message's e5 query vector (the probe's input)


def known_sets(also: tuple[Path, ...] = ()) -> dict[str, tuple[Path, Path]]:
    sets = {"demo-bench": (ROOT / "catalogs" / "demo.toml", ROOT / "sessions" / "demo-bench.toml")}
    for name in ("opsdesk", "lifedesk", "shopdesk"):
        sets[name] = (DATA / f"{name}.toml", DATA / f"{name}-cases.toml")
    for folder in (BANK, *also):
        for cases in sorted(folder.glob("*-cases.toml")):
            name = cases.name.removesuffix("-cases.toml")
            sets[f"bank-{name}"] = (folder / f"{name}.toml", cases)
    return sets


_recorded: list[tuple[dict[str, float] | None, dict[str, float], np.ndarray | None]] = []


def _recording(catalog, message, tools, rows, columns, probabilities, none_option, vector=None, model=None, option_vectors=None):  # type: ignore[no-untyped-def]
    """In place of the gate while recording: note its evidence (the probe's is filled in per fold), change nothing."""
    features = gate_features(catalog, message, tools, rows, columns, probabilities, none_option, 0.0)
    _recorded.append((features, dict(probabilities), None if vector is None else np.asarray(vector, dtype=np.float64)))
    return probabilities


def observe(
    name: str, catalog: Catalog, turns: list[Turn], embedder: Embedder, condition: str, taught: list[Turn] | None = None
) -> tuple[list[Row], PolicyConfig]:
    """Route `turns` as eval does, after teaching `taught` (each scored turn held out of its own label)."""
    config = Config()
    backend = semantic.SemanticBackend(catalog, settings=config.semantic, exemplars=[], retrieval=config.retrieval, embedder=embedder)
    router = Router(catalog, config, backend=backend)
    for t in taught or []:
        backend.add_exemplar(t.label, t.message)
    escalation_ids = set(catalog.escalation_ids)
    rows = []
    for t in turns:
        _recorded.clear()
        decision = router.route(t.message, holdout=t.message)
        features, probabilities, vector = _recorded[-1] if _recorded else (None, dict(decision.probabilities), None)
        kind = "none" if t.label == catalog.none_option else "escalation" if t.label in escalation_ids else "tool"
        rows.append(
            Row(name, condition, features, probabilities, list(decision.options),
                {t.label, *t.acceptable}, t.label, kind, {o: catalog.risk_of(o) for o in decision.options}, catalog.none_option, vector)
        )
    return rows, router.config.policy


def option_texts(name: str, catalog: Catalog, embedder: Embedder) -> list[Row]:
    """Every option's own when_to_use and examples as probe-only rows: the escalation options' texts
    say what a request for a person looks like in each catalog, the tools' what one for a tool does."""
    escalation_ids = set(catalog.escalation_ids)
    out = []
    for tool in catalog.tools:
        texts = [embedder.cut(t) for t in (tool.when_to_use, *tool.examples) if t]
        kind = "escalation" if tool.id in escalation_ids else "tool"
        for vector in embedder.embed(texts, QUERY):
            out.append(Row(name, "text", None, {}, [], set(), tool.id, kind, {}, catalog.none_option, np.asarray(vector, dtype=np.float64)))
    return out


def conditions(turns: list[Turn], per_label: int = 8) -> list[tuple[str, list[Turn], list[Turn]]]:
    """(condition, turns scored, turns taught): the catalog alone; up to `per_label` labels per option
    from the other half of the set (both halves in turn: a deployment with a few labels); every
    other labelled turn (leave-one-out)."""
    out = [("catalog", turns, [])]
    halves = turns[0::2], turns[1::2]
    for scored, other in (halves, halves[::-1]):
        counts: dict[str, int] = {}
        taught = []
        for t in other:
            if counts.get(t.label, 0) < per_label:
                counts[t.label] = counts.get(t.label, 0) + 1
                taught.append(t)
        out.append(("few", scored, taught))
    out.append(("loo", turns, turns))
    return out


# each set's escalation options' `option_vector`s (filled in by main from the option texts)
OPTION_VECTORS: dict[str, dict[str, np.ndarray]] = {}


def tilt_of(row: Row, split: GateModel | None) -> dict[str, float] | None:
    return None if split is None else split_tilt(split, row.vector, OPTION_VECTORS.get(row.group))


def decide(row: Row, weights: dict[str, float] | None, policy: PolicyConfig, split: GateModel | None = None) -> tuple[str, Action, str]:
    probabilities = row.probabilities
    if weights is not None and row.features is not None:
        p = 1.0 / (1.0 + np.exp(-gate_log_odds(row.features, weights)))
        escalation_ids = {o for o, r in row.risks.items() if r is Risk.escalation}
        probabilities = apply_gate(probabilities, escalation_ids, float(p), tilt_of(row, split))
    choice = argmax(probabilities, row.options)
    answer = Answer(choice=choice, probabilities=probabilities)
    banding = band_answer(answer, row.options, row.none_option, row.risks.get(choice), policy)
    return choice, banding.action, banding.band.value


def score(rows: list[Row], weights: dict[str, float] | None, policy: PolicyConfig, split: GateModel | None = None) -> dict[str, float]:
    tool = esc = none = 0
    tool_ok = esc_ok = none_ok = wrong_exec = fallback = 0
    for row in rows:
        choice, action, band = decide(row, weights, policy, split)
        right = choice in row.answers
        wrong_exec += action is Action.execute and band == "high" and not right
        fallback += action is Action.fallback
        if row.kind == "tool":
            tool += 1
            tool_ok += right
        elif row.kind == "escalation":
            esc += 1
            esc_ok += right and action is Action.escalate
        else:
            none += 1
            none_ok += right
    n = len(rows)
    return {
        "n": n,
        "top1": tool_ok / tool if tool else float("nan"),
        "none_recall": none_ok / none if none else float("nan"),
        "missed_review": 1 - esc_ok / esc if esc else float("nan"),
        "esc_n": esc,
        "wrong_execute": wrong_exec / n,
        "fallback": fallback / n,
    }


@dataclass
class Probe:
    direction: np.ndarray
    mean: np.ndarray
    bias: float

    def __call__(self, vector: np.ndarray | None) -> float:
        return 0.0 if vector is None else float((vector - self.mean) @ self.direction) + self.bias


def fit_probe(rows: list[Row], ridge: float) -> Probe:
    """Ridge regression of escalation (+1) vs any other label (-1) on the message vectors, each turn
    once, and on the options' own texts, the two sides weighted equally."""
    use = [r for r in rows if r.condition in ("catalog", "text") and r.vector is not None]
    y = np.asarray([1.0 if r.kind == "escalation" else -1.0 for r in use])
    # the same sets give the same probe: the grid asks for each many times
    key = (frozenset(r.group for r in use), len(use), float(y.sum()), ridge)
    if key not in _probes:
        _probes[key] = _solve_probe(np.stack([r.vector for r in use]), y, ridge)
    return _probes[key]


_probes: dict[tuple, Probe] = {}


def _solve_probe(X: np.ndarray, y: np.ndarray, ridge: float) -> Probe:
    pos = y > 0
    w = np.where(pos, 0.5 / max(1, pos.sum()), 0.5 / max(1, (~pos).sum()))
    mean = X.mean(axis=0)
    A = np.hstack([X - mean, np.ones((len(X), 1))])
    gram = (A * w[:, None]).T @ A + ridge * np.eye(A.shape[1])
    beta = np.linalg.solve(gram, A.T @ (w * y))
    return Probe(beta[:-1], mean, float(beta[-1]))


def fit_split(rows: list[Row], weight: float) -> GateModel:
    """The split: ridge regression of "ask which one" (+1) against any other escalation label (-1)
    on the escalation turns' and escalation texts' vectors, the two sides weighted equally."""
    use = [r for r in rows if r.condition in ("catalog", "text") and r.kind == "escalation" and r.vector is not None]
    flipped = [replace(r, kind="escalation" if r.label == ASK else "tool") for r in use]
    fitted = fit_probe(flipped, SPLIT_RIDGE)
    return GateModel(dict(IDENTITY), split=fitted.direction, split_mean=fitted.mean, split_weight=weight, split_bias=fitted.bias)


def split_right(rows: list[Row], split: GateModel) -> int:
    """Escalation turns whose own escalation option leads the others after the tilt."""
    right = 0
    for r in rows:
        esc = [o for o, k in r.risks.items() if k is Risk.escalation]
        if r.kind != "escalation" or len(esc) < 2:
            continue
        tilt = tilt_of(r, split) or {}
        right += max(esc, key=lambda o: r.probabilities.get(o, 0.0) * tilt.get(o, 1.0)) in r.answers
    return right


def choose_split(rows: list[Row], names: list[str]) -> tuple[float, int, int]:
    """The split weight with the most escalation turns split right, each set's with the direction
    fitted without it (the smaller weight on a tie). Returns (weight, right, right at weight 0)."""
    scored = [r for r in rows if r.condition != "text"]
    results = []
    for weight in SPLIT_WEIGHTS:
        right = sum(
            split_right([r for r in scored if r.group == held], fit_split([r for r in rows if r.group != held], weight))
            for held in names
        )
        results.append((right, -weight))
        print(f"split weight {weight:g}: {right} escalation turns split right")
    best = max(results)
    return -best[1], best[0], results[0][0]


def with_probe(rows: list[Row], probe: Probe) -> list[Row]:
    return [replace(r, features={**r.features, "probe": probe(r.vector)}) if r.features is not None else r for r in rows]


def cross_probed(rows: list[Row], groups: list[str], ridge: float) -> list[Row]:
    """Each group's rows with the probe fitted without that group (so the gate sees honest probe scores)."""
    out = []
    for g in groups:
        out += with_probe([r for r in rows if r.group == g], fit_probe([r for r in rows if r.group != g and r.group in groups], ridge))
    return out


def fit_gate(rows: list[Row], pos_weight: float, pull: float) -> dict[str, float]:
    """Weighted logistic regression of "escalation turn" on the gate's evidence, L2 towards the
    identity gate (Newton steps: 9 weights)."""
    use = [r for r in rows if r.features is not None]
    X = np.asarray([[r.features[f] for f in FEATURES] for r in use])
    y = np.asarray([r.kind == "escalation" for r in use], dtype=np.float64)
    w = np.where(y > 0, pos_weight, 1.0)
    prior = np.asarray([IDENTITY[f] for f in FEATURES])
    lam = pull * w.sum() / 100.0

    def loss(b: np.ndarray) -> float:
        z = X @ b
        return float(np.sum(w * (np.logaddexp(0.0, z) - y * z)) + 0.5 * lam * np.sum((b - prior) ** 2))

    beta = prior.copy()
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-np.clip(X @ beta, -30, 30)))
        grad = X.T @ (w * (p - y)) + lam * (beta - prior)
        hess = (X * (w * p * (1 - p))[:, None]).T @ X + lam * np.eye(len(FEATURES))
        step = np.linalg.solve(hess, grad)
        t, before = 1.0, loss(beta)
        while loss(beta - t * step) > before and t > 1e-6:  # damped Newton: the loss never rises
            t /= 2
        beta -= t * step
        if float(np.abs(t * step).max()) < 1e-8:
            break
    return {f: round(float(b), 4) for f, b in zip(FEATURES, beta, strict=True)}


def fmt(v: float) -> str:
    return "-" if v != v else f"{v:.3f}"


def table(title: str, results: list[tuple[str, str, dict, dict]]) -> None:
    print(f"\n{title}")
    print("| set | condition | n | top-1 before / after | none R before / after | missed review before / after (n) | wrong exec before / after | fallback before / after |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, cond, b, a in results:
        print(
            f"| {name} | {cond} | {b['n']} | {fmt(b['top1'])} / {fmt(a['top1'])} | {fmt(b['none_recall'])} / {fmt(a['none_recall'])} | "
            f"{fmt(b['missed_review'])} / {fmt(a['missed_review'])} ({b['esc_n']}) | {fmt(b['wrong_execute'])} / {fmt(a['wrong_execute'])} | "
            f"{fmt(b['fallback'])} / {fmt(a['fallback'])} |"
        )


def pooled(results: list[tuple[str, str, dict, dict]], which: int, metric: str, weight: str) -> float:
    num = den = 0.0
    for r in results:
        m = r[which]
        if m[metric] == m[metric]:
            k = m[weight] if weight != "tool" else m["n"]
            num += m[metric] * k
            den += k
    return num / den if den else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="write tui_router/decide/escalation-model.json")
    parser.add_argument("--sets", default="", help="comma-separated set names (default: all tuned-on sets and the bank)")
    parser.add_argument(
        "--also", action="append", type=Path, default=[], metavar="DIR",
        help="a further folder of bank catalogs to fit on (e.g. benchmarks/data/escalation-first-person, kept out by default: see docs/fitted-model.md)",
    )
    args = parser.parse_args()
    missing = [d for d in args.also if not d.is_dir()]
    if missing:
        print(f"not a folder: {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    sets = known_sets(tuple(args.also))
    names = [s for s in args.sets.split(",") if s] or list(sets)
    unknown = [s for s in names if s not in sets]
    if unknown:
        print(f"unknown set(s): {', '.join(unknown)}; known: {', '.join(sets)}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    semantic.escalate = _recording  # record the evidence; the gate changes nothing while recording
    embedder = Embedder(remember=20000)
    rows: list[Row] = []
    policy = None
    for name in names:
        catalog_path, cases_path = sets[name]
        catalog = load_catalog(catalog_path)
        turns = load_session(cases_path).labelled()
        embedder.embed_known([embedder.cut(t.message) for t in turns], QUERY)
        for condition, scored, taught in conditions(turns):
            observed, policy = observe(name, catalog, scored, embedder, condition, taught)
            rows += observed
        texts = option_texts(name, catalog, embedder)
        rows += texts
        OPTION_VECTORS[name] = {
            o: option_vector(np.stack([r.vector for r in texts if r.label == o])) for o in catalog.escalation_ids if any(r.label == o for r in texts)
        }
    routed = [r for r in rows if r.condition != "text"]
    if not any(r.features is not None for r in routed):  # the hook's signature moved and routing fell back
        print("no gate evidence was recorded: does _recording still match escalation.escalate?", file=sys.stderr)
        return 1
    print(f"recorded {len(routed)} routings and {len(rows) - len(routed)} option texts over {len(names)} sets in {time.perf_counter() - started:.0f} s; "
          f"escalation turns {sum(r.kind == 'escalation' for r in routed) // 3}")
    assert policy is not None
    split_weight, right, right_before = choose_split(rows, names)
    print(f"split weight {split_weight:g}: {right} escalation turns split right held out ({right_before} without the split)")

    best = None
    for pos_weight, pull, ridge in itertools.product(POS_WEIGHTS, PULLS, PROBE_RIDGES):
        if True:
            results = []
            for held in names:
                others = [n for n in names if n != held]
                train = cross_probed(rows, others, ridge)
                weights = fit_gate(train, pos_weight, pull)
                held_rows = with_probe([r for r in rows if r.group == held], fit_probe([r for r in rows if r.group != held], ridge))
                split = fit_split([r for r in rows if r.group != held], split_weight)
                for cond in ("catalog", "few", "loo"):
                    test = [r for r in held_rows if r.condition == cond]
                    results.append((held, cond, score(test, None, policy), score(test, weights, policy, split)))
            tuned = [r for r in results if r[0] in TUNED]
            summary = {
                "missed": pooled(results, 3, "missed_review", "esc_n"),
                "missed_tuned": pooled(tuned, 3, "missed_review", "esc_n"),
                "missed_tuned_before": pooled(tuned, 2, "missed_review", "esc_n"),
                "missed_before": pooled(results, 2, "missed_review", "esc_n"),
                "top1_drop": pooled(tuned, 2, "top1", "tool") - pooled(tuned, 3, "top1", "tool"),
                "worst_wrong_exec": max(r[3]["wrong_execute"] for r in results),
                # a bank set may start above 0.02 (its turns are written to be hard); the gate must not raise it there
                "wrong_exec_over": max(r[3]["wrong_execute"] - max(WRONG_EXEC, r[2]["wrong_execute"]) for r in results),
                "fallback_rise": pooled(tuned, 3, "fallback", "tool") - pooled(tuned, 2, "fallback", "tool"),
            }
            print(f"pos_weight {pos_weight:g} pull {pull:g} probe ridge {ridge:g}: " + ", ".join(f"{k} {v:.3f}" for k, v in summary.items()))
            # the least missed review whose cost on tool turns stays within TOP1_COST
            ok = summary["top1_drop"] <= TOP1_COST and summary["wrong_exec_over"] <= 1e-9 and summary["fallback_rise"] <= 0.02
            if ok and (best is None or summary["missed"] < best[0]["missed"] - 1e-9):
                best = (summary, pos_weight, pull, ridge, results)
    if best is None:
        print("no setting kept tool top-1 and wrong execute: nothing written")
        return 1
    summary, pos_weight, pull, ridge, results = best
    table(f"Leave-one-set-out, pos_weight {pos_weight:g}, pull {pull:g}, probe ridge {ridge:g} (before = no gate)", results)
    weights = fit_gate(cross_probed(rows, names, ridge), pos_weight, pull)
    probe = fit_probe(rows, ridge)
    split = fit_split(rows, split_weight)
    assert split.split is not None and split.split_mean is not None
    print("\nweights (all sets):", json.dumps(weights))
    if args.write:
        escalation.CONSTANTS.write_text(
            json.dumps(
                {
                    "written_by": "benchmarks/fit_escalation.py --write (the escalation step's fitted gate; do not edit by hand)",
                    "sets": names,
                    "pos_weight": pos_weight,
                    "pull": pull,
                    "probe_ridge": ridge,
                    "features": list(FEATURES),
                    "weights": weights,
                    "probe": {
                        "bias": round(probe.bias, 6),
                        "mean": [round(float(v), 6) for v in probe.mean],
                        "direction": [round(float(v), 6) for v in probe.direction],
                    },
                    "split": {
                        "weight": split_weight,
                        "bias": round(split.split_bias, 6),
                        "mean": [round(float(v), 6) for v in split.split_mean],
                        "direction": [round(float(v), 6) for v in split.split],
                    },
                },
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )
        print(f"wrote {escalation.CONSTANTS.relative_to(ROOT)}")
    print(f"{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
