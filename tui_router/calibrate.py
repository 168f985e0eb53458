"""Calibration from labelled turns: fit the local backend, sweep thresholds per risk level, write config.

1. **Fit** (local backend only): the local backend turns per-option evidence into probabilities with
   a `temperature`, the none option's evidence offset by `none_margin`. Evidence is computed once per
   labelled turn (leave-one-out, as in eval); a coarse-to-fine grid search then picks the temperature
   and none margin with the lowest mean negative log-likelihood of the right answer (label or
   acceptable), evaluating the backend's distribution step in bulk (numpy) after checking that the
   bulk version reproduces the backend's own code. The fit is scored honestly on k held-out folds
   (each fold's parameters are fitted on the other folds).
2. **Sweep**, per risk level of the chosen option, over thresholds in steps of 0.01:
   - `high` (levels that may auto-execute: not in policy.confirm_risks, not escalation): the lowest
     value at which the auto-executed turns (confidence >= high) are right at least
     `target_precision` of the time and include no review-labelled turn. Lowest = most automation.
   - `medium`: just above the highest confidence at which picks are right less than
     `confirm_precision` of the time (an isotonic fit of accuracy against confidence), so a person
     is asked only about picks that are more often right than not; capped so that no
     review-labelled turn (label an escalation option) falls below it into the fallback: zero
     missed reviews.
   Levels that never auto-execute keep their `high` (it does not change their action).
   The `[policy]` defaults come from all turns of auto-executable levels pooled; a level gets its own
   `[policy.risk.<level>]` entry when it has at least MIN_LEVEL_TURNS turns and differs.
3. **Write** (`--write-config PATH`): merge into the TOML at PATH, keep every other key, validate the
   result as a Config, write atomically.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from . import tomlio
from .catalog import Risk
from .confidence import reference_confidence
from .decide.base import Answer, argmax, softmax
from .errors import ConfigError, UserError
from .evaluate import LabelledCase, Ratio, check_cases, load_cases, teach_local_backend
from .policy import Band, band_answer
from .session import copy_notes

if TYPE_CHECKING:
    import numpy as np

    from .catalog import Catalog
    from .config import Config, PolicyConfig
    from .route import Router

MIN_TURNS = 50
MIN_LEVEL_TURNS = 20
GRID = [round(i / 100, 2) for i in range(101)]
DEFAULT_FOLDS = 5


class CalibrationError(UserError):
    pass


# -- records ------------------------------------------------------------------------------------


class SweepTurn(BaseModel):
    """What the sweep needs of one routed labelled turn."""

    confidence: float | None
    risk: str | None  # risk of the chosen option; None for the none option or an unresolved turn
    correct: bool
    review: bool  # labelled with an escalation option: a person must see it
    resolved: bool = True
    chose_none: bool = False


class SweepPoint(BaseModel):
    high: float
    medium: float
    executed: int
    executed_correct: int
    confirmed: int
    confirmed_correct: int
    fallback: int
    missed_reviews: int
    chosen: bool = False


class LevelResult(BaseModel):
    risk: str  # a Risk value, or "default" for the pooled [policy] thresholds
    turns: int
    executable: bool
    high: float
    medium: float
    sweep: list[SweepPoint]
    note: str = ""
    same_as_default: bool = False  # the only auto-executable level: its sweep is the default's


class LocalParams(BaseModel):
    temperature: float
    none_margin: float


class FitResult(BaseModel):
    folds: int
    turns: int  # turns whose right answer was offered (the NLL is over these)
    before: LocalParams
    after: LocalParams
    before_nll: float | None
    after_nll: float | None
    before_accuracy: Ratio
    after_accuracy: Ratio
    note: str = ""


class SuggestedThresholds(BaseModel):
    risk: str  # "default" ([policy]) or a risk level ([policy.risk.<level>])
    high: float
    medium: float
    source: str
    executed: int = 0  # turns of the level the thresholds would auto-execute, and how many were right
    executed_correct: int = 0

    @property
    def precision_lower_bound(self) -> float | None:
        return wilson_lower_bound(self.executed_correct, self.executed)


def wilson_lower_bound(hits: int, total: int, z: float = 1.96) -> float | None:
    """95% Wilson lower bound of a proportion: how sure the data can make us of a precision."""
    if total == 0:
        return None
    p = hits / total
    centre = p + z * z / (2 * total)
    spread = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total))
    return max(0.0, (centre - spread) / (1 + z * z / total))


def labels_needed(hits: int, total: int, target: float, z: float = 1.96, limit: int = 20_000) -> int | None:
    """How many more executed turns, right as often as these, would lift the Wilson lower bound of
    their precision to `target`; None when no number can (the precision itself misses)."""
    if total == 0:
        return None
    p = hits / total
    n = total
    while n <= limit:
        bound = wilson_lower_bound(round(p * n), n)
        if bound is not None and bound >= target - 1e-12:
            return n - total
        n += 1
    return None


def refusal(result: CalibrationResult) -> str:
    """Why these thresholds must not be written ('' when they may): an auto-execute threshold whose
    95% lower bound on execute precision misses the target (a small set can make high = 0 look
    perfect)."""
    for t in result.thresholds:
        bound = t.precision_lower_bound
        if t.executed == 0 or bound is None or bound >= result.target_precision - 1e-12:
            continue
        where = "[policy]" if t.risk == "default" else f"[policy.risk.{t.risk}]"
        share = t.executed / max(1, result.n)
        more = labels_needed(t.executed_correct, t.executed, result.target_precision)
        if more is None:
            advice = "more labels at this precision cannot fix it: improve the routing or lower --target-precision"
        else:
            overall = math.ceil(more / share) if share > 0 else more
            advice = f"about {overall} more labelled turns ({more} more that auto-execute, right as often) would be needed"
        return (
            f"{where} high = {t.high:.2f} would auto-execute {t.executed} turns, {t.executed_correct} right: the 95% "
            f"lower bound on execute precision is {bound:.2f}, below the target {result.target_precision:.2f}; "
            f"{advice}; nothing was written"
        )
    return ""


class CalibrationResult(BaseModel):
    n: int
    backend: str
    model: str
    formula: str
    fitted_for: str
    target_precision: float
    confirm_precision: float
    learning: str
    fit: FitResult | None
    levels: list[LevelResult]
    thresholds: list[SuggestedThresholds]
    unavoidable_missed_reviews: int  # review-labelled turns routed to the none option or unresolved
    # why the backend's embedding cache could not be written ("" when fine): a stderr warning, not JSON
    cache_problem: str = Field(default="", exclude=True)
    # parts of the backend that did not load (an encoder, the reranker): stderr warnings, not JSON
    load_problems: list[str] = Field(default=[], exclude=True)
    # files whose whole turn list another file holds (session.copy_notes): one stderr line each
    copies: list[str] = Field(default=[], exclude=True)

    def policy_update(self) -> dict[str, Any]:
        default = next(t for t in self.thresholds if t.risk == "default")
        risk = {t.risk: {"high": t.high, "medium": t.medium} for t in self.thresholds if t.risk != "default"}
        return {"high": default.high, "medium": default.medium, "risk": risk, "fitted_for": self.fitted_for}


# -- threshold sweep ----------------------------------------------------------------------------


def _precision_ok(hits: int, total: int, target: float) -> bool:
    return total == 0 or hits / total >= target - 1e-12


def sweep_point(turns: Sequence[SweepTurn], high: float, medium: float, executable: bool) -> SweepPoint:
    executed = executed_correct = confirmed = confirmed_correct = fallback = missed = 0
    for t in turns:
        conf = t.confidence if t.confidence is not None else -1.0
        if executable and conf >= high:
            executed += 1
            executed_correct += t.correct
            missed += t.review
        elif conf >= medium:
            confirmed += 1
            confirmed_correct += t.correct
        else:
            fallback += 1
            missed += t.review
    return SweepPoint(
        high=high,
        medium=medium,
        executed=executed,
        executed_correct=executed_correct,
        confirmed=confirmed,
        confirmed_correct=confirmed_correct,
        fallback=fallback,
        missed_reviews=missed,
    )


def best_high(turns: Sequence[SweepTurn], target_precision: float) -> float | None:
    """Lowest high at which auto-executed turns meet the target and hold no review-labelled turn."""
    for h in GRID:
        chosen = [t for t in turns if t.confidence is not None and t.confidence >= h]
        if any(t.review for t in chosen):
            continue
        if _precision_ok(sum(t.correct for t in chosen), len(chosen), target_precision):
            return h
    return None


def isotonic_accuracy(turns: Sequence[SweepTurn]) -> list[tuple[float, float, float]]:
    """Pool-adjacent-violators fit of P(right | confidence): blocks (lowest conf, highest conf, accuracy).

    Monotone in confidence, so it answers "how often is a pick at this confidence right" locally,
    which a cumulative precision over a wide band would hide.
    """
    grouped: dict[float, list[int]] = {}
    for t in turns:
        if t.confidence is not None:
            grouped.setdefault(t.confidence, []).append(int(t.correct))
    blocks: list[list[float]] = []  # [hits, count, low, high]
    for conf in sorted(grouped):
        hits = grouped[conf]
        blocks.append([float(sum(hits)), float(len(hits)), conf, conf])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            last = blocks.pop()
            blocks[-1][0] += last[0]
            blocks[-1][1] += last[1]
            blocks[-1][3] = last[3]
    return [(low, high, hits / count) for hits, count, low, high in blocks]


def best_medium(turns: Sequence[SweepTurn], upper: float, confirm_precision: float) -> float:
    """Lowest medium above every confidence whose picks are right less than `confirm_precision` of
    the time (isotonic estimate), capped so that no review-labelled turn falls to the fallback."""
    bad = [high for _, high, accuracy in isotonic_accuracy(turns) if accuracy < confirm_precision - 1e-12]
    medium = 0.0 if not bad else (math.floor(max(bad) * 100 + 1e-9) + 1) / 100
    medium = min(medium, upper)
    reviews = [t.confidence for t in turns if t.review and t.confidence is not None and t.confidence < upper]
    if reviews:
        medium = min(medium, math.floor(min(reviews) * 100 + 1e-9) / 100)
    return medium


def sweep_level(
    risk: str,
    turns: Sequence[SweepTurn],
    *,
    executable: bool,
    configured_high: float,
    target_precision: float,
    confirm_precision: float,
) -> LevelResult:
    notes = []
    if executable:
        high = best_high(turns, target_precision)
        if high is None:
            high = 1.0
            notes.append(f"no threshold reaches {target_precision:.2f} execute precision; high = 1.00 (almost nothing auto-executes)")
        upper = high
    else:
        high = configured_high
        upper = math.inf
    medium = best_medium(turns, upper, confirm_precision)
    high = max(high, medium)
    if not executable:
        notes.append("never auto-executes (risk policy): only medium matters; high kept as configured")
    # the printed sweep: high in steps of 0.05 (medium by the rule for that high), plus the choice
    sweep: list[SweepPoint] = []
    if executable:
        for h in sorted({*GRID[::5], high}):
            m = best_medium(turns, h, confirm_precision)
            point = sweep_point(turns, h, min(m, h), executable)
            point.chosen = h == high and min(m, h) == medium
            sweep.append(point)
    else:
        for m in sorted({*GRID[::5], medium}):
            point = sweep_point(turns, high, m, executable)
            point.chosen = m == medium
            sweep.append(point)
    if not any(p.chosen for p in sweep):
        point = sweep_point(turns, high, medium, executable)
        point.chosen = True
        sweep.append(point)
    return LevelResult(
        risk=risk, turns=len(turns), executable=executable, high=high, medium=medium, sweep=sweep, note="; ".join(notes)
    )


def suggest_thresholds(
    turns: Sequence[SweepTurn], policy: PolicyConfig, *, target_precision: float, confirm_precision: float
) -> tuple[list[LevelResult], list[SuggestedThresholds]]:
    """Per-level sweeps and the thresholds to write ('default' = [policy])."""
    acted = [t for t in turns if t.resolved and not t.chose_none and t.risk is not None]
    confirm_risks = {r.value for r in policy.confirm_risks}

    def executable(risk: str) -> bool:
        return risk not in confirm_risks and risk != Risk.escalation.value

    levels: list[LevelResult] = []
    pooled = [t for t in acted if executable(t.risk or "")]
    if pooled:
        default = sweep_level(
            "default",
            pooled,
            executable=True,
            configured_high=policy.high,
            target_precision=target_precision,
            confirm_precision=confirm_precision,
        )
        levels.append(default)
        chosen = sweep_point(pooled, default.high, default.medium, True)
        suggested = [
            SuggestedThresholds(
                risk="default", high=default.high, medium=default.medium, source=f"{len(pooled)} turns of auto-executable levels",
                executed=chosen.executed, executed_correct=chosen.executed_correct,
            )
        ]
    else:
        suggested = [SuggestedThresholds(risk="default", high=policy.high, medium=policy.medium, source="kept: no turn routed to an auto-executable tool")]
    base = suggested[0]
    for risk in [r.value for r in Risk]:
        members = [t for t in acted if t.risk == risk]
        if not members:
            continue
        configured = policy.thresholds_for(Risk(risk))
        level = sweep_level(
            risk,
            members,
            executable=executable(risk),
            configured_high=configured.high,
            target_precision=target_precision,
            confirm_precision=confirm_precision,
        )
        level.same_as_default = bool(pooled) and len(members) == len(pooled) and executable(risk)
        levels.append(level)
        if len(members) < MIN_LEVEL_TURNS:
            level.note = "; ".join(filter(None, [level.note, f"fewer than {MIN_LEVEL_TURNS} turns: inherits [policy]"]))
            continue
        if (level.high, level.medium) != (base.high, base.medium):
            chosen = sweep_point(members, level.high, level.medium, level.executable)
            suggested.append(
                SuggestedThresholds(
                    risk=risk, high=level.high, medium=level.medium, source=f"{len(members)} turns",
                    executed=chosen.executed, executed_correct=chosen.executed_correct,
                )
            )
    return levels, suggested


# -- local backend fit --------------------------------------------------------------------------


class EvidenceSet(BaseModel):
    """Per turn: the offered options' evidence (none option without its margin) and the right answers."""

    options: list[list[str]]
    evidence: list[list[float]]
    none_index: list[int]
    correct: list[list[bool]]


