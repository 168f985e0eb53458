"""Action cues (tui_router/actions.py): what a request asks to do, in several languages."""

from __future__ import annotations

import pytest

from tui_router.actions import CREATE, READ, REMOVE, SEND, UPDATE, agreement, message_actions, tool_action


@pytest.mark.parametrize(
    ("message", "action"),
    [
        ("got the milk already, cross it off", REMOVE),
        ("kiero cancelar el pedido 3321 porfa", REMOVE),  # misspelt Spanish around the verb
        ("Отмени, пожалуйста, бронь столика на субботу", REMOVE),
        ("Storniere bitte die Bestellung 5512", REMOVE),
        ("取消我明天的预订", REMOVE),
        ("add two lemons and coffee filters to the list", CREATE),
        ("Réserve une table pour quatre ce soir", CREATE),
        ("新建一个工单", CREATE),
        ("push the standup back an hour", UPDATE),
        ("Verschiebe das Meeting auf Freitag", UPDATE),
        ("what do we still need from the store?", READ),
        ("Wann landet der Flug LH400?", READ),
        ("장보기 목록에 뭐 있어? 확인해줘", READ),
        ("Email finance@acme.io and let them know the budget is approved", SEND),
        ("Text Jordan that the deploy finished.", SEND),  # a noun as often as a verb: first word only
        ("Envoie un SMS au 06 12 34 56 78 pour dire que j'arrive", SEND),
        ("告诉他我晚点到", SEND),
        ("Draft a note to the board but don't send it yet", CREATE),
    ],
)
def test_message_actions_in_several_languages(message: str, action: str) -> None:
    assert action in message_actions(message)


def test_no_cue_no_action() -> None:
    assert message_actions("find the text Jordan sent about the deploy") == frozenset()
    assert message_actions("search my email for the March invoice") == frozenset()
    assert message_actions("") == frozenset()
    # asking not to send is not asking to send
    assert SEND not in message_actions("Draft a note to the board but don't send it yet")
    assert SEND not in message_actions("write it up without sending it")
    # short cues match whole words only: "add" is not in "address", "new" not in "renewal"
    assert CREATE not in message_actions("update the shipping address for the renewal")


def test_tool_action_from_the_first_word_of_the_id() -> None:
    assert tool_action("cancel_order") == REMOVE
    assert tool_action("show_shopping_list") == READ
    assert tool_action("reschedule-event") == UPDATE
    assert tool_action("book.flight") == CREATE
    assert tool_action("send_sms") == SEND
    assert tool_action("draft_email") == CREATE
    assert tool_action("toggle_feature_flag") is None  # no opinion: the feature stays 0


def test_agreement() -> None:
    actions = message_actions("please cancel order 4411")
    assert agreement(actions, "cancel_order") == (1.0, 0.0)
    assert agreement(actions, "create_order") == (0.0, 1.0)
    assert agreement(actions, "send_sms") == (0.0, 1.0)
    assert agreement(actions, "toggle_feature_flag") == (0.0, 0.0)
    assert agreement(frozenset(), "cancel_order") == (0.0, 0.0)
