"""The decision interface every backend implements, and the checks every answer must pass."""

from __future__ import annotations

import asyncio
import json
import math
import unicodedata
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..catalog import Catalog
    from ..config import Config, RetrievalConfig
    from ..retrieve import Retriever

DEFAULT_INSTRUCTIONS = (
    "Choose the one option whose description best fits the user's message in state.message. "
    "Choose the none option when no listed tool does what the message asks, or the message is not a "
    "tool request. Selecting an option is routing evidence only; it is not authorization to run it."
)


class Question(BaseModel):
    """A Choice question: instructions + {option id: description}; the none option included."""

    model_config = ConfigDict(frozen=True)

    message: str
    options: dict[str, str]
    none_option: str
    instructions: str = DEFAULT_INSTRUCTIONS
    retrieved_tools: list[str] = []
    # A labelled message the backend must not use as evidence for itself (leave-one-out in eval).
    holdout: str | None = None


class Answer(BaseModel):
    """What a backend answered. `choice` None means no answer (unresolved, never a default)."""

    choice: str | None = None
    probabilities: dict[str, float] = {}
    reported_confidence: float | None = None
    model: str = ""
    latency_ms: float = 0.0
    error: str = ""
    usage: dict[str, int] = Field(default_factory=dict)


class CalibrationParams(BaseModel):
    """What `tui-router calibrate` may fit for a backend, and how its probabilities follow from them.

    The backend answers `evidence(message, options, holdout)` and `distribution(evidence, options,
    none_option)`; calibrate refits `temperature` and `none_margin` on labelled turns and checks its
    bulk model (`kind`, the two ratios) against `decide()` before trusting it.
    """

    model_config = ConfigDict(frozen=True)

    temperature: float
    none_margin: float
    kind: Literal["softmax", "pooled"] = "softmax"
    none_ratio: float = 1.0  # pooled: the none-vs-any-tool step runs at temperature * none_ratio
    tool_ratio: float = 1.0  # pooled: the which-tool step runs at temperature * tool_ratio


