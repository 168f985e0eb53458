"""Write the embeddings of the bundled catalogs into embeddings/ (shipped in the wheel).

    python scripts/bundle_embeddings.py

The semantic backend reads them when the user's cache has no copy, so a first start on a bundled
catalog embeds nothing. Run it after editing catalogs/*.toml or the semantic backend's built-in
requests; tests/test_semantic.py fails while the shipped vectors are out of date.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tui_router.catalog import load_catalog  # noqa: E402
from tui_router.decide.semantic import SemanticBackend  # noqa: E402
from tui_router.embed import Embedder, _slug  # noqa: E402
from tui_router.resources import bundled_catalogs  # noqa: E402


def main() -> int:
    embedder = Embedder()
    target = ROOT / "embeddings" / _slug(embedder.model_id)
    if target.exists():
        shutil.rmtree(target)  # embed everything afresh, not from the old copy
    with tempfile.TemporaryDirectory() as tmp:
        for name in bundled_catalogs():
            backend = SemanticBackend(load_catalog(name), cache_folder=Path(tmp), embedder=embedder)
            print(f"{name}: {len(backend.catalog.tools)} options")
        target.mkdir(parents=True)
        for path in sorted((Path(tmp) / _slug(embedder.model_id)).glob("*.npz")):
            shutil.copy2(path, target / path.name)
            print(f"  {target.relative_to(ROOT) / path.name} ({path.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
