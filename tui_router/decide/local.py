"""The embedded `local` decision model: lexical evidence turned into a calibrated distribution.

No network, deterministic, milliseconds per turn. Method (also in the README):

1. Every option has a weighted bag of words: id words and keywords count most, then the title and
   when_to_use, then the catalog examples and the category; labelled turns from session files add
   their messages as exemplars of their label.
2. Evidence for an option is the sum, over the message's distinct words, of the word's rarity
   (idf over the catalog, in units of the rarest word) times the strongest field it appears in,
   plus the best exemplar similarity. Unknown words (names, ids, contents) neither help nor hurt,
   but a message whose words the option leaves mostly unexplained is discounted.
3. The none option competes with a fixed evidence level (`none_margin`), raised by labelled
   none-exemplars and by prompt-injection phrasing ("ignore previous instructions", ...).
4. A softmax with `temperature` turns the evidence into probabilities over exactly the offered
   options. `calibrate` fits temperature and none margin on labelled turns.
"""

from __future__ import annotations

import glob
import math
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..catalog import Catalog, Tool
from ..config import Config
from ..retrieve import Retriever
from ..textnorm import fold, tokenize
from .base import Answer, DecisionBackend, Question, argmax, softmax

MODEL_NAME = "local-lexical-1"

# Field weights: how much a word in this field says about the option.
W_ID = 1.0
W_KEYWORD = 1.0
W_TITLE = 0.8
W_WHEN = 0.8
W_EXAMPLE = 0.45
W_CATEGORY = 0.4

DEFAULT_TEMPERATURE = 0.3
DEFAULT_NONE_MARGIN = 0.75
EXEMPLAR_WEIGHT = 1.6
INJECTION_BOOST = 3.0

_INJECTION = re.compile(
    r"ignore (?:all |any |the |your )?(?:previous|prior|above|earlier|preceding)"
    r"|disregard (?:all |any |the |your )?(?:previous|prior|above|instructions|rules)"
    r"|forget (?:all |your )?(?:previous |prior )?instructions"
    r"|you are now (?:in )?(?:a |an )?\w+"
    r"|(?:developer|admin|god|debug|sudo) mode"
    r"|system prompt|jailbreak|\bDAN\b|override (?:your|the|all) (?:rules|instructions|safety)"
    r"|new instructions:|bypass (?:the )?(?:allowlist|permission|safety|checks)",
    re.IGNORECASE,
)


def injection_shaped(message: str) -> bool:
    """Text that tries to instruct the router instead of asking for something."""
    return bool(_INJECTION.search(fold(message)))


@dataclass
class _Profile:
    weights: dict[str, float] = field(default_factory=dict)

    def add(self, tokens: list[str], weight: float) -> None:
        for token in tokens:
            if weight > self.weights.get(token, 0.0):
                self.weights[token] = weight


def _profile(tool: Tool) -> _Profile:
    profile = _Profile()
    profile.add(tokenize(tool.id), W_ID)
    for keyword in tool.keywords:
        profile.add(tokenize(keyword), W_KEYWORD)
    if tool.title:
        profile.add(tokenize(tool.title), W_TITLE)
    profile.add(tokenize(tool.when_to_use), W_WHEN)
    for example in tool.examples:
        profile.add(tokenize(example), W_EXAMPLE)
    if tool.category:
        profile.add(tokenize(tool.category), W_CATEGORY)
    return profile


@dataclass
class Exemplar:
    label: str
    key: str  # normalised message, to leave a case out of its own evidence
    tokens: frozenset[str]


def normalise_message(message: str) -> str:
    return " ".join(fold(message).split())


