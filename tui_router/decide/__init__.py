"""Decision backends: one interface (Question -> Answer), several implementations."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Answer, DecisionBackend, Question

if TYPE_CHECKING:
    from ..catalog import Catalog
    from ..config import Config
    from ..retrieve import Retriever

__all__ = ["Answer", "DecisionBackend", "Question", "make_backend", "resolve_backend", "BACKENDS"]

BACKENDS = ("auto", "local", "bm25", "systemone", "semantic")


def resolve_backend(name: str) -> str:
    """`auto` is the semantic backend when its extra is installed, the local one otherwise."""
    if name != "auto":
        return name
    from ..embed import semantic_available

    return "semantic" if semantic_available() else "local"


def make_backend(name: str, catalog: Catalog, config: Config, retriever: Retriever | None = None) -> DecisionBackend:
    """Build a backend by name; imports stay lazy so start-up pays only for what is used."""
    name = resolve_backend(name)
    if name == "local":
        from .local import LocalBackend

        return LocalBackend.from_config(catalog, config, retriever=retriever)
    if name == "bm25":
        from .bm25 import BM25Backend

        return BM25Backend(catalog, retriever=retriever)
    if name == "systemone":
        from .systemone import SystemOneBackend  # type: ignore[import-not-found]

        return SystemOneBackend.from_config(catalog, config)
    if name == "semantic":
        from .semantic import SemanticBackend  # type: ignore[import-not-found]

        return SemanticBackend.from_config(catalog, config, retriever=retriever)
    from ..errors import ConfigError, did_you_mean

    raise ConfigError(f"unknown backend '{name}'{did_you_mean(name, BACKENDS)}; use one of {', '.join(BACKENDS)}")
