"""Action cues (tui_router/actions.py): what a request asks to do, in several languages."""

from __future__ import annotations

import pytest

from tui_router.actions import (
    CREATE,
    GRANT,
    READ,
    REMOVE,
    REPLY,
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


@pytest.mark.parametrize(
    "message",
    [
        "let Priya edit the onboarding doc",
        "allow the contractors to view the design folder",
        "give Tomás comment rights on the pricing sheet",
        "Comparte la carpeta de fotos con mi hermana, solo lectura",
        "Gib Jonas Zugriff auf den Ordner Verträge",
        "把预算表共享给小王",
        "Laisse Chloé modifier le tableau des dépenses",
    ],
)
def test_access_requests_grant(message: str) -> None:
    """Letting someone edit is granting access, not changing anything: the edit verb belongs to them."""
    actions = message_actions(message)
    assert GRANT in actions
    assert UPDATE not in actions and READ not in actions
    assert agreement(actions, "share_file") == (1.0, 0.0)
    assert agreement(actions, "update_document") == (0.0, 1.0)
    assert agreement(actions, "request_access") == (1.0, 0.0)  # a create verb on access: granting too
    assert agreement(actions, "revoke_access") == (0.0, 1.0)


def test_own_edits_are_not_grants() -> None:
    assert message_actions("let me change the title of the event") == frozenset({UPDATE})
    assert GRANT not in message_actions("let them know the build is green")
    assert GRANT not in message_actions("a customer sent us a subject access request")
    # naming access is not granting it: checking or revoking access has its own verb
    revoking = message_actions("revoke Bob's access to the wiki")
    assert revoking == frozenset({REMOVE})
    assert agreement(revoking, "revoke_access") == (1.0, 0.0)
    assert agreement(revoking, "share_file") == (0.0, 1.0)
    assert agreement(message_actions("add me to the on-call group"), "request_access") == (1.0, 0.0)


def test_reply_needs_a_message_to_answer() -> None:
    """A reply tool fits a request that answers a message; a new message to an address is a send."""
    fresh = message_actions("write to accounts@acme.io and tell them the invoice is paid")
    assert fresh == frozenset({SEND})
    assert agreement(fresh, "reply_email") == (0.0, 1.0)
    assert agreement(fresh, "send_email") == (1.0, 0.0)
    for answering in (
        "Respond to the landlord's email, say Tuesday is fine",
        "Omar emailed about the contract; tell him we accept",
        "got a message from the school, let them know Mia is sick today",
        "Contesta al correo de Pablo diciendo que sí",
    ):
        actions = message_actions(answering)
        assert {REPLY, SEND} <= actions, answering
        assert agreement(actions, "reply_email") == (1.0, 0.0)
        assert agreement(actions, "send_email") == (1.0, 0.0)
    # looking for a message is neither
    assert message_actions("find Claire's email about the offsite") == frozenset()