class LocalBackend(DecisionBackend):
    name = "local"
    model = MODEL_NAME

    def __init__(
        self,
        catalog: Catalog,
        *,
        temperature: float | None = None,
        none_margin: float | None = None,
        exemplars: list[tuple[str, str]] | None = None,
        retriever: Retriever | None = None,
    ) -> None:
        self.catalog = catalog
        self.temperature = temperature or DEFAULT_TEMPERATURE
        self.none_margin = DEFAULT_NONE_MARGIN if none_margin is None else none_margin
        self.retriever = retriever
        self.profiles = {tool.id: _profile(tool) for tool in catalog.tools}
        df: Counter[str] = Counter()
        for profile in self.profiles.values():
            df.update(profile.weights.keys())
        n = max(len(self.profiles), 1)
        self._idf_scale = math.log(n + 1.0)
        # idf in units of the rarest possible word, so evidence means "rare matches" on any catalog size
        self.idf = {t: max(math.log((n + 1.0) / (c + 0.5)), 0.05) / self._idf_scale for t, c in df.items()}
        self.exemplars: list[Exemplar] = []
        self._exemplar_idf: dict[str, float] = {}
        for label, message in exemplars or []:
            self.add_exemplar(label, message)

    # -- learning from labelled turns ---------------------------------------------------------
    def add_exemplar(self, label: str, message: str) -> None:
        if label not in self.catalog and label != self.catalog.none_option:
            return
        tokens = frozenset(tokenize(message))
        if tokens:
            self.exemplars.append(Exemplar(label, normalise_message(message), tokens))

    @classmethod
    def from_config(cls, catalog: Catalog, config: Config, retriever: Retriever | None = None) -> LocalBackend:
        pairs = load_exemplars(config.local.examples, config.base_dir)
        return cls(
            catalog,
            temperature=config.local.temperature,
            none_margin=config.local.none_margin,
            exemplars=pairs,
            retriever=retriever,
        )

    # -- scoring ----------------------------------------------------------------------------
    def _word_idf(self, token: str) -> float:
        return self.idf.get(token, 1.0)

    def _terms(self, message: str) -> list[str]:
        if self.retriever is not None:
            return list(dict.fromkeys(self.retriever.query_terms(message)))
        return list(dict.fromkeys(tokenize(message)))

    def evidence(self, message: str, options: list[str], holdout: str | None = None) -> dict[str, float]:
        """Evidence (in rare-word units) for each option id; the none option included."""
        terms = self._terms(message)
        none_option = self.catalog.none_option
        total_mass = sum(self._word_idf(t) for t in terms) or 1.0
        known_mass = sum(self.idf.get(t, 0.0) for t in terms)
        exemplar = self._exemplar_scores(terms, holdout)
        evidence: dict[str, float] = {}
        for option in options:
            if option == none_option:
                continue
            profile = self.profiles.get(option)
            if profile is None:
                profile = _Profile()
                profile.add(tokenize(option), W_ID)
            matched = sum(self.idf.get(t, 0.0) * profile.weights[t] for t in terms if t in profile.weights)
            explained = matched / total_mass
            # A long message with one accidental match is weak evidence: discount by how much of the
            # message's catalog vocabulary this option explains.
            share = matched / known_mass if known_mass else 0.0
            score = matched * (0.55 + 0.45 * min(1.0, share + explained))
            evidence[option] = score + EXEMPLAR_WEIGHT * exemplar.get(option, 0.0)
        none_score = self.none_margin + EXEMPLAR_WEIGHT * exemplar.get(none_option, 0.0)
        if injection_shaped(message):
            none_score += INJECTION_BOOST
        evidence[none_option] = none_score
        return evidence

    def _exemplar_scores(self, terms: list[str], holdout: str | None) -> dict[str, float]:
        if not self.exemplars or not terms:
            return {}
        skip = normalise_message(holdout) if holdout else None
        query = set(terms)
        qmass = sum(self._word_idf(t) for t in query)
        best: dict[str, float] = {}
        for ex in self.exemplars:
            if ex.key == skip:
                continue
            common = query & ex.tokens
            if not common:
                continue
            inter = sum(self._word_idf(t) for t in common)
            emass = sum(self._word_idf(t) for t in ex.tokens)
            sim = inter / math.sqrt(qmass * emass)  # idf-weighted cosine of word sets
            if sim > best.get(ex.label, 0.0):
                best[ex.label] = sim
        return best

    def decide(self, question: Question) -> Answer:
        start = time.perf_counter()
        options = list(question.options)
        evidence = self.evidence(question.message, options, question.holdout)
        if question.none_option not in evidence:
            evidence[question.none_option] = self.none_margin
        logits = {o: evidence.get(o, 0.0) for o in options}
        probabilities = softmax(logits, self.temperature)
        choice = argmax(probabilities, options)
        top = probabilities[choice]
        n = len(options)
        reported = max(0.0, (top - 1 / n) / (1 - 1 / n)) if n > 1 else 1.0
        return Answer(
            choice=choice,
            probabilities=probabilities,
            reported_confidence=reported,
            model=self.model,
            latency_ms=(time.perf_counter() - start) * 1000,
        )


def load_exemplars(patterns: list[str], base_dir: Path) -> list[tuple[str, str]]:
    """(label, message) pairs from every labelled turn in the session files matching the globs."""
    from ..session import load_session

    pairs: list[tuple[str, str]] = []
    seen: set[Path] = set()
    for pattern in patterns:
        full = pattern if Path(pattern).is_absolute() else str(base_dir / pattern)
        for name in sorted(glob.glob(full, recursive=True)):
            path = Path(name).resolve()
            if path in seen or not path.is_file():
                continue
            seen.add(path)
            session = load_session(path)
            pairs.extend((t.label, t.message) for t in session.turns if t.label)
    return pairs
