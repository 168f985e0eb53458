"""Decision backends: one contract (decide/base.py), one registry of names, one module each.

The registry is the one list of backend names: the CLI's --backend choices, config validation,
the console's palette and `auto` resolution all read it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .base import Answer, CalibrationParams, DecisionBackend, Question

if TYPE_CHECKING:
    from ..catalog import Catalog
    from ..config import Config
    from ..retrieve import Retriever

__all__ = [
    "Answer", "BACKENDS", "BACKEND_NAMES", "REGISTRY", "BackendSpec", "CalibrationParams", "DecisionBackend",
    "Question", "backend_class", "make_backend", "resolve_backend",
]


@dataclass(frozen=True)
class BackendSpec:
    """Where a backend lives; imported only when used, so start-up pays only for what it routes with."""

    name: str
    module: str  # relative to this package
    cls: str
    summary: str


REGISTRY: dict[str, BackendSpec] = {
    spec.name: spec
    for spec in (
        BackendSpec("local", ".local", "LocalBackend", "lexical evidence, offline"),
        BackendSpec("bm25", ".bm25", "BM25Backend", "bare BM25 baseline, offline"),
        BackendSpec("systemone", ".systemone", "SystemOneBackend", "a System One server over HTTP"),
        BackendSpec("semantic", ".semantic", "SemanticBackend", "e5 embeddings + lexical evidence (extra `semantic`)"),
    )
}
BACKEND_NAMES: tuple[str, ...] = tuple(REGISTRY)  # concrete backends, in palette order
BACKENDS: tuple[str, ...] = ("auto", *BACKEND_NAMES)  # what --backend and `backend =` accept


def resolve_backend(name: str) -> str:
    """`auto` is the semantic backend when its extra is installed, the local one otherwise."""
    if name != "auto":
        return name
    from ..embed import semantic_available

    return "semantic" if semantic_available() else "local"


def backend_class(name: str) -> type[DecisionBackend]:
    """The class registered under `name` (after `auto` resolution); ConfigError for an unknown name."""
    spec = REGISTRY.get(resolve_backend(name))
    if spec is None:
        from ..errors import ConfigError, did_you_mean

        raise ConfigError(f"unknown backend '{name}'{did_you_mean(name, BACKENDS)}; use one of {', '.join(BACKENDS)}")
    return getattr(importlib.import_module(spec.module, __name__), spec.cls)


def make_backend(name: str, catalog: Catalog, config: Config, retriever: Retriever | None = None) -> DecisionBackend:
    """Build a backend by name from the config."""
    return backend_class(name).from_config(catalog, config, retriever=retriever)
