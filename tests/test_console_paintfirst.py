"""The console paints first and reads later (a review folder, a session opened at start or from
inside), and its catalog watch raises no false alarms (a save in two steps, a folder in the
catalog's place). Real Textual app via Pilot, real files."""

from __future__ import annotations

import os
from pathlib import Path

from app_harness import notifications, settle
from test_hostile_landed import PETSHOP, TRACK, _petshop_console, _settle_failing

# -- the catalog watch -----------------------------------------------------------------------------


async def test_a_catalog_saved_half_then_whole_reloads_without_an_error_in_between(tmp_path: Path) -> None:
    catalog, app = _petshop_console(tmp_path)
    whole = PETSHOP + TRACK
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        first, said = app.router, len(notifications(app))
        catalog.write_text(whole[: whole.index("[[tools]]", 40) + 12], encoding="utf-8")  # the editor's first half
        app._check_catalog_file()
        await _settle_failing(app, pilot)
        # before, "Could not load the router" flashed here, then the reload of the whole file
        assert app.router is first and notifications(app)[said:] == []
        catalog.write_text(whole, encoding="utf-8")  # the rest arrives before the next check
        app._check_catalog_file()
        await settle(app, pilot)
        app._check_catalog_file()
        await settle(app, pilot)
        assert "track_order" in app.router.catalog
        new = notifications(app)[said:]
        assert len(new) == 1 and "changed on disk: reloaded. Catalog petshop" in new[0], new


async def test_a_broken_catalog_save_is_said_at_the_next_check_and_once(tmp_path: Path) -> None:
    catalog, app = _petshop_console(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        first, said = app.router, len(notifications(app))
        catalog.write_text(PETSHOP + '\n[[tools]]\nid = "broken\n', encoding="utf-8")
        app._check_catalog_file()
        await _settle_failing(app, pilot)
        assert notifications(app)[said:] == []  # not yet: the file may still be being written
        for _ in range(4):  # still as it was read: broken indeed, said once however long it stays
            app._check_catalog_file()
            await _settle_failing(app, pilot)
        new = notifications(app)[said:]
        assert len(new) == 1 and "petshop.toml" in new[0] and "Still routing with catalog 'petshop' as loaded before." in new[0], new
        assert app.router is first
        catalog.write_text(PETSHOP + TRACK, encoding="utf-8")  # fixed: loaded at once
        app._check_catalog_file()
        await settle(app, pilot)
        assert "track_order" in app.router.catalog and "reloaded" in notifications(app)[-1]


async def test_a_folder_in_the_catalogs_place_is_said_once_whatever_changes_inside_it(tmp_path: Path) -> None:
    catalog, app = _petshop_console(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        first, said = app.router, len(notifications(app))
        catalog.unlink()
        catalog.mkdir()
        for step in range(6):
            if step >= 2:  # files come and go in the folder: its time changes, it is still a folder
                (catalog / f"note-{step}.txt").write_text("x", encoding="utf-8")
                os.utime(catalog, ns=(step * 10**9, step * 10**9))
            app._check_catalog_file()
            await _settle_failing(app, pilot)
        new = notifications(app)[said:]
        # before, every change inside the folder reloaded and said "is a folder" again
        assert len(new) == 1 and f"{catalog}: is a folder, not a catalog file" in new[0], new
        assert app.router is first
