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


async def test_typing_in_the_catalog_list_types_in_its_filter(tmp_path: Path) -> None:
    # The help says "Catalog pane: type  filter tools", but a letter typed in the list (not its
    # filter box) did nothing, or worse: `q` quit the console.
    from textual.widgets import Input, OptionList

    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        listing = app.query_one("#catalog-list", OptionList)
        box = app.query_one("#catalog-filter", Input)
        listing.focus()
        await pilot.pause()
        await pilot.press("down")  # the list's own keys still move in it
        await pilot.pause()
        assert app.focused is listing and box.value == ""
        await pilot.press("q", "u", "e")  # "q" is typed, it does not quit
        await pilot.pause()
        assert app.is_running and app.focused is box and box.value == "que" and box.cursor_position == 3
        shown = [listing.get_option_at_index(i).id for i in range(listing.option_count) if not listing.get_option_at_index(i).disabled]
        assert shown and "list_events" not in shown and set(shown) <= {"create_reminder", "search_docs", "ask_user", "human_review", "defer_to_llm"}, shown
        await pilot.press("enter")  # the filter's enter goes back to the list, then typing appends
        await pilot.pause()
        assert app.focused is listing
        await pilot.press("space", "x")
        await pilot.pause()
        assert app.focused is box and box.value == "que x"
        listing.focus()
        await pilot.pause()
        await pilot.press("question_mark")  # help still opens from the list
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen", type(app.screen).__name__
