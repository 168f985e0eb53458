"""The logistic label term: a multinomial logistic regression over e5 message vectors (issue 12, item 2).

Trained on the catalog's own texts (the fitted head's prior points: passages, examples, keyword
phrases, the none bank; a class's texts share one unit of weight) plus every labelled turn (weight
1), classes balanced, C = LOGISTIC_C (benchmarks/metatool_ceiling.py measured it beside the other
learners). The semantic backend reads its log-probability of each offered option as a label term,
so it exists only once labels do: catalog-only routing never fits or reads it.

scikit-learn is imported when a fit runs (not a dependency of the `semantic` extra while the term
weighs 0: `pip install -e '.[bench]'`); without it the term is absent.

Cross-fitting: a labelled turn cannot be scored by a model that saw it (eval's leave-one-out,
`Question.holdout`), and refitting per turn costs seconds each. So the labels are split into
LOGISTIC_FOLDS folds by a hash of their key (the normalised message: duplicates share a fold), and
a held-out turn is scored by the model fitted without its fold. Deterministic: the folds, the
solver (lbfgs from zero) and the data fix the result.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

LOGISTIC_C = 100.0  # inverse L2 strength (sklearn's C); C = 10 lost none recall in the ceiling study
LOGISTIC_FOLDS = 5
LOGISTIC_MAX_ITER = 300
LOG_FLOOR = -30.0  # log-probability of a class the model never saw (and the clip of every term)


def available() -> bool:
    """Whether scikit-learn can be imported: without it the term is absent."""
    try:
        import sklearn.linear_model  # noqa: F401
    except ImportError:
        return False
    return True


def fold_of(key: str) -> int:
    """A label's cross-fitting fold: a stable hash of its key, so the same turn always lands in the same fold."""
    return int(hashlib.sha1(key.encode("utf-8")).hexdigest()[:8], 16) % LOGISTIC_FOLDS


@dataclass(frozen=True)
class LogisticModel:
    """A fitted model's parameters over all classes (a class without training points scores LOG_FLOOR)."""

    coef: np.ndarray  # (n_present, dim)
    intercept: np.ndarray  # (n_present,)
    present: np.ndarray  # class indexes of the rows
    n_classes: int

    def log_proba(self, vector: np.ndarray) -> np.ndarray:
        out = np.full(self.n_classes, LOG_FLOOR)
        if len(self.present) == 1:
            out[self.present] = 0.0
            return out
        z = self.coef @ np.asarray(vector, dtype=np.float64) + self.intercept
        z = z - z.max()
        out[self.present] = np.maximum(z - np.log(np.exp(z).sum()), LOG_FLOOR)
        return out


def fit(
    prior_x: np.ndarray,
    prior_y: np.ndarray,
    prior_w: np.ndarray,
    label_x: np.ndarray,
    label_y: np.ndarray,
    n_classes: int,
    *,
    warm: LogisticModel | None = None,
    max_iter: int = LOGISTIC_MAX_ITER,
) -> LogisticModel:
    """Fit on the catalog's points (weights as given) plus labels (weight 1), classes balanced.
    `warm`: start lbfgs from an earlier model over the same classes (the console's refits)."""
    from sklearn.linear_model import LogisticRegression

    x = np.vstack([prior_x, label_x]).astype(np.float64)
    y = np.concatenate([prior_y, label_y]).astype(np.int64)
    w = np.concatenate([prior_w, np.ones(len(label_y))])
    present = np.unique(y)
    if len(present) < 2:
        return LogisticModel(np.zeros((len(present), x.shape[1])), np.zeros(len(present)), present, n_classes)
    model = LogisticRegression(C=LOGISTIC_C, class_weight="balanced", max_iter=max_iter, warm_start=warm is not None)
    if warm is not None and np.array_equal(warm.present, present):
        model.coef_ = warm.coef.copy()
        model.intercept_ = warm.intercept.copy()
        model.classes_ = present
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # max_iter bounds the time; the fit is used as it stands
        model.fit(x, y, sample_weight=w)
    return LogisticModel(model.coef_.copy(), model.intercept_.copy(), np.asarray(model.classes_), n_classes)


def option_terms(log_proba: np.ndarray, tools: Sequence[int | None], none: int | None) -> tuple[np.ndarray, float]:
    """(per offered tool: its log-probability minus the best offered tool's, clipped; the none
    option's log-odds against the offered tools together, clipped). Index None: a class the model
    does not know (LOG_FLOOR)."""
    tool_lp = np.asarray([log_proba[i] if i is not None else LOG_FLOOR for i in tools], dtype=np.float64)
    if not len(tool_lp):
        return tool_lp, 0.0
    peak = float(tool_lp.max())
    pooled = peak + float(np.log(np.exp(tool_lp - peak).sum()))
    none_lp = float(log_proba[none]) if none is not None else LOG_FLOOR
    return np.maximum(tool_lp - peak, LOG_FLOOR), float(np.clip(none_lp - pooled, LOG_FLOOR, -LOG_FLOOR))