class DistributionModel(BaseModel):
    """How the local backend turns evidence into probabilities, so the fit can evaluate it in bulk.

    `softmax`: softmax(evidence / T). `pooled`: P(none) = sigmoid((none - T*logsumexp(tools / T)) /
    (T * none_ratio)), the tools sharing the rest by softmax(tools / (T * tool_ratio)).
    """

    kind: Literal["softmax", "pooled"] = "softmax"
    none_ratio: float = 1.0
    tool_ratio: float = 1.0


# The surface: per-turn NLL [margin, temperature, turn] and accuracy [margin, turn] on a grid.
Surface = Callable[[Sequence[float], Sequence[float]], "tuple[np.ndarray, np.ndarray]"]


def evidence_arrays(data: EvidenceSet) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    import numpy as np

    n = len(data.options)
    width = max((len(o) for o in data.options), default=1)
    logits = np.full((n, width), -np.inf)
    correct = np.zeros((n, width), dtype=bool)
    for i, (values, flags) in enumerate(zip(data.evidence, data.correct, strict=True)):
        logits[i, : len(values)] = values
        correct[i, : len(flags)] = flags
    return logits, correct, np.asarray(data.none_index)


def _logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    import numpy as np

    peak = x.max(axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    return np.squeeze(peak, axis=axis) + np.log(np.exp(x - peak).sum(axis=axis))


def model_surface(data: EvidenceSet, model: DistributionModel) -> Surface:
    """A vectorised surface for a known distribution model (numpy)."""
    import numpy as np

    logits, correct, none_idx = evidence_arrays(data)
    n, width = logits.shape
    rows = np.arange(n)
    eligible = correct.any(axis=1)
    is_none = np.zeros((n, width), dtype=bool)
    is_none[rows, none_idx] = True
    base_none = logits[rows, none_idx].copy()

    def surface(temperatures: Sequence[float], margins: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        temps = np.asarray(temperatures, dtype=float)[:, None, None]
        nll = np.zeros((len(margins), len(temperatures), n))
        acc = np.zeros((len(margins), n), dtype=bool)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            for mi, margin in enumerate(margins):
                shifted = logits.copy()
                shifted[rows, none_idx] = base_none + margin
                if model.kind == "softmax":
                    scaled = shifted[None, :, :] / temps
                    logp = scaled - _logsumexp(scaled, 2)[..., None]
                else:
                    tools = np.where(is_none, -np.inf, shifted)[None, :, :]
                    has_tools = np.isfinite(tools).any(axis=2)
                    pooled = temps[..., 0] * _logsumexp(tools / temps, 2)
                    gap = np.clip((shifted[rows, none_idx][None, :] - pooled) / (temps[..., 0] * model.none_ratio), -50, 50)
                    log_none = np.where(has_tools, -np.logaddexp(0.0, -gap), 0.0)
                    log_rest = -np.logaddexp(0.0, gap)
                    within = tools / (temps * model.tool_ratio)
                    log_within = within - _logsumexp(within, 2)[..., None]
                    logp = np.where(is_none[None, :, :], log_none[..., None], log_rest[..., None] + log_within)
                # accuracy from the most probable option (ties to the earlier one), at the middle temperature
                acc[mi] = correct[rows, np.argmax(logp[len(temperatures) // 2], axis=1)]
                right = np.where(correct[None, :, :], logp, -np.inf)
                nll[mi] = np.where(eligible[None, :], -_logsumexp(right, 2), 0.0)
        return nll, acc

    return surface


def scalar_surface(data: EvidenceSet, probabilities: Callable[[int, LocalParams], dict[str, float]]) -> Surface:
    """A surface from any per-turn probability function (slow; used when no bulk model matches)."""
    import numpy as np

    n = len(data.options)

    def surface(temperatures: Sequence[float], margins: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        nll = np.zeros((len(margins), len(temperatures), n))
        acc = np.zeros((len(margins), n), dtype=bool)
        for mi, margin in enumerate(margins):
            for ti, temperature in enumerate(temperatures):
                params = LocalParams(temperature=temperature, none_margin=margin)
                for i in range(n):
                    probs = probabilities(i, params)
                    options = data.options[i]
                    right = sum(probs[o] for o, ok in zip(options, data.correct[i], strict=True) if ok)
                    nll[mi, ti, i] = -math.log(max(right, 1e-300)) if any(data.correct[i]) else 0.0
                    if ti == len(temperatures) // 2:
                        acc[mi, i] = data.correct[i][options.index(argmax(probs, options))]
        return nll, acc

    return surface


COARSE_TEMPERATURES = [round(0.02 * 1.4**i, 4) for i in range(16)]  # 0.02 .. 3.3, geometric
COARSE_MARGINS = [round(-1.0 + 0.25 * i, 2) for i in range(21)]  # -1.0 .. 4.0
SMALL_TEMPERATURES = [0.05, 0.1, 0.15, 0.2, 0.3, 0.45, 0.7, 1.0]
SMALL_MARGINS = [round(-0.5 + 0.4 * i, 2) for i in range(11)]  # -0.5 .. 3.5


def fit_local(
    data: EvidenceSet,
    before: LocalParams,
    *,
    folds: int = DEFAULT_FOLDS,
    surface: Surface | None = None,
    refine: bool = True,
    temperatures: Sequence[float] = COARSE_TEMPERATURES,
    margins: Sequence[float] = COARSE_MARGINS,
    fit_margin: bool = True,
) -> FitResult:
    """Coarse-to-fine grid search of temperature and none margin by mean NLL of the right answer;
    k-fold held-out NLL and accuracy reported for the fitted and the current parameters.

    Accuracy does not depend on the temperature for a softmax; for other models it is read at the
    fitted temperature's neighbourhood (the middle of the fine grid).
    """
    import numpy as np

    surface = surface or model_surface(data, DistributionModel())
    if not fit_margin:  # e.g. no none-labelled turns: nothing to say how strong the none option should be
        margins = [before.none_margin]
    n = len(data.options)
    eligible = np.asarray([any(c) for c in data.correct], dtype=bool)
    coarse_nll, _ = surface(temperatures, margins)
    edge = False

    def fit_on(mask: np.ndarray) -> tuple[LocalParams, np.ndarray, np.ndarray]:
        """Best parameters on the masked turns, with every turn's NLL and accuracy under them."""
        nonlocal edge
        use = mask & eligible
        if not use.any():
            one_nll, one_acc = surface([before.temperature], [before.none_margin])
            return before, one_nll[0, 0], one_acc[0]
        mean = coarse_nll[:, :, use].mean(axis=2)
        mi, ti = (int(v) for v in np.unravel_index(int(np.argmin(mean)), mean.shape))
        edge = edge or (fit_margin and mi in (0, len(margins) - 1)) or ti in (0, len(temperatures) - 1)
        t0, m0 = temperatures[ti], margins[mi]
        if refine:
            temps = [round(t0 * 1.4 ** (j / 4), 4) for j in range(-4, 5)]
            mars = [round(m0 + 0.05 * j, 2) for j in range(-5, 6)] if fit_margin else [m0]
        else:
            temps, mars = [t0], [m0]
        fine_nll, _ = surface(temps, mars)
        mean = fine_nll[:, :, use].mean(axis=2)
        fi, fj = (int(v) for v in np.unravel_index(int(np.argmin(mean)), mean.shape))
        params = LocalParams(temperature=temps[fj], none_margin=mars[fi])
        at_nll, at_acc = surface([params.temperature], [params.none_margin])
        return params, at_nll[0, 0], at_acc[0]

    k = max(2, min(folds, n))
    fold_of = np.arange(n) % k
    held_nll: list[float] = []
    held_hits = 0
    for f in range(k):
        test = fold_of == f
        _, turn_nll, turn_acc = fit_on(~test)
        held_nll.extend(turn_nll[test & eligible].tolist())
        held_hits += int(turn_acc[test].sum())
    before_nll, before_acc = surface([before.temperature], [before.none_margin])
    after, _, _ = fit_on(np.ones(n, dtype=bool))
    note = (
        f"held-out: each of {k} folds scored with parameters fitted on the other {k - 1}; NLL over the "
        f"{int(eligible.sum())} turns whose right answer was offered, accuracy over all {n}"
    )
    if edge:
        note += "; the fit reached the edge of the search grid"
    if not fit_margin:
        note += "; none margin kept (no none-labelled turns to fit it on)"
    return FitResult(
        folds=k,
        turns=int(eligible.sum()),
        before=before,
        after=after,
        before_nll=float(before_nll[0, 0, eligible].mean()) if eligible.any() else None,
        after_nll=float(np.mean(held_nll)) if held_nll else None,
        before_accuracy=Ratio(hits=int(before_acc[0].sum()), total=n),
        after_accuracy=Ratio(hits=held_hits, total=n),
        note=note,
    )


# -- the local backend, as it is ------------------------------------------------------------------


def backend_probabilities(backend: Any, options: list[str], values: list[float], none_index: int, params: LocalParams) -> dict[str, float]:
    """The backend's own evidence-to-probabilities step at these parameters (its code, not a copy)."""
    evidence = dict(zip(options, values, strict=True))
    evidence[options[none_index]] = values[none_index] + params.none_margin
    declared = backend.calibration_params()
    if declared is None or declared.kind == "softmax":
        return softmax(evidence, params.temperature)
    saved = backend.temperature
    backend.temperature = params.temperature
    try:
        return dict(backend.distribution(evidence, options, options[none_index]))
    finally:
        backend.temperature = saved


def backend_model(backend: Any) -> DistributionModel:
    """The bulk model matching the backend's distribution step (checked against it before use)."""
    declared = backend.calibration_params()
    if declared is None or declared.kind == "softmax":
        return DistributionModel(kind="softmax")
    return DistributionModel(kind="pooled", none_ratio=declared.none_ratio, tool_ratio=declared.tool_ratio)


def _collect_evidence(router: Router, cases: Sequence[LabelledCase]) -> tuple[EvidenceSet, str]:
    """Evidence per case (leave-one-out); '' or why the evidence does not reproduce decide()."""
    backend: Any = router.backend
    none = router.catalog.none_option
    data = EvidenceSet(options=[], evidence=[], none_index=[], correct=[])
    params = LocalParams(temperature=backend.temperature, none_margin=backend.none_margin)
    mismatch = ""
    for i, case in enumerate(cases):
        message = case.turn.message
        retrieval = router.retrieve(message, holdout=message)  # the router's own step (BM25 + backend suggestions)
        question = router.question_for(message, retrieval, holdout=message)
        options = list(question.options)
        evidence = backend.evidence(question.message, options, question.holdout)
        values = [evidence.get(o, backend.none_margin if o == none else 0.0) for o in options]
        none_index = options.index(none)
        values[none_index] -= backend.none_margin
        answers = {case.turn.label, *case.turn.acceptable}
        data.options.append(options)
        data.evidence.append(values)
        data.none_index.append(none_index)
        data.correct.append([o in answers for o in options])
        if i < 25 and not mismatch:  # the fit re-evaluates decide() from the evidence: check that it can
            real = backend.decide(question).probabilities
            mine = backend_probabilities(backend, options, values, none_index, params)
            if any(abs(real.get(o, -1.0) - p) > 1e-6 for o, p in mine.items()):
                mismatch = "the local backend's answer is not a function of its evidence, temperature and none margin; the fit was skipped"
    return data, mismatch


def local_surface(backend: Any, data: EvidenceSet) -> tuple[Surface, bool]:
    """The bulk surface when it reproduces the backend exactly, else the slow generic one (False)."""
    model = backend_model(backend)
    surface = model_surface(data, model)
    sample = list(range(min(len(data.options), 40)))
    probe = [(0.1, -0.5), (0.3, 0.75), (1.2, 2.0)]
    for temperature, margin in probe:
        params = LocalParams(temperature=temperature, none_margin=margin)
        nll, _ = surface([temperature], [margin])
        for i in sample:
            if not any(data.correct[i]):
                continue
            probs = backend_probabilities(backend, data.options[i], data.evidence[i], data.none_index[i], params)
            right = sum(probs[o] for o, ok in zip(data.options[i], data.correct[i], strict=True) if ok)
            if abs(-math.log(max(right, 1e-300)) - nll[0, 0, i]) > 1e-6:
                return scalar_surface(
                    data, lambda j, p: backend_probabilities(backend, data.options[j], data.evidence[j], data.none_index[j], p)
                ), False
    return surface, True


def _sweep_turns_local(router: Router, cases: Sequence[LabelledCase], data: EvidenceSet, params: LocalParams) -> list[SweepTurn]:
    catalog = router.catalog
    policy = router.config.policy
    turns = []
    for case, options, values, none_index in zip(cases, data.options, data.evidence, data.none_index, strict=True):
        probabilities = backend_probabilities(router.backend, options, values, none_index, params)
        probabilities = {o: probabilities[o] for o in options}
        choice = argmax(probabilities, options)
        answer = Answer(choice=choice, probabilities=probabilities, reported_confidence=reference_confidence(probabilities))
        risk = catalog.risk_of(choice)
        banding = band_answer(answer, options, catalog.none_option, risk, policy)
        turns.append(_sweep_turn(case, choice, banding.confidence, risk, banding.band is not Band.unresolved, catalog))
    return turns


def _sweep_turn(case: LabelledCase, choice: str | None, confidence: float | None, risk: Risk | None, resolved: bool, catalog: Catalog) -> SweepTurn:
    label = case.turn.label or ""
    tool = catalog.get(label)
    chose_none = choice == catalog.none_option
    return SweepTurn(
        confidence=confidence if resolved else None,
        risk=risk.value if (risk and resolved and not chose_none) else None,
        correct=resolved and choice in {label, *case.turn.acceptable},
        review=bool(tool and tool.is_escalation),
        resolved=resolved,
        chose_none=chose_none,
    )


def calibrate(
    paths: Sequence[str | Path],
    config: Config,
    *,
    catalog: Catalog | None = None,
    backend: str | None = None,
    target_precision: float = 0.95,
    confirm_precision: float = 0.5,
    folds: int = DEFAULT_FOLDS,
    learn: bool = True,
) -> CalibrationResult:
    from .catalog import load_catalog
    from .evaluate import learning_mode, route_all
    from .route import build_router

    if not 0.0 < target_precision <= 1.0 or not 0.0 <= confirm_precision <= 1.0:
        raise CalibrationError("--target-precision must be in (0, 1] and --confirm-precision in [0, 1]")
    catalog = catalog or load_catalog(config.catalog_spec())
    cases, sessions = load_cases(paths)
    check_cases(sessions, cases, catalog)
    if len(cases) < MIN_TURNS:
        # a folder of many sessions would make this one sentence a page long: name a few at most
        where = ", ".join(str(s.path) for s in sessions) if len(sessions) <= 3 else f"{len(sessions)} files"
        more = MIN_TURNS - len(cases)
        raise CalibrationError(
            f"calibrate needs at least {MIN_TURNS} labelled turns to suggest thresholds; found {len(cases)} in {where} "
            f"(label {more} more, or use `tui-router eval` to measure the current thresholds)"
        )
    router = build_router(config, catalog, backend)
    taught = teach_local_backend(router, cases) if learn else False
    learning = learning_mode(router, learn, taught, len(cases))
    fit: FitResult | None = None
    model = router.backend.model
    declared = router.backend.calibration_params()
    if declared is not None:  # a backend with parameters calibrate may fit (the local one)
        data, mismatch = _collect_evidence(router, cases)
        before = LocalParams(temperature=declared.temperature, none_margin=declared.none_margin)
        if mismatch:
            params = before
            fit = FitResult(
                folds=0, turns=0, before=before, after=before, before_nll=None, after_nll=None,
                before_accuracy=Ratio(), after_accuracy=Ratio(), note=mismatch,
            )
        else:
            surface, bulk = local_surface(router.backend, data)
            none_cases = sum(1 for c in cases if c.turn.label == catalog.none_option)
            if bulk:
                fit = fit_local(data, before, folds=folds, surface=surface, fit_margin=none_cases > 0)
            else:  # a distribution step we cannot evaluate in bulk: a smaller grid, no refinement
                fit = fit_local(
                    data, before, folds=folds, surface=surface, refine=False, fit_margin=none_cases > 0,
                    temperatures=SMALL_TEMPERATURES, margins=SMALL_MARGINS,
                )
                fit.note += "; evaluated through the backend's own code on a small grid"
            if 0 < none_cases < 10:
                fit.note += f"; only {none_cases} none-labelled turns: the none margin is weakly constrained"
            params = fit.after
        sweep_turns = _sweep_turns_local(router, cases, data, params)
    else:
        decisions = route_all(router, [c.turn.message for c in cases])
        sweep_turns = [
            _sweep_turn(c, d.choice, d.confidence, d.risk, d.band is not Band.unresolved, catalog)
            for c, d in zip(cases, decisions, strict=True)
        ]
    levels, suggested = suggest_thresholds(  # the router's policy: with a backend's fitted defaults when the config sets none
        sweep_turns, router.config.policy, target_precision=target_precision, confirm_precision=confirm_precision
    )
    unavoidable = sum(1 for t in sweep_turns if t.review and (t.chose_none or not t.resolved))
    return CalibrationResult(
        n=len(cases),
        backend=router.backend.name,
        model=model,
        formula=config.policy.confidence,
        fitted_for=f"{config.policy.confidence} / {model}",
        target_precision=target_precision,
        confirm_precision=confirm_precision,
        learning=learning,
        fit=fit,
        levels=levels,
        thresholds=suggested,
        unavoidable_missed_reviews=unavoidable,
        cache_problem=router.backend.cache_problem(),
        load_problems=router.backend.load_problems(),
        copies=copy_notes(sessions),
    )


# -- writing the config -------------------------------------------------------------------------


def write_config(path: str | Path, result: CalibrationResult) -> Path:
    """Merge the thresholds (and the local fit) into the TOML config at `path`; keep every other key."""
    import tomli_w

    from .config import config_from_dict
    from .session import atomic_write_text

    path = Path(path)
    refused = refusal(result)
    if refused:
        raise ConfigError(f"{path}: {refused}")
    data: dict[str, Any] = {}
    original = ""
    if path.exists():
        raw = tomlio.read_file_bytes(path, "config", ConfigError)
        try:
            original = raw.decode("utf-8")
            data = tomlio.loads(original)
        except (UnicodeDecodeError, tomllib.TOMLDecodeError, tomlio.TOMLLimitError) as exc:
            raise ConfigError(f"{path}: not valid TOML ({exc}); nothing was written") from None
    update = result.policy_update()
    policy = data.setdefault("policy", {})
    if not isinstance(policy, dict):
        raise ConfigError(f"{path}: 'policy' is not a table; nothing was written")
    policy["high"], policy["medium"], policy["fitted_for"] = update["high"], update["medium"], update["fitted_for"]
    risk_table = policy.get("risk", {})
    if not isinstance(risk_table, dict):
        raise ConfigError(f"{path}: 'policy.risk' is not a table; nothing was written")
    measured = {level.risk for level in result.levels if level.risk != "default"}
    for level in measured:  # levels measured now either get a fresh entry or inherit [policy]
        risk_table.pop(level, None)
    risk_table.update(update["risk"])
    if risk_table:
        policy["risk"] = risk_table
    else:
        policy.pop("risk", None)
    if data.get("backend", "auto") == "auto":
        data["backend"] = result.backend  # thresholds suit the backend they were fitted for: pin it
    if result.fit is not None and result.fit.folds:
        local = data.setdefault("local", {})
        local["temperature"] = result.fit.after.temperature
        local["none_margin"] = result.fit.after.none_margin
    try:
        config_from_dict(data, path)  # never write a config the router would refuse
    except ConfigError as exc:
        raise ConfigError(f"{path}: nothing was written", [*exc.lines(), f"{path}: nothing was written"]) from None
    if any(line.lstrip().startswith("#") for line in original.splitlines()):
        backup = path.with_name(path.name + ".bak")
        try:
            atomic_write_text(backup, original)  # tomli-w cannot keep comments
        except OSError as exc:
            raise ConfigError(f"{path}: its comments cannot be kept in {backup.name} ({exc.strerror or exc}); nothing was written") from None
    try:
        atomic_write_text(path, tomli_w.dumps(data))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write the config ({exc.strerror or exc}); nothing was overwritten") from None
    return path
