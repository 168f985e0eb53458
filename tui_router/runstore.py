"""Where a run keeps the results of its finished shards, so a rerun resumes from them.

A run's folder is named by its fingerprint: a digest of every turn it routes (as the first pass
spooled them, in order), the config, the catalog, the backend, the options that change a result,
and the source of tui_router itself. Anything that would change a shard's result changes the
fingerprint, so stale parts are never read: they sit in another folder (pruned after a week).

Each finished shard is one `part-LO-HI.json` (its EvalState and what the report says of the
backend), plus `part-LO-HI.turns.jsonl` when the run prints its turns; both written atomically.
By default the folder is in the user cache (`$XDG_CACHE_HOME/tui-router/runs`) and removed once
the run has printed its report; with --work-dir DIR (or --shard I/N) the parts are kept there,
for a later run (another CI job, a merge) to use.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

PRUNE_AFTER = 7 * 24 * 3600


def default_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tui-router" / "runs"


@functools.cache
def source_digest() -> str:
    """A digest of tui_router's own source: a part made by other code is not this code's."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parent
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def fingerprint(kind: str, plan_digest: str, setup: dict[str, Any]) -> str:
    text = json.dumps({"kind": kind, "plan": plan_digest, "setup": setup, "source": source_digest()}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class RunStore:
    def __init__(self, root: Path, key: str, *, keep: bool) -> None:
        self.root = root
        self.dir = root / key[:24]
        self.keep = keep
        self.problem = ""  # why the parts cannot be kept ("" when fine): the run goes on, a rerun starts over

    def open(self) -> RunStore:
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self.problem = f"cannot keep the shard results in {self.dir} ({exc.strerror or exc}); a rerun would start over"
            return self
        if not self.keep:
            self._prune()
        return self

    def _prune(self) -> None:
        now = time.time()
        for other in self.root.iterdir():
            try:
                if other != self.dir and other.is_dir() and now - other.stat().st_mtime > PRUNE_AFTER:
                    shutil.rmtree(other, ignore_errors=True)
            except OSError:
                pass

    def parts(self) -> dict[int, int]:
        """{lo: hi} of the finished shards kept here."""
        found = {}
        for path in self.dir.glob("part-*-*.json"):
            try:
                lo, hi = (int(x) for x in path.stem.split("-")[1:3])
            except ValueError:
                continue
            found[lo] = hi
        return found

    def part(self, lo: int, hi: int) -> Path:
        return self.dir / f"part-{lo}-{hi}.json"

    def turns(self, lo: int, hi: int) -> Path:
        return self.dir / f"part-{lo}-{hi}.turns.jsonl"

    def save(self, result: Any) -> bool:
        """Keep a finished shard (False, and `problem` said, when the disk refuses: it fails soft)."""
        if self.problem:
            return False
        try:
            if result.turns is not None:
                _write(self.turns(result.lo, result.hi), result.turns)
            _write(self.part(result.lo, result.hi), json.dumps(result.to_json()).encode("utf-8"))  # last: the part is whole
        except OSError as exc:
            self.problem = f"cannot keep the shard results in {self.dir} ({exc.strerror or exc}); a rerun would start over"
            for path in (self.turns(result.lo, result.hi), self.part(result.lo, result.hi)):
                path.unlink(missing_ok=True)
            for stray in self.dir.glob("*.tmp"):
                stray.unlink(missing_ok=True)
            return False
        return True

    def load(self, lo: int, hi: int) -> dict[str, Any] | None:
        try:
            return json.loads(self.part(lo, hi).read_bytes())
        except (OSError, ValueError):
            return None

    def finish(self) -> None:
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)
