"""Action cues (tui_router/actions.py): what a request asks to do, in several languages."""

from __future__ import annotations

import pytest

from tui_router.actions import (
    CREATE,
    READ,
    REMOVE,
    SEND,
    UPDATE,
    agreement,
    message_actions,
    tool_action,
)


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
    # questions name no action (read cues were removed after the ablation, docs/vocab-ablation.md)
    assert message_actions("what do we still need from the store?") == frozenset()
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
    # a read tool has an action too: a request to change something conflicts with it
    assert agreement(actions, "show_orders") == (0.0, 1.0)


def test_own_edits_and_revoking() -> None:
    assert message_actions("let me change the title of the event") == frozenset({UPDATE})
    revoking = message_actions("revoke Bob's access to the wiki")
    assert revoking == frozenset({REMOVE})
    assert agreement(revoking, "revoke_access") == (1.0, 0.0)
    assert agreement(revoking, "grant_access") == (0.0, 0.0)  # grant and share verbs have no action
    assert agreement(message_actions("add me to the on-call group"), "request_access") == (1.0, 0.0)


def test_a_new_message_is_a_send() -> None:
    fresh = message_actions("write to accounts@acme.io and tell them the invoice is paid")
    assert fresh == frozenset({SEND})
    assert agreement(fresh, "send_email") == (1.0, 0.0)
    assert agreement(fresh, "reply_email") == (0.0, 0.0)  # reply verbs have no action
    # looking for a message is neither
    assert message_actions("find Claire's email about the offsite") == frozenset()
