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

import math
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..catalog import Catalog, Tool
from ..confidence import reference_confidence
from ..config import Config, example_files
from ..injection import injection_shaped
from ..lexicon import analyze, concept_sources, llm_native_cues
from ..retrieve import Retriever
from ..textnorm import ROUTED_CHARS, STOPWORDS, fold, tokenize
from .base import Answer, CalibrationParams, DecisionBackend, Question, argmax, softmax

MODEL_NAME = "local-lexical-1"

# Field weights: how much a word in this field says about the option.
W_ID = 1.0
W_KEYWORD = 1.3
W_TITLE = 0.8
W_WHEN = 0.8
W_EXAMPLE = 0.45
W_CATEGORY = 0.4
W_EXAMPLE_SINGLETON = 0.2  # a word seen in one example only is usually an argument (a name, a date)
W_PHRASE_PART = 0.6  # a word of a multi-word keyword ("doesn't work") is not the keyword
CONCEPT_FACTOR = 0.6  # a synonym match says less than the word itself

DEFAULT_TEMPERATURE = 0.45
DEFAULT_NONE_MARGIN = 0.7
EXEMPLAR_WEIGHT = 1.6
INJECTION_BOOST = 3.0
SUGGEST_MIN_SIMILARITY = 0.3
SUGGEST_MAX = 3
LLM_CUE_WEIGHT = 1.0
COVERAGE_FLOOR = 0.35  # how much of an option's evidence survives when it explains little of the message
TOOL_TEMPERATURE_RATIO = 0.3
NONE_TEMPERATURE_RATIO = 0.5

@dataclass
class _Profile:
    weights: dict[str, float] = field(default_factory=dict)

    def add(self, tokens: list[str], weight: float) -> None:
        for token in tokens:
            w = weight * CONCEPT_FACTOR if token.startswith("~") else weight
            if w > self.weights.get(token, 0.0):
                self.weights[token] = w


def _profile(tool: Tool) -> _Profile:
    profile = _Profile()
    profile.add(analyze(tool.id), W_ID)
    for keyword in tool.keywords:
        tokens = analyze(keyword)
        words_in_keyword = len([t for t in tokens if not t.startswith("~")])
        profile.add(tokens, W_KEYWORD if words_in_keyword <= 1 else W_KEYWORD * W_PHRASE_PART)
    if tool.title:
        profile.add(analyze(tool.title), W_TITLE)
    profile.add(analyze(tool.when_to_use), W_WHEN)
    seen: Counter[str] = Counter()
    for example in tool.examples:
        seen.update(set(analyze(example)))
    profile.add([t for t, c in seen.items() if c > 1], W_EXAMPLE)
    profile.add([t for t, c in seen.items() if c == 1], W_EXAMPLE_SINGLETON)
    if tool.category:
        profile.add(analyze(tool.category), W_CATEGORY)
    return profile


@dataclass
class Exemplar:
    label: str
    key: str  # normalised message, to leave a case out of its own evidence
    tokens: frozenset[str]


@dataclass
class _ExemplarIndex:
    """Postings (token -> exemplar positions), idf mass and label code per exemplar, kept in step
    with the exemplar list; numpy views of them are rebuilt after a change."""

    postings: dict[str, list[int]] = field(default_factory=dict)
    mass: list[float] = field(default_factory=list)
    by_key: dict[str, list[int]] = field(default_factory=dict)
    label_codes: list[int] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    views: tuple[dict[str, np.ndarray], np.ndarray, np.ndarray] | None = None

    def sync(self, exemplars: list[Exemplar], idf: Callable[[str], float]) -> None:
        if len(self.mass) > len(exemplars):  # the list was replaced or shortened: start again
            self.postings.clear()
            self.mass.clear()
            self.by_key.clear()
            self.label_codes.clear()
            self.labels.clear()
        if len(self.mass) == len(exemplars):
            return
        code_of = {label: code for code, label in enumerate(self.labels)}
        for i in range(len(self.mass), len(exemplars)):
            ex = exemplars[i]
            for token in ex.tokens:
                self.postings.setdefault(token, []).append(i)
            self.mass.append(sum(idf(t) for t in ex.tokens))
            self.by_key.setdefault(ex.key, []).append(i)
            if ex.label not in code_of:
                code_of[ex.label] = len(self.labels)
                self.labels.append(ex.label)
            self.label_codes.append(code_of[ex.label])
        self.views = None

    def arrays(self) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        if self.views is None:
            self.views = (
                {t: np.asarray(p, dtype=np.intp) for t, p in self.postings.items()},
                np.asarray(self.mass, dtype=float),
                np.asarray(self.label_codes, dtype=np.intp),
            )
        return self.views


