"""The fitted head: a linear classifier over e5 embeddings, trained per catalog and refitted from labels.

Every option is a class: each tool and escalation option, and the none option. Its training
points are the catalog's own texts (the passage of name + when_to_use + keywords, each example,
each keyword phrase; the none option's description and a shipped bank of requests an assistant
answers itself) and every labelled turn (`[local] examples` sessions, cases an eval teaches, labels
made in the console). Catalog texts of a class share one unit of weight between them (a tool with
ten examples does not outweigh a tool with none). Labels are balanced and shrunk toward the
prior (`HeadSettings`, `FittedHead.class_terms`): a tool's labels together weigh label_weight *
count ** label_power, and with `shrink` the tool's catalog texts and labels share one fixed unit,
so neither a tool labelled often nor the none option (labelled most) tilts the least-squares fit
against the tools with few labels; that tilt made labels lower top-1 (issue 12).

The model is ridge regression onto one-hot class targets, solved in closed form: the prior's
statistics (X^T W X, X^T W Y) are kept, and a refit adds every label at its class's current weight
and does one (d+1) x (d+1) solve (tens of milliseconds at 2,000 labels), and a labelled turn can be
scored leave-one-out exactly (the statistics without it, its class's other labels reweighted) when
eval asks for it with `Question.holdout`. Its scores are features of the semantic backend's decision; the weights that
combine them with the other evidence are fitted across catalogs (benchmarks/fit_semantic.py) and
read from tui_router/decide/fitted-model.json.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError

CONSTANTS = Path(__file__).with_name("fitted-model.json")


@dataclass(frozen=True)
class HeadSettings:
    ridge: float = 0.1  # L2 penalty (embeddings are unit vectors, centred)
    label_weight: float = 1.0  # one labelled turn, against 1.0 for all catalog texts of its class
    none_weight: float = 1.0  # the whole none bank, against 1.0 for one tool's texts
    phrase_weight: float = 0.5  # a keyword phrase, relative to an example
    # a class's labels together weigh label_weight * count ** label_power: 1 lets a class labelled
    # often (the none option, a busy tool) swamp the others in a least-squares fit (issue 12: labels
    # lowered top-1); 0 gives every labelled class the same label mass
    label_power: float = 1.0
    # the same for the none option: one class for every kind of request no tool serves, so its
    # labels are not repeats of one concept and their mass may grow with their number
    none_label_power: float = 1.0
    shrink: float = 0.0  # 1: labels shrink toward the class's prior within a fixed class weight (class_terms)


@lru_cache(maxsize=1)
def fitted_constants() -> dict[str, Any]:
    """The constants benchmarks/fit_semantic.py wrote (the decision weights and the head's settings)."""
    try:
        return json.loads(CONSTANTS.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # a damaged install: one sentence, not a traceback
        raise ConfigError(f"the semantic backend's fitted constants ({CONSTANTS}) cannot be read ({exc}); reinstall tui-router") from None


def head_settings() -> HeadSettings:
    raw = fitted_constants().get("head", {})
    return HeadSettings(**{k: float(v) for k, v in raw.items() if k in HeadSettings.__dataclass_fields__})


class FittedHead:
    """Ridge classifier over embeddings with incremental labels and exact leave-one-out scores."""

    def __init__(self, classes: Sequence[str], dim: int, settings: HeadSettings | None = None, none: str | None = None) -> None:
        self.classes = list(classes)
        self.none = self.classes.index(none) if none in self.classes else -1
        self.position = {c: i for i, c in enumerate(self.classes)}
        self.settings = settings or HeadSettings()
        self.dim = dim
        self.mean = np.zeros(dim)
        self._prior_gram = np.zeros((dim + 1, dim + 1))
        self._prior_cross = np.zeros((dim + 1, len(self.classes)))
        # the prior plus the labels at their current weights (rebuilt by _solve when labels change)
        self._gram = self._prior_gram
        self._cross = self._prior_cross
        self._weights: np.ndarray | None = None
        self._prior_weights: np.ndarray | None = None
        # labelled points: key -> [(augmented vector, class)], and per class [(key, vector)]
        self._labelled: dict[str, list[tuple[np.ndarray, int]]] = {}
        self._by_class: dict[int, list[tuple[str, np.ndarray]]] = {}
        # the catalog texts' weighted rows and each class's row indexes (a shrunk class's prior is rescaled)
        self._prior_rows: tuple[np.ndarray, np.ndarray] = (np.zeros((0, dim + 1)), np.zeros(0))
        self._prior_index: dict[int, np.ndarray] = {}
        self.labels = 0

    def _augment(self, vectors: np.ndarray) -> np.ndarray:
        vectors = np.asarray(vectors, dtype=np.float64).reshape(-1, self.dim)
        return np.hstack([vectors - self.mean, np.ones((len(vectors), 1))])

    def class_terms(self, cls: int, count: int) -> tuple[float, float]:
        """(factor on the class's catalog texts, weight of each of its `count` labels). The labels
        together weigh L = label_weight * count ** power against 1 for the catalog texts (power 1:
        every label its own label_weight; power 0: a class's labels share one label_weight, so a
        class labelled often does not swamp the least-squares fit). With `shrink`, both are divided
        by 1 + L: every option keeps the same total weight whatever its labels (a labelled option
        is not favoured over an unlabelled one), and its labels pull it from its prior by L / (1 + L)."""
        if count <= 0:
            return 1.0, 0.0
        power = self.settings.none_label_power if cls == self.none else self.settings.label_power
        mass = self.settings.label_weight * count**power
        # the none option is a union of every kind of request no tool serves: its labels add to it
        share = 1.0 / (1.0 + mass) if self.settings.shrink and cls != self.none else 1.0
        return share, share * mass / count

    def fit_prior(self, points: Sequence[tuple[str, np.ndarray, float]], class_weight: dict[str, float] | None = None) -> None:
        """Train on catalog texts: (class, vector, relative weight). Each class's weights sum to 1,
        times its `class_weight` (the none bank's weight)."""
        known = [(self.position[c], v, w) for c, v, w in points if c in self.position and w > 0]
        if not known:
            return
        vectors = np.stack([v for _, v, _ in known]).astype(np.float64)
        self.mean = vectors.mean(axis=0)
        targets = np.asarray([c for c, _, _ in known])
        weights = np.asarray([w for _, _, w in known], dtype=np.float64)
        totals = np.bincount(targets, weights=weights, minlength=len(self.classes))
        weights = weights / totals[targets]
        for name, factor in (class_weight or {}).items():
            if name in self.position:
                weights[targets == self.position[name]] *= factor
        rows = self._augment(vectors)
        weighted = rows * weights[:, None]
        self._prior_gram = weighted.T @ rows
        self._prior_cross = np.zeros((self.dim + 1, len(self.classes)))
        np.add.at(self._prior_cross.T, targets, weighted)
        self._prior_rows = (rows, weights)
        order = np.argsort(targets, kind="stable")
        starts = np.searchsorted(targets[order], np.arange(len(self.classes) + 1))
        self._prior_index = {c: order[starts[c] : starts[c + 1]] for c in range(len(self.classes)) if starts[c] < starts[c + 1]}
        self._prior_weights = self._weights = None

    def add_label(self, label: str, key: str, vector: np.ndarray) -> None:
        i = self.position.get(label)
        if i is None:
            return
        row = self._augment(vector)[0]
        self._labelled.setdefault(key, []).append((row, i))
        self._by_class.setdefault(i, []).append((key, row))
        self.labels += 1
        self._weights = None

    def remove_label(self, label: str, key: str) -> None:
        """Forget the labelled turns of `label` under `key` (a label corrected in the console)."""
        i = self.position.get(label)
        entries = self._labelled.get(key, [])
        kept = [(row, cls) for row, cls in entries if cls != i]
        if len(kept) == len(entries):
            return
        self.labels -= len(entries) - len(kept)
        if kept:
            self._labelled[key] = kept
        else:
            self._labelled.pop(key, None)
        members = [(k, row) for k, row in self._by_class.get(i, []) if k != key] if i is not None else []
        if members:
            self._by_class[i] = members
        else:
            self._by_class.pop(i, None)
        self._weights = None

    def _class_delta(self, cls: int, rows: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """What `count` labels (`rows`) of a class add to the prior's statistics: their own
        weighted terms, and the rescaling of the class's catalog texts."""
        factor, weight = self.class_terms(cls, count)
        gram = weight * (rows.T @ rows) if count else np.zeros_like(self._prior_gram)
        cross = weight * rows.sum(axis=0) if count else np.zeros(self.dim + 1)
        if factor != 1.0 and cls in self._prior_index:
            rows_all, weights = self._prior_rows
            index = self._prior_index[cls]
            texts = rows_all[index]
            weighted = texts * weights[index, None]
            gram = gram + (factor - 1.0) * (weighted.T @ texts)
            cross = cross + (factor - 1.0) * weighted.sum(axis=0)
        return gram, cross

    def _solve(self) -> np.ndarray:
        """Rebuild the statistics with every label at its class's current weight, then one
        (d+1) x (d+1) solve: tens of milliseconds at 2,000 labels (benchmarks/bench_refit.py)."""
        if self._weights is None:
            self._gram, self._cross = self._prior_gram.copy(), self._prior_cross.copy()
            for cls, members in self._by_class.items():
                gram, cross = self._class_delta(cls, np.stack([row for _, row in members]), len(members))
                self._gram += gram
                self._cross[:, cls] += cross
            penalty = self.settings.ridge * np.eye(self.dim + 1)
            self._weights = np.linalg.solve(self._gram + penalty, self._cross)
        return self._weights

    def prior_scores(self, vector: np.ndarray) -> np.ndarray:
        """Per class, the score of the head trained on the catalog's texts alone (no label)."""
        if self._prior_weights is None:
            penalty = self.settings.ridge * np.eye(self.dim + 1)
            self._prior_weights = np.linalg.solve(self._prior_gram + penalty, self._prior_cross)
        return self._augment(vector)[0] @ self._prior_weights

    def scores(self, vector: np.ndarray, holdout: str | None = None) -> np.ndarray:
        """Per class, the regression score (near 1 for the class a message belongs to). With
        `holdout`, the labelled turns under that key are left out exactly (the other labels of
        their class take the weight they would have without them)."""
        weights = self._solve()
        q = self._augment(vector)[0]
        held = self._labelled.get(holdout, []) if holdout is not None else []
        if not held:
            return q @ weights
        gram = self._gram + self.settings.ridge * np.eye(self.dim + 1)
        cross = self._cross.copy()
        for cls in {cls for _, cls in held}:
            members = self._by_class[cls]
            rows = np.stack([row for _, row in members])
            out = np.stack([row for row, c in held if c == cls])
            kept = np.stack([row for key, row in members if key != holdout]) if len(out) < len(rows) else rows[:0]
            old_gram, old_cross = self._class_delta(cls, rows, len(rows))
            new_gram, new_cross = self._class_delta(cls, kept, len(kept))
            gram += new_gram - old_gram
            cross[:, cls] += new_cross - old_cross
        # the system is symmetric: solve for the query, not for every class
        return np.linalg.solve(gram, q) @ cross
