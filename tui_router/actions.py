"""What a request asks to do to a thing: create it, remove it, change it, read it, or send it.

Sibling tools (create/cancel/update/list of one object, add to/remove from a list) share their
topic, so an embedding model finds them all equally close; the verb tells them apart. A tool's
action comes from the first word of its id (verb_object, the common convention); a message's from
cue words in several languages. Used as two features of the semantic backend: the tool's action is
among the message's, or the message names actions and not the tool's.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .textnorm import fold

CREATE, REMOVE, UPDATE, READ, SEND = "create", "remove", "update", "read", "send"

# First word of a tool id -> action
_TOOL_VERBS = {
    CREATE: "create add new book reserve schedule open make register request generate issue log file raise start enroll invite insert post put save draft compose prepare write",
    REMOVE: "cancel delete remove revoke deactivate disable unsubscribe void withdraw drop close end terminate archive purge clear stop pause unlink decline reject",
    UPDATE: "update change modify edit move reschedule rename set adjust switch upgrade downgrade replace reassign assign transfer merge correct patch resize scale",
    READ: "get list show search find check track view fetch lookup query read describe count summarize inspect browse status locate export download compare estimate",
    SEND: "send resend reply respond forward email mail text sms notify message ping page broadcast announce alert",
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
    SEND: """send, resend, forward, reply, respond, notify, inform, let * know, tell her, tell him, tell them, tell the,
        tell everyone, tell everybody, write to, write back, ping, drop * a line, get back to, ^email, ^mail, ^text, ^message,
        enviar, envia, envie, enviale, manda, mandar, mandale, responde, responder, avisa, avisar, avisale, dile, diles,
        envoyer, envoie, envoyez, reponds, repondre, previens, prevenir, dis-lui, dis-leur, ecris a,
        schick, schicke, schicken, sende, senden, antworte, antworten, benachrichtige, benachrichtigen, sag ihr, sag ihm,
        invia, inviare, inviagli, mandagli, rispondi, rispondere, avvisa, avvisare, scrivi a,
        envia, enviar, mande, responda, responder, avise, avisar, diga a,
        stuur, sturen, verstuur, versturen, antwoord, laat * weten,
        отправь, отправить, пошли, напиши, ответь, сообщи, уведоми,
        wyslij, napisz do, odpowiedz, powiadom,
        gonder, yanitla, bildir, haber ver,
        发送, 发给, 发个, 回复, 告诉, 通知,
        送って, 送信, 返信, 伝えて, 知らせ,
        보내, 답장, 알려,
        भेज, बता,
        أرسل, ارسل, رد على, أخبر, أبلغ""",
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


def message_actions(message: str) -> frozenset[str]:
    text = _NEGATED_SEND.sub(" ", fold(message[:2000]).strip())
    return frozenset(action for action, pattern in _patterns().items() if pattern.search(text))


def tool_action(tool_id: str) -> str | None:
    first = re.split(r"[_.:\-]", tool_id.lower(), maxsplit=1)[0]
    return _verbs().get(first)


def agreement(actions: frozenset[str], tool_id: str) -> tuple[float, float]:
    """(1 if the tool's action is among the message's, 1 if the message names others only)."""
    action = tool_action(tool_id)
    if action is None or not actions:
        return 0.0, 0.0
    return (1.0, 0.0) if action in actions else (0.0, 1.0)