_WORDS = re.compile(r"\w+")


def normalise_message(message: str) -> str:
    """The key under which a labelled turn is held out of its own score: folded words only, so a
    retyped "Text Jordan the deploy is done!" is the same case as "text jordan the deploy is done"
    (leave-one-out must not learn a case from its own copy). No word at all: the folded text."""
    folded = fold(message)
    return " ".join(_WORDS.findall(folded)) or " ".join(folded.split())


class LocalBackend(DecisionBackend):
    name = "local"
    model = MODEL_NAME
    learns_from_examples = True
    supplies_candidates = True  # tools whose labelled exemplars resemble the message

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
        self._vocabulary = frozenset(df)
        self.exemplars: list[Exemplar] = []
        self._exemplar_idf: dict[str, float] = {}
        self._exemplar_index = _ExemplarIndex()
        for label, message in exemplars or []:
            self.add_exemplar(label, message)

    # -- learning from labelled turns ---------------------------------------------------------
    def add_exemplar(self, label: str, message: str) -> None:
        if label not in self.catalog and label != self.catalog.none_option:
            return
        tokens = frozenset(analyze(message))
        if tokens:
            self.exemplars.append(Exemplar(label, normalise_message(message), tokens))

    def forget_exemplar(self, label: str, message: str) -> None:
        """Drop the exemplars of `label` with this message (a label corrected in the console)."""
        key = normalise_message(message)
        kept = [e for e in self.exemplars if not (e.label == label and e.key == key)]
        if len(kept) != len(self.exemplars):
            self.exemplars = kept
            self._exemplar_index = _ExemplarIndex()  # rebuilt from the list on the next use

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

    def _terms(self, message: str) -> tuple[list[str], dict[str, set[str]]]:
        """Distinct words (typos corrected when a retriever is shared) and concept -> trigger words,
        of the message's first ROUTED_CHARS characters (textnorm says why)."""
        message = message[:ROUTED_CHARS]
        if self.retriever is not None:
            tokens = self.retriever.message_tokens(message)
        else:
            tokens = tokenize(message, keep_stopwords=True)
        words = list(dict.fromkeys(t for t in tokens if t not in STOPWORDS))
        return words, concept_sources(message, tokens)

    def assistant_cues(self, message: str) -> int:
        """"An assistant answers this itself" cue words ("joke", "poem") the catalog does not use, at most 2."""
        return min(llm_native_cues(message[:ROUTED_CHARS], self._vocabulary), 2)

    def evidence(self, message: str, options: list[str], holdout: str | None = None) -> dict[str, float]:
        """Evidence (in rare-word units) for each option id; the none option included."""
        words, sources = self._terms(message)
        terms = words + list(sources)
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
                profile.add(analyze(option), W_ID)
            weights = profile.weights
            matched = sum(self.idf.get(t, 0.0) * weights[t] for t in words if t in weights)
            # a synonym adds only what the words that triggered it did not already earn
            for concept, trigger in sources.items():
                if concept in weights:
                    literal = sum(self.idf.get(w, 0.0) * weights[w] for w in trigger if w in weights)
                    matched += max(0.0, self.idf.get(concept, 0.0) * weights[concept] - literal)
            explained = matched / total_mass
            # A long message with one accidental match is weak evidence: discount by how much of the
            # message's catalog vocabulary this option explains.
            share = matched / known_mass if known_mass else 0.0
            score = matched * (COVERAGE_FLOOR + (1.0 - COVERAGE_FLOOR) * min(1.0, share + explained))
            evidence[option] = score + EXEMPLAR_WEIGHT * exemplar.get(option, 0.0)
        none_score = self.none_margin + EXEMPLAR_WEIGHT * exemplar.get(none_option, 0.0)
        if injection_shaped(message):
            none_score += INJECTION_BOOST
        none_score += LLM_CUE_WEIGHT * self.assistant_cues(message)
        evidence[none_option] = none_score
        return evidence

    def suggest_candidates(self, message: str, holdout: str | None = None) -> list[str]:
        """Tools whose labelled exemplars resemble the message: retrieval recall from learning."""
        if not self.exemplars:
            return []
        words, sources = self._terms(message)
        scores = self._exemplar_scores(words + list(sources), holdout)
        ranked = sorted(
            (label for label, sim in scores.items() if sim >= SUGGEST_MIN_SIMILARITY and label in self.catalog),
            key=lambda label: -scores[label],
        )
        return ranked[:SUGGEST_MAX]

    def _exemplar_scores(self, terms: list[str], holdout: str | None) -> dict[str, float]:
        if not self.exemplars or not terms:
            return {}
        skip = normalise_message(holdout) if holdout else None
        query = set(terms)
        qmass = sum(self._word_idf(t) for t in query)
        index = self._exemplar_index
        index.sync(self.exemplars, self._word_idf)
        postings, mass, codes = index.arrays()
        # Only exemplars sharing a word with the query can score: sum the query words' idf over
        # their postings (an inverted index, in numpy), so leave-one-out over thousands of labelled
        # turns stays fast. Same sums, in the same order, as walking every exemplar.
        hits = [(postings[t], self._word_idf(t)) for t in query if t in postings]
        if not hits:
            return {}
        positions = np.concatenate([p for p, _ in hits])
        weights = np.concatenate([np.full(len(p), w) for p, w in hits])
        shared = np.bincount(positions, weights=weights, minlength=len(mass))
        if skip is not None:
            shared[index.by_key.get(skip, [])] = 0.0
        scoring = np.flatnonzero(shared)
        sims = shared[scoring] / np.sqrt(qmass * mass[scoring])  # idf-weighted cosine of word sets
        best = np.zeros(len(index.labels))
        np.maximum.at(best, codes[scoring], sims)
        return {label: value for label, value in zip(index.labels, best.tolist(), strict=True) if value > 0.0}

    def calibration_params(self) -> CalibrationParams:
        # calibrate refits temperature and none margin over evidence() and distribution() below
        return CalibrationParams(
            temperature=self.temperature, none_margin=self.none_margin, kind="pooled",
            none_ratio=NONE_TEMPERATURE_RATIO, tool_ratio=TOOL_TEMPERATURE_RATIO,
        )

    def distribution(self, evidence: dict[str, float], options: list[str], none_option: str) -> dict[str, float]:
        """Two steps: is any tool wanted (pooled tool evidence vs the none evidence), then which.

        Pooling matters: five e-mail tools that each match "email" a little are together strong
        evidence that an e-mail tool is wanted, even when none of them alone beats the none level.
        """
        tools = [o for o in options if o != none_option]
        if not tools:
            return {none_option: 1.0}
        t = self.temperature
        peak = max(evidence[o] for o in tools)
        pooled = peak + t * math.log(sum(math.exp((evidence[o] - peak) / t) for o in tools))
        gap = (evidence[none_option] - pooled) / (t * NONE_TEMPERATURE_RATIO)
        p_none = 1.0 / (1.0 + math.exp(-max(min(gap, 50.0), -50.0)))
        within = softmax({o: evidence[o] for o in tools}, t * TOOL_TEMPERATURE_RATIO)
        probabilities = {o: (1.0 - p_none) * within[o] for o in tools}
        probabilities[none_option] = p_none
        return {o: probabilities[o] for o in options}

    def decide(self, question: Question) -> Answer:
        start = time.perf_counter()
        options = list(question.options)
        evidence = self.evidence(question.message, options, question.holdout)
        if question.none_option not in evidence:
            evidence[question.none_option] = self.none_margin
        for option in options:
            evidence.setdefault(option, 0.0)
        probabilities = self.distribution(evidence, options, question.none_option)
        choice = argmax(probabilities, options)
        reported = reference_confidence(probabilities)
        return Answer(
            choice=choice,
            probabilities=probabilities,
            reported_confidence=reported,
            model=self.model,
            latency_ms=(time.perf_counter() - start) * 1000,
        )


def load_exemplars(patterns: list[str], base_dir: Path) -> list[tuple[str, str]]:
    """(label, message) pairs from every labelled turn in the session files matching the globs."""
    from ..errors import SessionError
    from ..session import load_session, looks_like_catalog_file

    pairs: list[tuple[str, str]] = []
    seen: set[Path] = set()
    for pattern in patterns:
        for name in example_files(pattern, base_dir)[1]:
            path = name.resolve()
            if path in seen or looks_like_catalog_file(path):  # a glob over cases may match their catalog
                continue
            seen.add(path)
            try:
                session = load_session(path)
            except SessionError as exc:
                raise SessionError(
                    exc.message, [*exc.lines(), f"{path} is a file [local] examples names ('{pattern}'); fix it or leave it out of examples"]
                ) from None
            pairs.extend((t.label, t.message) for t in session.turns if t.label)
    return pairs
