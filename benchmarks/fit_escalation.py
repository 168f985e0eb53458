"""Fit the escalation step's gate (tui_router/decide/escalation.py) across catalogs.

    nice python benchmarks/fit_escalation.py [--write] [--sets demo-bench,opsdesk,...]

Every labelled turn of every set is routed by the semantic backend as `tui-router eval` routes it,
three times: with the catalog alone; with up to 8 labels per option taught from the other half of
the set (each half in turn); with every other labelled turn taught (leave-one-out through
Question.holdout). The gate's evidence and the distribution before the gate are recorded (the gate
itself is switched off while recording). Then:

1. Leave-one-set-out: for each set, the gate is fitted on the other sets and scored on it (tool-turn
   top-1, none recall, missed review, wrong execute, fallback), beside the same figures without the
   gate. This picks the two settings: the weight of an escalation turn in the fit (escalating a
   request a tool could serve costs a confirmation; executing one a person should see costs more)
   and the pull towards the gate that changes nothing.
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
from tui_router.decide.escalation import FEATURES, IDENTITY, apply_gate, gate_features, gate_log_odds  # noqa: E402
from tui_router.embed import QUERY, Embedder  # noqa: E402
from tui_router.policy import Action, band_answer  # noqa: E402
from tui_router.route import Router  # noqa: E402
from tui_router.session import Turn, load_session  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
BANK = DATA / "escalation"
TUNED = ("demo-bench", "opsdesk", "lifedesk", "shopdesk")
POS_WEIGHTS = (1.0, 2.0, 3.0, 4.0, 6.0)
# the most tool-turn top-1 (acceptable, pooled over the tuned-on desk sets, held out) the gate may
# cost: 1 point, about one turn per desk set, sent to a person instead of its tool
TOP1_COST = 0.01
PROBE_RIDGES = (0.001, 0.003, 0.03)  # the probe's L2 penalty (unit vectors, each side's weights sum to 0.5)
PULLS = (0.01, 0.1, 1.0, 10.0)  # L2 towards the identity gate, per unit of total case weight / 100


@dataclass
class Row:
    group: str  # the set
    condition: str  # catalog / loo
    features: dict[str, float] | None
    probabilities: dict[str, float]
    options: list[str]
    answers: set[str]
    label: str
    kind: str  # tool / escalation / none
    risks: dict[str, Risk | None]
    none_option: str
    vector: np.ndarray | None = None  # the message's e5 query vector (the probe's input)


def known_sets() -> dict[str, tuple[Path, Path]]:
    sets = {"demo-bench": (ROOT / "catalogs" / "demo.toml", ROOT / "sessions" / "demo-bench.toml")}
    for name in ("opsdesk", "lifedesk", "shopdesk"):
        sets[name] = (DATA / f"{name}.toml", DATA / f"{name}-cases.toml")
    for cases in sorted(BANK.glob("*-cases.toml")):
        name = cases.name.removesuffix("-cases.toml")
        sets[f"bank-{name}"] = (BANK / f"{name}.toml", cases)
    return sets


_recorded: list[tuple[dict[str, float] | None, dict[str, float], np.ndarray | None]] = []


def _recording(catalog, message, tools, rows, columns, probabilities, none_option, vector=None, model=None):  # type: ignore[no-untyped-def]
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


def decide(row: Row, weights: dict[str, float] | None, policy: PolicyConfig) -> tuple[str, Action, str]:
    probabilities = row.probabilities
    if weights is not None and row.features is not None:
        p = 1.0 / (1.0 + np.exp(-gate_log_odds(row.features, weights)))
        escalation_ids = {o for o, r in row.risks.items() if r is Risk.escalation}
        probabilities = apply_gate(probabilities, escalation_ids, float(p))
    choice = argmax(probabilities, row.options)
    answer = Answer(choice=choice, probabilities=probabilities)
    banding = band_answer(answer, row.options, row.none_option, row.risks.get(choice), policy)
    return choice, banding.action, banding.band.value


def score(rows: list[Row], weights: dict[str, float] | None, policy: PolicyConfig) -> dict[str, float]:
    tool = esc = none = 0
    tool_ok = esc_ok = none_ok = wrong_exec = fallback = 0
    for row in rows:
        choice, action, band = decide(row, weights, policy)
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
    once, the two sides weighted equally."""
    use = [r for r in rows if r.condition == "catalog" and r.vector is not None]
    X = np.stack([r.vector for r in use])
    y = np.asarray([1.0 if r.kind == "escalation" else -1.0 for r in use])
    pos = y > 0
    w = np.where(pos, 0.5 / max(1, pos.sum()), 0.5 / max(1, (~pos).sum()))
    mean = X.mean(axis=0)
    A = np.hstack([X - mean, np.ones((len(X), 1))])
    gram = (A * w[:, None]).T @ A + ridge * np.eye(A.shape[1])
    beta = np.linalg.solve(gram, A.T @ (w * y))
    return Probe(beta[:-1], mean, float(beta[-1]))


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
    args = parser.parse_args()
    sets = known_sets()
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
    print(f"recorded {len(rows)} routings over {len(names)} sets in {time.perf_counter() - started:.0f} s; "
          f"escalation turns {sum(r.kind == 'escalation' for r in rows) // 3}")
    assert policy is not None

    best = None
    for pos_weight, pull, ridge in itertools.product(POS_WEIGHTS, PULLS, PROBE_RIDGES):
        if True:
            results = []
            for held in names:
                others = [n for n in names if n != held]
                train = cross_probed(rows, others, ridge)
                weights = fit_gate(train, pos_weight, pull)
                held_rows = with_probe([r for r in rows if r.group == held], fit_probe([r for r in rows if r.group != held], ridge))
                for cond in ("catalog", "few", "loo"):
                    test = [r for r in held_rows if r.condition == cond]
                    results.append((held, cond, score(test, None, policy), score(test, weights, policy)))
            tuned = [r for r in results if r[0] in TUNED]
            summary = {
                "missed": pooled(results, 3, "missed_review", "esc_n"),
                "missed_tuned": pooled(tuned, 3, "missed_review", "esc_n"),
                "missed_tuned_before": pooled(tuned, 2, "missed_review", "esc_n"),
                "missed_before": pooled(results, 2, "missed_review", "esc_n"),
                "top1_drop": pooled(tuned, 2, "top1", "tool") - pooled(tuned, 3, "top1", "tool"),
                "worst_wrong_exec": max(r[3]["wrong_execute"] for r in results),
                "fallback_rise": pooled(tuned, 3, "fallback", "tool") - pooled(tuned, 2, "fallback", "tool"),
            }
            print(f"pos_weight {pos_weight:g} pull {pull:g} probe ridge {ridge:g}: " + ", ".join(f"{k} {v:.3f}" for k, v in summary.items()))
            # the least missed review whose cost on tool turns stays within TOP1_COST
            ok = summary["top1_drop"] <= TOP1_COST and summary["worst_wrong_exec"] <= 0.02 and summary["fallback_rise"] <= 0.02
            if ok and (best is None or summary["missed"] < best[0]["missed"] - 1e-9):
                best = (summary, pos_weight, pull, ridge, results)
    if best is None:
        print("no setting kept tool top-1 and wrong execute: nothing written")
        return 1
    summary, pos_weight, pull, ridge, results = best
    table(f"Leave-one-set-out, pos_weight {pos_weight:g}, pull {pull:g}, probe ridge {ridge:g} (before = no gate)", results)
    weights = fit_gate(cross_probed(rows, names, ridge), pos_weight, pull)
    probe = fit_probe(rows, ridge)
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
