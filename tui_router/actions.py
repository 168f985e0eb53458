"""What a request asks to do to a thing: create it, remove it, change it, read it, send it, reply
to a message, or grant someone access to it.

Sibling tools (create/cancel/update/list of one object, add to/remove from a list, send/reply,
share/edit) share their topic, so an embedding model finds them all equally close; the verb tells
them apart. A tool's action comes from the first word of its id (verb_object, the common
convention); a message's from cue words in several languages. Two constructions are read apart:
"let Dana edit the deck" grants access (the edit is Dana's, not the request's), and a reply answers
a message the request refers to ("Karen mailed this morning; tell her yes"), so a new message to
an address is a send and a reply tool does not fit it. Used as two features of the semantic
backend: the tool's action is among the message's, or the message names actions and not the tool's.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .textnorm import fold

CREATE, REMOVE, UPDATE, READ, SEND = "create", "remove", "update", "read", "send"
REPLY, GRANT = "reply", "grant"

# First word of a tool id -> action
_TOOL_VERBS = {
    CREATE: "create add new book reserve schedule open make register request generate issue log file raise start enroll invite insert post put save draft compose prepare write",
    REMOVE: "cancel delete remove revoke deactivate disable unsubscribe void withdraw drop close end terminate archive purge clear stop pause unlink decline reject",
    UPDATE: "update change modify edit move reschedule rename set adjust switch upgrade downgrade replace reassign assign transfer merge correct patch resize scale",
    READ: "get list show search find check track view fetch lookup query read describe count summarize inspect browse status locate export download compare estimate",
    SEND: "send resend forward email mail text sms notify message ping page broadcast announce alert",
    REPLY: "reply respond answer",
    GRANT: "share grant allow permit authorize authorise",
}

# Message cues, in several languages (folded: lower case, no accents). Words of 5+ letters also
# match longer forms ("cancel" -> "cancelled"); CJK and kana cues match anywhere; "*" stands for
# up to three words ("push * back": "push the standup back").
_MESSAGE_CUES = {
    CREATE: """create, add, new, make, set up, draft, compose, prepare, write up, book, reserve, schedule, register, sign me up, raise, open a, open an,
        crear, crea, anade, anadir, agrega, agregar, nuevo, nueva, reserva, reservar, apunta, registra,
        creer, cree, ajoute, ajouter, nouveau, nouvelle, reserve, reserver, inscris,
        erstelle, erstellen, lege, anlegen, hinzufugen, fuge, neu, neue, neuen, buche, buchen, reservier,
        crea, creare, aggiungi, aggiungere, nuovo, nuova, prenota, prenotare,
        criar, crie, cria, adiciona, adicionar, adicione, novo, nova, reservar,
        maak, aanmaken, voeg, toevoegen, nieuw, nieuwe, boek, reserveer,
        создай, создать, добавь, добавить, новый, новую, забронируй, оформи, запиши,
        utworz, dodaj, nowy, nowa, zarezerwuj, zapisz,
        olustur, ekle, yeni, rezervasyon, kaydet,
        创建, 新建, 添加, 加上, 预订, 预定, 订, 安排,
        作成, 追加, 予約, 入れて, 登録,
        만들, 추가, 예약, 등록,
        बनाओ, जोड़, बुक,
        أنشئ, أضف, احجز, جديد""",
    REMOVE: """cancel, delete, remove, drop, withdraw, revoke, undo, call * off, get rid of, cross * off, strike * off, scrap,
        unsubscribe, terminate, deactivate, disable, void, erase, take * off, take * down, kill, stop, don't need, no longer need,
        cancelar, cancela, cancele, anular, anula, borrar, borra, eliminar, elimina, quitar, quita, dar de baja, tacha, tachar,
        annuler, annule, supprimer, supprime, retirer, retire, enlever, enleve, resilier, raye, rayer,
        stornieren, storniere, absagen, sag, loschen, losche, entfernen, entferne, zuruckziehen, kundigen, kundige, streich,
        annullare, annulla, cancellare, cancella, eliminare, elimina, togliere, togli, rimuovere, rimuovi, disdire,
        excluir, exclua, apagar, apague, remover, remova, tirar, tira,
        annuleer, annuleren, verwijder, verwijderen, intrekken, trek, schrap, zeg op,
        отмени, отменить, удали, удалить, убери, убрать, аннулируй,
        anuluj, usun, odwolaj, skasuj,
        iptal, sil, kaldir, vazgec,
        取消, 删除, 删掉, 去掉, 撤销, 退订,
        キャンセル, 削除, 取り消, 消して, 外して,
        취소, 삭제, 지워, 빼,
        रद्द, हटा,
        ألغ, إلغاء, احذف, أزل""",
    UPDATE: """change, update, modify, edit, move, reschedule, rename, switch, adjust, amend, correct, upgrade, downgrade,
        replace, push * back, bring * forward, move * to, postpone, shift, swap, instead,
        cambiar, cambia, cambie, modificar, modifica, actualizar, actualiza, mover, mueve, pasar a,
        changer, change, modifier, modifie, mettre a jour, deplacer, deplace, decaler, decale,
        andern, andere, aktualisieren, aktualisiere, verschieben, verschiebe, umbenennen, wechseln, wechsle, statt,
        cambiare, cambia, modificare, modifica, aggiornare, aggiorna, spostare, sposta, invece,
        mudar, muda, mude, alterar, altera, altere, atualizar, atualiza, trocar, troca, troque,
        wijzig, wijzigen, verander, veranderen, aanpassen, pas aan, verplaats, verzet,
        измени, изменить, поменяй, перенеси, обнови, замени,
        zmien, zaktualizuj, przenies, zamien,
        degistir, guncelle, tasi,
        修改, 更改, 改成, 改到, 更新, 换成, 调整,
        変更, 変えて, 更新, 移動,
        변경, 바꿔, 수정, 옮겨,
        बदल, अपडेट,
        غير, عدل, حدث""",
    READ: """show, list, what, which, when, where, how many, how much, check, status, view, see, look up, track, is there, are there,
        any, find out, tell me, where is, did, has, have i, do i have, overview,
        muestra, mostrar, ver, lista, que, cual, cuando, donde, cuantos, cuantas, estado, hay,
        montre, afficher, affiche, voir, liste, quel, quelle, quels, quand, ou est, combien, etat, est-ce,
        zeig, zeige, anzeigen, liste, was, welche, wann, wo, wie viele, wieviel, status, gibt es,
        mostra, mostrami, vedere, elenca, quale, quali, quando, dove, quanti, stato, c'e,
        mostre, mostrar, qual, quais, quando, onde, quantos, quantas,
        toon, laat zien, welke, wanneer, waar, hoeveel, staat,
        покажи, какой, какие, когда, где, сколько, статус, есть ли,
        pokaz, jaki, jakie, kiedy, gdzie, ile, czy,
        goster, hangi, ne zaman, nerede, kac, durum, var mi,
        查看, 显示, 查一下, 查询, 哪些, 什么时候, 多少, 状态, 有没有, 吗,
        見せ, 表示, 確認, いつ, どこ, いくら, 教えて, ありますか,
        보여, 확인, 언제, 어디, 얼마, 있어,
        दिखा, कब, कहाँ, कितन, क्या,
        أين, متى, كم, هل, أظهر, اعرض""",
    SEND: """send, resend, forward, notify, inform, let * know, tell her, tell him, tell them, tell the,
        tell everyone, tell everybody, write to, ping, drop * a line, ^email, ^mail, ^text, ^message,
        enviar, envia, envie, enviale, manda, mandar, mandale, avisa, avisar, avisale, dile, diles,
        envoyer, envoie, envoyez, previens, prevenir, dis-lui, dis-leur, ecris a,
        schick, schicke, schicken, sende, senden, benachrichtige, benachrichtigen, sag ihr, sag ihm,
        invia, inviare, inviagli, mandagli, avvisa, avvisare, scrivi a,
        envia, enviar, mande, avise, avisar, diga a,
        stuur, sturen, verstuur, versturen, laat * weten,
        отправь, отправить, пошли, напиши, сообщи, уведоми,
        wyslij, napisz do, powiadom,
        gonder, bildir, haber ver,
        发送, 发给, 发个, 告诉, 通知,
        送って, 送信, 伝えて, 知らせ,
        보내, 알려,
        भेज, बता,
        أرسل, ارسل, أخبر, أبلغ""",
    REPLY: """reply, respond, write back, get back to, ^answer, answer * email, answer * mail, answer * message, re:,
        responde, responder, respondele, contesta, contestar, contestale,
        reponds, repondre, repondez,
        antworte, antworten, beantworte, beantworten,
        rispondi, rispondere,
        responda,
        antwoord, beantwoord,
        ответь, ответить,
        odpowiedz, yanitla, cevap ver,
        回复, 回信, 返信, 답장, जवाब, رد على""",
    GRANT: """grant, give * access, give * permission, give * permissions, give * rights, give * role, share * with,
        shared with, editable, viewable, shareable, view only, view-only, read only, read-only, collaborator, as editor,
        as an editor, as viewer, as a viewer,
        dar acceso, dale acceso, da * acceso, comparte * con, compartir * con, solo lectura,
        partage * avec, partager * avec, donne * acces, donner * acces, lecture seule,
        freigeben, gib * zugriff, gib * rechte, teile * mit, nur lesen, leserechte, schreibrechte,
        condividi * con, condividere * con, dai * accesso, sola lettura,
        compartilhe * com, compartilhar * com, partilha * com, da * acesso, dar acesso, somente leitura,
        deel * met, delen * met, geef * toegang, geef * rechten, geef * leesrechten, geef * schrijfrechten, alleen lezen,
        дай доступ, дай * доступ, открой доступ, поделись, udostepnij, daj * dostep, paylas, erisim ver,
        共享, 分享给, 共有, 공유, शेयर, شارك"""
}
_NO_SPACE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\u0900-\u097f\u0600-\u06ff]")


@lru_cache(maxsize=1)
def _patterns() -> dict[str, re.Pattern[str]]:
    out = {}
    for action, text in _MESSAGE_CUES.items():
        parts = []
        for cue in {fold(c.strip()) for c in text.replace("\n", ",").split(",") if c.strip()}:
            if _NO_SPACE.search(cue):
                parts.append(re.escape(cue))
            elif cue.startswith("^"):  # a noun as often as a verb: only as the request's first word
                parts.append(r"^(?:(?:please|pls|can you|could you|hey|ok|okay)\W+)*" + re.escape(cue[1:]) + r"(?!\w)")
            elif " * " in cue:  # a separable verb: "push * back"
                head, tail = cue.split(" * ", 1)
                parts.append(r"(?<!\w)" + re.escape(head) + r"(?:\s+\S+){0,3}?\s+" + re.escape(tail) + r"(?!\w)")
            else:
                tail = r"\w*" if len(cue) >= 5 else ""
                parts.append(r"(?<!\w)" + re.escape(cue) + tail + r"(?!\w)")
        out[action] = re.compile("|".join(sorted(parts, key=len, reverse=True)))
    return out


@lru_cache(maxsize=1)
def _verbs() -> dict[str, str]:
    return {verb: action for action, text in _TOOL_VERBS.items() for verb in text.split()}


# "draft it but don't send it yet" asks for no sending
_NEGATED_SEND = re.compile(r"(?<!\w)(?:don'?t|do not|not|without|never|no)\s+(?:\w+\s+)?(?:send|sending|sent)(?!\w)")
# "let Dana make changes to the deck": the verb is what someone else may do; the request grants it
_PERMITTED = re.compile(
    r"(?<!\w)(?:let|allow|permit|enable|laisse|laissez|autorise|deja|dejale|permite|lass|lasst|erlaube|lascia"
    r"|permetti|deixa|deixe|permita)\s+(?!(?:me|us|it|moi|nous|mich|uns|mi|ci)(?!\w))(?:\S+\s+){1,3}?"
    r"(?:to\s+|a\s+)?(?:edit|view|see|access|make changes|change|modify|update|comment|read|open|manage|use|join"
    r"|upload|download|contribute|write|modifier|editer|voir|consulter|modificar|editar|ver|acceder|bearbeiten"
    r"|andern|sehen|ansehen|modificare|vedere|accedere|acessar|alterar)(?!\w)"
)
# A message already received: sending "tell her it works" then answers it ("Karen mailed this
# morning", "I got an email from Karen", "Claire's email"), so a reply tool fits as well as a send one.
_RECEIVED = re.compile(
    r"(?:e-?mail|mail|message|note|text|dm|thread)s?\s+(?:from|de|von|di|van)(?!\w)"
    r"|'s\s+(?:\w+\s+)?(?:e-?mail|mail|message|note|thread)(?!\w)"
    r"|(?<!\w)(?!(?:i|we|you)(?!\w))[^\W\d_]+\s+(?:e-?mailed|mailed|messaged|texted|wrote)(?!\w)"
    r"|(?<!\w)(?:her|his|their)\s+(?:\w+\s+)?(?:e-?mail|mail|message|note)(?!\w)"
    r"|(?<!\w)thread(?!\w)"
)


def message_actions(message: str) -> frozenset[str]:
    text = _NEGATED_SEND.sub(" ", fold(message[:2000]).strip())
    text = _PERMITTED.sub(" grant ", text)
    patterns = _patterns()
    found: set[str] = set()
    # access wording first, then blanked: "view only" or "can edit" name the role, not a read or a change
    text, granted = patterns[GRANT].subn(" ", text)
    if granted:
        found.add(GRANT)
    found.update(action for action, pattern in patterns.items() if action != GRANT and pattern.search(text))
    if SEND in found and _RECEIVED.search(text):
        found.add(REPLY)
    if REPLY in found:
        found.add(SEND)  # a reply is sent
    return frozenset(found)


_ACCESS_NOUNS = frozenset("access permission permissions role roles rights collaborator collaborators".split())


def tool_action(tool_id: str) -> str | None:
    return _verbs().get(_id_words(tool_id)[0])


def tool_actions(tool_id: str) -> frozenset[str]:
    """The tool's action, and granting for request_access, add_role, update_permissions."""
    first, *rest = _id_words(tool_id)
    action = _verbs().get(first)
    if action is None:
        return frozenset()
    if action in (CREATE, UPDATE) and _ACCESS_NOUNS.intersection(rest):
        return frozenset({action, GRANT})
    return frozenset({action})


def _id_words(tool_id: str) -> list[str]:
    return re.split(r"[_.:\-]", tool_id.lower())


def agreement(actions: frozenset[str], tool_id: str) -> tuple[float, float]:
    """(1 if the tool's action is among the message's, 1 if the message names others only)."""
    accepted = tool_actions(tool_id)
    if not accepted or not actions:
        return 0.0, 0.0
    return (1.0, 0.0) if accepted & actions else (0.0, 1.0)