class DecisionBackend:
    """The backend contract. Async first (`adecide`); `decide` is the one sync facade.

    `decide` must never raise for a bad model answer: it returns Answer(error=...). What a backend
    can do beyond answering is declared here, with defaults, so callers never probe for attributes:
    `learns_from_examples` (then `add_exemplar` works), `supplies_candidates` (then
    `suggest_candidates` may add tools to the retrieved ones), `make_retriever` (a backend's own
    retriever, or None) and `calibration_params` (what calibrate may fit, or None).
    """

    name: str = "backend"
    model: str = ""
    max_options: int = 255
    learns_from_examples: ClassVar[bool] = False
    supplies_candidates: ClassVar[bool] = False
    # (high, medium) thresholds fitted with the backend's model, used when the config sets none
    # (config-set or calibrated thresholds win); None: the config's defaults
    default_thresholds: ClassVar[tuple[float, float] | None] = None

    @classmethod
    def from_config(cls, catalog: Catalog, config: Config, retriever: Retriever | None = None) -> DecisionBackend:
        """Build from the config; `retriever` is the router's BM25 index, shared when the backend uses one."""
        return cls(catalog, retriever=retriever)  # type: ignore[call-arg]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A backend answers in one of the two ways; the other is derived here. Catch a class with
        # neither when it is defined, not as infinite recursion on the first turn.
        if cls.decide is DecisionBackend.decide and cls.adecide is DecisionBackend.adecide:
            raise TypeError(f"{cls.__name__} must implement adecide (async first) or decide")

    async def adecide(self, question: Question) -> Answer:
        """The answer to one question. In-process backends implement `decide` instead: CPU-bound,
        they answer in milliseconds, so this runs it inline rather than in a thread."""
        return self.decide(question)

    def decide(self, question: Question) -> Answer:
        """The one sync facade (CLI, eval): a backend that implements only `adecide` is run on a fresh loop."""
        return asyncio.run(self.adecide(question))

    async def aclose(self) -> None:
        return None

    def waiting_note(self, questions: int = 1) -> str:
        """What a turn waiting on this backend waits for beyond its name and model (a server, and when
        it gives up), for the console to say while it waits; "" for a backend that answers in-process.
        `questions`: how many the turn asks (2 when it goes two-stage): a time limit counts each."""
        return ""

    def cache_problem(self) -> str:
        """Why a cache this backend keeps on disk could not be written ("" when fine, or none kept).
        Caches fail soft (routing goes on from memory), so a caller says it as a warning."""
        return ""

    def load_problems(self) -> list[str]:
        """A sentence per part that did not load while the backend went on without it (an encoder
        of [semantic] encoders, the reranker): said once as a warning, like cache_problem."""
        return []

    def add_exemplar(self, label: str, message: str) -> None:
        """Learn from one labelled turn; only when `learns_from_examples`."""
        raise NotImplementedError(f"the {self.name} backend does not learn from labelled turns")

    def forget_exemplar(self, label: str, message: str) -> None:
        """Stop learning from a labelled turn taught earlier (its label was corrected or cleared);
        only when `learns_from_examples`."""
        raise NotImplementedError(f"the {self.name} backend does not learn from labelled turns")

    def learn_in_background(self) -> None:
        """Fit whatever learning from labels costs seconds on a background thread from now on (the
        console: its UI never waits); without this call such fits run when a routing needs them, so
        results do not depend on timing (eval). Nothing by default."""

    def prefetch(self, messages: Sequence[str]) -> None:
        """Many messages are about to be routed (an eval): prepare what routing them needs in one
        go (the semantic backend embeds them in a pooled batch). Nothing by default."""

    def suggest_candidates(self, message: str, holdout: str | None = None) -> list[str]:
        """Tool ids this backend knows fit `message` beyond BM25's candidates (e.g. from exemplars)."""
        return []

    def make_retriever(self, catalog: Catalog, retrieval: RetrievalConfig) -> Any | None:
        """The router's retriever when the backend brings its own (`retrieve(message, extra)`), else None."""
        return None

    def calibration_params(self) -> CalibrationParams | None:
        """What calibrate may fit for this backend now; None: thresholds only."""
        return None

    def option_limit(self) -> int:
        """The most options one question may carry; more and the router asks in two stages."""
        return self.max_options

    async def aoption_limit(self) -> int:
        # A remote backend may have to ask its server first (the server profile).
        return self.option_limit()

    def close(self) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(self.aclose())


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def shown(value: Any, limit: int = 80, *, as_json: bool = False) -> str:
    """A value from a server or a backend as an error quotes it: a repr for a name, JSON for the
    rest (and for text where a JSON value is meant), cut to `limit` characters so a hostile answer
    never dumps itself into the error."""
    if isinstance(value, str) and not as_json:
        text = repr(value)
    else:
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):  # NaN is fine; a 5000-digit int is not
            text = type(value).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_answer(answer: Answer, options: list[str]) -> str:
    """Why this answer cannot be acted on, or '' when it is consistent.

    Fail closed: anything a backend gets wrong makes the turn unresolved; we never repair a choice
    by taking an argmax or the first option.
    """
    if answer.error:
        return answer.error
    if answer.choice is None:
        return "the backend gave no answer"
    offered = {_nfc(o) for o in options}
    if _nfc(answer.choice) not in offered or answer.choice not in options:
        return f"the choice {shown(answer.choice)} is not one of the offered options"
    probs = answer.probabilities
    if not probs:
        return "the answer has no probabilities"
    keys = set(probs)
    if keys != set(options):
        missing = sorted(set(options) - keys)
        extra = sorted(keys - set(options))
        parts = []
        if missing:
            parts.append("missing " + ", ".join(shown(m) for m in missing[:5]))
        if extra:
            parts.append("unexpected " + ", ".join(shown(e) for e in extra[:5]))
        return "probability keys do not match the offered options (" + "; ".join(parts) + ")"
    for key, value in probs.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            return f"probability of {shown(key)} is not a finite number"
        if value < 0:
            return f"probability of {shown(key)} is negative ({value})"
    for key, value in probs.items():
        if value > 1 + 1e-6:  # the sum's tolerance below would let one through up to 1.01
            return f"probability of {shown(key)} is above 1 ({value})"
    total = sum(probs.values())
    if abs(total - 1.0) > 0.01:
        return f"probabilities sum to {total:.4f}, not 1"
    reported = answer.reported_confidence
    if reported is not None and not (math.isfinite(reported) and 0.0 <= reported <= 1.0):
        return f"the reported confidence {reported} is outside [0, 1]"
    top = max(probs.values())
    if probs[answer.choice] < top - 1e-9:
        best = max(probs, key=lambda k: probs[k])
        return f"the choice {shown(answer.choice)} is not the most probable option ({shown(best)} is)"
    return ""


def softmax(logits: dict[str, float], temperature: float = 1.0) -> dict[str, float]:
    peak = max(logits.values())
    exps = {k: math.exp((v - peak) / temperature) for k, v in logits.items()}
    total = sum(exps.values())
    return {k: v / total for k, v in exps.items()}


def argmax(probabilities: dict[str, float], order: list[str]) -> str:
    """Deterministic argmax: ties go to the earlier option in `order`."""
    return max(order, key=lambda k: (probabilities[k], -order.index(k)))
