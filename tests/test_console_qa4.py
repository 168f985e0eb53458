"""Console defects left by the third QA pass (one test per defect)."""

from __future__ import annotations

from pathlib import Path

from app_harness import AGENDA, make_app, make_config, screen_text, settle, submit


def _candidates_head(app) -> str:
    """The first line inside the Candidates pane."""
    lines = screen_text(app).splitlines()
    top = next(i for i, line in enumerate(lines) if "Candidates" in line)
    start = lines[top].index("Candidates") - 3  # the pane's left border
    return lines[top + 1][start:].split("│")[1].strip()


async def test_candidates_do_not_count_a_turn_against_another_catalog(tmp_path: Path) -> None:
    # A turn routed with the tiny catalog (7 options), then `catalog: open` support (4 options): the
    # Candidates pane said "6 candidates of 4 options", counting the turn's candidates against a
    # catalog they were not drawn from.
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        candidates = app.session.turns[0].decision.candidates
        assert len(candidates) == 6
        assert _candidates_head(app).endswith("6 candidates of 7 options")
        app.use_catalog("support")
        await settle(app, pilot)
        assert app.router is not None and app.router.catalog.name == "support" and len(app.router.catalog.option_ids) == 4
        head = _candidates_head(app)
        # "direct · 6 candidates, routed with another catalog" when the pane is wide enough
        assert head in ("direct · 6 candidates of another catalog", "direct · 6 of another catalog"), head
        assert "of 4 options" not in screen_text(app)
        # a turn routed with the catalog in use is counted against it as before
        await submit(app, pilot, "my printer is broken, open a ticket")
        assert _candidates_head(app).endswith(f"{len(app.session.turns[1].decision.candidates)} candidates of 4 options")
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:  # narrow: still one line
        await settle(app, pilot)
        await submit(app, pilot, AGENDA)
        app.use_catalog("support")
        await settle(app, pilot)
        assert not app.screen_stack[0].has_class("-catalog-open")  # narrow: the panes are shown
        text = screen_text(app)
        assert "another catalog" in text and "of 4 options" not in text, text
