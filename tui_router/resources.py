"""Where bundled data lives, installed (wheel) or in a source checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(kind: str) -> Path:
    """Bundled `catalogs` or `sessions`: inside the installed package, else the source tree."""
    installed = _PACKAGE / "data" / kind
    if installed.is_dir():
        return installed
    return _PACKAGE.parent / kind


def bundled_catalogs() -> dict[str, Path]:
    folder = data_dir("catalogs")
    return {p.stem: p for p in sorted(folder.glob("*.toml"))} if folder.is_dir() else {}


def bundled_session(name: str) -> Path:
    return data_dir("sessions") / f"{name}.toml"
