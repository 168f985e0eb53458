"""The names [semantic] encoders and reranker accept (standard library only: config reads them before
the console's first frame, and no model or numpy may load for that)."""

from __future__ import annotations

from collections.abc import Sequence

from .errors import did_you_mean

# The built-in encoders (tui_router/encoders.py) and rerankers; anything else must be a folder path.
ENCODER_NAMES = ("e5", "bge-small-en", "use-multilingual")
RERANKER_NAMES = ("ms-marco-minilm",)
DEFAULT_ENCODERS = ("e5",)


def is_folder_spec(spec: str) -> bool:
    """A name in [semantic] encoders / reranker that is a path (a local model folder), not a built-in name."""
    return "/" in spec or "\\" in spec or spec.startswith((".", "~"))


def spec_problem(spec: str, names: Sequence[str], what: str) -> str:
    """'' for a built-in name or a path; else the one sentence config validation says."""
    if spec in names or is_folder_spec(spec):
        return ""
    return (
        f"unknown {what} {spec!r}{did_you_mean(spec, names)}; the {what}s: {', '.join(names)}, "
        "or a local model folder named by a path with a '/' (e.g. './models/my-onnx-export')"
    )
