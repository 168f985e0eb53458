"""The escalation step: whether a request should go to a person (issue 12 item 6).

A second decision after the semantic backend's distribution, like its none step: a logistic gate
P(escalation) over evidence that carries across catalogs, and no phrase list:

- the escalation mass the distribution already gives (its log-odds: with weight 1 and every other
  weight 0 the gate changes nothing, which is also what its fit is regularised towards);
- the fitted head's best escalation-option score against its best tool score, and that best tool
  score itself (the head learns the escalation options from their own when_to_use, keywords and
  examples and from labelled escalation turns, like any option);
- the best escalation option's cosine and example similarity against the best tool's;
- how specific the request is: how peaked the distribution over the tools is, and how many of the
  leading tool's required arguments the message does not state (arguments.extract_arguments:
  "update the thing for the client" names no ticket);
- the none step's log-odds (a request an assistant answers itself is not an escalation);
- a probe: a linear direction in the e5 embedding space fitted on labelled escalation turns of
  several catalogs, and on those catalogs' escalation options' own texts (when_to_use, examples),
  against their tool and none turns and tool texts (what "a person should see this" looks like
  across catalogs: a contested charge, a grievance, a request with no object), shipped as numbers
  in the data file, not as sentences.

The gate's probability becomes the total mass of the escalation options; every other option keeps
its share of the rest. The escalation options share it as the distribution had it, tilted by a
second probe (the split): a direction in the same space fitted on escalation turns and texts,
"ask which one" (a request that names no object) against "a person decides" (a contest, an
exception, a legal or staff matter). Each escalation option's place on that direction is read from
its own when_to_use and examples, so the tilt needs no option ids: the message's score on the
direction times each option's (centred over the offered escalation options), times a fitted weight. So when the gate fires the
escalation option is chosen, and when it half fires the leading write tool loses the confidence a
high band needs and is confirmed instead of executed. The weights are fitted across catalogs by
benchmarks/fit_escalation.py --write into escalation-model.json beside this module.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..arguments import extract_arguments
from ..errors import ConfigError

if TYPE_CHECKING:
    from ..catalog import Catalog

CONSTANTS = Path(__file__).with_name("escalation-model.json")
FEATURES = (
    "bias",
    "base_logit",
    "head_margin",
    "head_tool_best",
    "cos_margin",
    "example_margin",
    "tool_peak",
    "args_missing",
    "none_logit",
    "probe",
)
# the gate that changes nothing: P(escalation) = the distribution's own escalation mass
IDENTITY = {name: (1.0 if name == "base_logit" else 0.0) for name in FEATURES}
LOGIT_CAP = 12.0
_EPS = 1e-9


def logit(p: float) -> float:
    p = min(1.0 - _EPS, max(_EPS, p))
    return max(-LOGIT_CAP, min(LOGIT_CAP, math.log(p / (1.0 - p))))


@dataclass(frozen=True)
class GateModel:
    weights: dict[str, float]
    probe: np.ndarray | None = None  # direction over centred e5 query vectors
    probe_mean: np.ndarray | None = None
    probe_bias: float = 0.0
    split: np.ndarray | None = None  # "ask which one" (+) against "a person decides" (-), same space
    split_mean: np.ndarray | None = None
    split_weight: float = 0.0
    split_bias: float = 0.0

    def split_score(self, vector: np.ndarray | None) -> float:
        return _project(vector, self.split, self.split_mean, self.split_bias)

    def probe_score(self, vector: np.ndarray | None) -> float:
        return _project(vector, self.probe, self.probe_mean, self.probe_bias)


def _project(vector: np.ndarray | None, direction: np.ndarray | None, mean: np.ndarray | None, bias: float) -> float:
    """A message's score on a fitted direction; 0 without one or for another encoder's vector."""
    if direction is None or mean is None or vector is None or len(vector) != len(direction):
        return 0.0
    return float((np.asarray(vector, dtype=np.float64) - mean) @ direction) + bias


@lru_cache(maxsize=1)
def gate_model() -> GateModel:
    """The gate benchmarks/fit_escalation.py wrote beside this module."""
    return load_gate_model(CONSTANTS)


def load_gate_model(path: Path) -> GateModel:
    """A gate from its data file (the identity gate when there is none)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        weights = raw.get("weights", {})
        probe = raw.get("probe")
        if probe and len(probe["direction"]) != len(probe["mean"]):
            raise ValueError("the probe's direction and mean differ in length")
        split = raw.get("split")
        if split and len(split["direction"]) != len(split["mean"]):
            raise ValueError("the split's direction and mean differ in length")
        return GateModel(
            {name: float(weights.get(name, IDENTITY[name])) for name in FEATURES},
            np.asarray(probe["direction"], dtype=np.float64) if probe else None,
            np.asarray(probe["mean"], dtype=np.float64) if probe else None,
            float(probe["bias"]) if probe else 0.0,
            np.asarray(split["direction"], dtype=np.float64) if split else None,
            np.asarray(split["mean"], dtype=np.float64) if split else None,
            float(split["weight"]) if split else 0.0,
            float(split["bias"]) if split else 0.0,
        )
    except FileNotFoundError:
        return GateModel(dict(IDENTITY))
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:  # a damaged install: one sentence, not a traceback
        raise ConfigError(f"the escalation step's fitted constants ({path}) cannot be read ({exc}); reinstall tui-router") from None


