"""The fitted head: a linear classifier over e5 embeddings, trained per catalog and refitted from labels.

Every option is a class: each tool and escalation option, and the none option. Its training
points are the catalog's own texts (the passage of name + when_to_use + keywords, each example,
each keyword phrase; the none option's description and a shipped bank of requests an assistant
answers itself) and every labelled turn (`[local] examples` sessions, cases an eval teaches, labels
made in the console). Catalog texts of a class share one unit of weight between them (a tool with
ten examples does not outweigh a tool with none); each labelled turn weighs `label_weight` on its
own, so labels soon dominate the prior.

The model is ridge regression onto one-hot class targets, solved in closed form: the sufficient
statistics (X^T W X, X^T W Y) are kept, so a new label is a rank-one update and a refit is one
(d+1) x (d+1) solve (a few milliseconds at d = 384 whatever the number of labels), and a labelled
turn can be scored leave-one-out exactly (Sherman-Morrison) when eval asks for it with
`Question.holdout`. Its scores are features of the semantic backend's decision; the weights that
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

    def __init__(self, classes: Sequence[str], dim: int, settings: HeadSettings | None = None) -> None:
        self.classes = list(classes)
        self.position = {c: i for i, c in enumerate(self.classes)}
        self.settings = settings or HeadSettings()
        self.dim = dim
        self.mean = np.zeros(dim)
        self._gram = np.zeros((dim + 1, dim + 1))
        self._cross = np.zeros((dim + 1, len(self.classes)))
        self._inverse: np.ndarray | None = None
        self._weights: np.ndarray | None = None
        # labelled points, for leave-one-out: key -> [(augmented vector, class, weight)]
        self._labelled: dict[str, list[tuple[np.ndarray, int, float]]] = {}
        self.labels = 0

    def _augment(self, vectors: np.ndarray) -> np.ndarray:
        vectors = np.asarray(vectors, dtype=np.float64).reshape(-1, self.dim)
        return np.hstack([vectors - self.mean, np.ones((len(vectors), 1))])

    def _accumulate(self, rows: np.ndarray, targets: np.ndarray, weights: np.ndarray) -> None:
        weighted = rows * weights[:, None]
        self._gram += weighted.T @ rows
        np.add.at(self._cross.T, targets, weighted)
        self._inverse = self._weights = None

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
        self._gram[:] = 0.0
        self._cross[:] = 0.0
        self._accumulate(self._augment(vectors), targets, weights)

    def add_label(self, label: str, key: str, vector: np.ndarray) -> None:
        i = self.position.get(label)
        if i is None:
            return
        row = self._augment(vector)
        weight = self.settings.label_weight
        self._accumulate(row, np.asarray([i]), np.asarray([weight]))
        self._labelled.setdefault(key, []).append((row[0], i, weight))
        self.labels += 1

    def remove_label(self, label: str, key: str) -> None:
        """Forget the labelled turns of `label` under `key` (a label corrected in the console)."""
        i = self.position.get(label)
        kept = []
        for row, cls, weight in self._labelled.get(key, []):
            if cls == i:
                self._accumulate(row.reshape(1, -1), np.asarray([cls]), np.asarray([-weight]))
                self.labels -= 1
            else:
                kept.append((row, cls, weight))
        if kept:
            self._labelled[key] = kept
        else:
            self._labelled.pop(key, None)

    def _solve(self) -> tuple[np.ndarray, np.ndarray]:
        if self._weights is None or self._inverse is None:
            penalty = self.settings.ridge * np.eye(self.dim + 1)
            self._inverse = np.linalg.inv(self._gram + penalty)
            self._weights = self._inverse @ self._cross
        return self._inverse, self._weights

    def scores(self, vector: np.ndarray, holdout: str | None = None) -> np.ndarray:
        """Per class, the regression score (near 1 for the class a message belongs to). With
        `holdout`, the labelled turns under that key are left out exactly."""
        inverse, weights = self._solve()
        q = self._augment(vector)[0]
        held = self._labelled.get(holdout, []) if holdout is not None else []
        if not held:
            return q @ weights
        if len(held) == 1:  # Sherman-Morrison: remove one weighted point (x, e_cls)
            row, cls, weight = held[0]
            u = inverse @ row
            denom = 1.0 - weight * float(row @ u)
            if denom > 1e-9:
                c = weight / denom
                qu = float(q @ u)
                out = q @ weights + c * qu * (u @ self._cross)
                out[cls] -= weight * (qu + c * qu * float(u @ row))
                return out
        gram = self._gram + self.settings.ridge * np.eye(self.dim + 1)
        cross = self._cross.copy()
        for row, cls, weight in held:
            gram -= weight * np.outer(row, row)
            cross[:, cls] -= weight * row
        return q @ np.linalg.solve(gram, cross)
