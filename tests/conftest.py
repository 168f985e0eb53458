"""Shared pytest fixtures. Each feature appends its own section."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def _own_embedding_cache(tmp_path_factory: pytest.TempPathFactory):
    """The tests never read or fill the user's cache: the semantic backend (the default when its
    extra is installed) embeds each catalog once per test run, in a folder of its own."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        # and never write sessions into the user's data folder (the default sessions folder)
        patch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))
        yield

# --- System One servers (issue 4): real subprocesses on loopback ports, started once per session ---


@pytest.fixture(scope="session")
def jev_mocks():
    """jev_mocks.url(*faults, key=None) -> base_url of a `jevcompat mock` with those faults."""
    from servers.processes import MockPool

    pool = MockPool()
    yield pool
    pool.stop()


@pytest.fixture(scope="session")
def sparrow_url():
    """base_url of `sparrow-decider serve` (a small real decision model)."""
    from servers.processes import start_sparrow

    server = start_sparrow()
    yield server.base_url
    server.stop()


@pytest.fixture()
def profile_cache(tmp_path, monkeypatch):
    """Server profiles cached under a temporary XDG_CACHE_HOME, never the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "tui-router" / "profiles"