def args_missing(catalog: Catalog, tool_id: str | None, message: str) -> float:
    """The share of the tool's required arguments the message does not state (0 without a schema)."""
    tool = catalog.get(tool_id) if tool_id else None
    schema = (tool.input_schema or {}) if tool is not None else {}
    required = [r for r in schema.get("required") or [] if isinstance(r, str)]
    if not required:
        return 0.0
    found = extract_arguments(tool, message)
    return sum(name not in found for name in required) / len(required)


def gate_features(
    catalog: Catalog,
    message: str,
    tools: list[str],
    rows: np.ndarray,
    columns: tuple[str, ...],
    probabilities: dict[str, float],
    none_option: str,
    probe: float = 0.0,
) -> dict[str, float] | None:
    """The gate's evidence for one message (None when no escalation option or no tool is offered).

    `tools`/`rows`/`columns`: the backend's per-option features (rows in `tools` order, columns
    named; "head", "cosine" and "example" are read); `probabilities`: its distribution."""
    escalation = set(catalog.escalation_ids)
    esc_at = [i for i, t in enumerate(tools) if t in escalation]
    tool_at = [i for i, t in enumerate(tools) if t not in escalation]
    if not esc_at or not tool_at:
        return None

    def margin(name: str) -> tuple[float, float]:
        if name not in columns:
            return 0.0, 0.0
        col = rows[:, columns.index(name)]
        best_tool = float(col[tool_at].max())
        return float(col[esc_at].max()) - best_tool, best_tool

    head_margin, head_tool_best = margin("head")
    cos_margin, _ = margin("cosine")
    example_margin, _ = margin("example")
    esc_mass = sum(probabilities.get(tools[i], 0.0) for i in esc_at)
    tool_p = [probabilities.get(tools[i], 0.0) for i in tool_at]
    tool_mass = sum(tool_p)
    leading = tools[tool_at[int(np.argmax(tool_p))]]
    return {
        "bias": 1.0,
        "base_logit": logit(esc_mass),
        "head_margin": head_margin,
        "head_tool_best": head_tool_best,
        "cos_margin": cos_margin,
        "example_margin": example_margin,
        "tool_peak": max(tool_p) / tool_mass if tool_mass > 0 else 0.0,
        "args_missing": args_missing(catalog, leading, message),
        "none_logit": logit(probabilities.get(none_option, 0.0)),
        "probe": probe,
    }


def gate_log_odds(features: dict[str, float], weights: dict[str, float]) -> float:
    score = sum(weights.get(name, 0.0) * value for name, value in features.items())
    return max(-LOGIT_CAP, min(LOGIT_CAP, score))


def apply_gate(
    probabilities: dict[str, float], escalation: set[str], p_escalation: float, tilt: dict[str, float] | None = None
) -> dict[str, float]:
    """Give the escalation options `p_escalation` in total (in their own proportions, each times its
    `tilt` factor when given), the rest the remainder."""
    tilt = tilt or {}
    esc = {o: p * tilt.get(o, 1.0) for o, p in probabilities.items() if o in escalation}
    esc_mass = sum(esc.values())
    rest_mass = sum(p for o, p in probabilities.items() if o not in escalation)
    if esc_mass <= 0 or rest_mass <= 0:
        return probabilities
    return {
        o: (esc[o] * p_escalation / esc_mass if o in escalation else p * (1.0 - p_escalation) / rest_mass)
        for o, p in probabilities.items()
    }


def option_vector(vectors: np.ndarray) -> np.ndarray:
    """An escalation option's place in the e5 space: the mean of its own texts' query vectors."""
    mean = np.asarray(vectors, dtype=np.float64).mean(axis=0)
    return mean / (np.linalg.norm(mean) or 1.0)


def split_tilt(model: GateModel, message_vector: np.ndarray | None, option_vectors: dict[str, np.ndarray] | None) -> dict[str, float] | None:
    """exp(weight * message's split score * option's split score, centred over the options)."""
    if not option_vectors or len(option_vectors) < 2 or model.split_weight == 0.0:
        return None
    m = model.split_score(message_vector)
    roles = {o: model.split_score(v) for o, v in option_vectors.items()}
    centre = sum(roles.values()) / len(roles)
    return {o: math.exp(max(-LOGIT_CAP, min(LOGIT_CAP, model.split_weight * m * (r - centre)))) for o, r in roles.items()}


def escalate(
    catalog: Catalog,
    message: str,
    tools: list[str],
    rows: np.ndarray,
    columns: tuple[str, ...],
    probabilities: dict[str, float],
    none_option: str,
    vector: np.ndarray | None = None,
    model: GateModel | None = None,
    option_vectors: dict[str, np.ndarray] | None = None,
) -> dict[str, float]:
    """The distribution after the escalation step (unchanged when no escalation option is offered).
    `vector`: the message's e5 query vector (for the probes); `option_vectors`: each escalation
    option's `option_vector` (for the split; without them the options keep their proportions)."""
    model = gate_model() if model is None else model
    features = gate_features(catalog, message, tools, rows, columns, probabilities, none_option, model.probe_score(vector))
    if features is None:
        return probabilities
    p = 1.0 / (1.0 + math.exp(-gate_log_odds(features, model.weights)))
    return apply_gate(probabilities, set(catalog.escalation_ids), p, split_tilt(model, vector, option_vectors))
