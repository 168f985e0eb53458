"""Concept groups: synonyms and common translations of the words tool requests are made of.

A lexical router misses "dig up the mail" for search_inbox because no word is shared. Every word
(or phrase) below maps to a concept token ("~search", "~email"), added beside the words themselves
on both sides: in the catalog's documents and in the message. Two texts that use different words
for the same thing then share a token. The groups are general vocabulary of software tools and
office work (English, with common Spanish, French, German, Italian, Portuguese, Chinese and
Japanese words); they describe no particular catalog.
"""

from __future__ import annotations

from functools import lru_cache

_GROUPS = """
send: send, deliver, dispatch, forward, transmit, shoot over, enviar, envía, envoyer, envoie, senden, schicken, schick, inviare, invia, mandar, manda, 发送, 发给, 送信, 送って, 送る, отправь, отправить, пошли, stuur, verstuur, wyślij, gönder, 보내, 보내줘
message: message, msg, dm, note, mensaje, mensagem, messaggio, nachricht, 消息, 信息, メッセージ, сообщение, bericht, wiadomość, wiadomosc, mesaj, 메시지
sms: sms, text, texts, texting, text message, mensaje de texto, texto, 短信, ショートメッセージ
email: email, e-mail, mail, mailed, inbox, gmail, outlook, correo, courriel, mél, posta, 邮件, 电子邮件, 邮箱, メール, почта, письмо, письма, электронная почта, メール, 이메일, e-mailem
notify: notify, notification, alert, ping, push, broadcast, announce, heads up, let know, notificación, notifica, benachrichtigung, benachrichtige, 通知, 推送, お知らせ, уведомление, уведоми, melding, powiadomienie, bildirim, 알림
phone: phone, mobile, cell, smartphone, teléfono, téléfone, portable, handy, telefono, 手机, 電話, スマホ
remind: remind, reminder, nudge, alarm, don't forget, do not forget, recordatorio, recuérdame, recuerda, rappel, rappelle, rappelle-moi, erinnerung, erinnere, promemoria, ricordami, lembrete, lembre, 提醒, リマインダー, リマインド, 忘れない, напомни, напоминание, herinner, herinnering, przypomnij, przypomnienie, hatırlat, hatirlat, 알림, 리마인더
meeting: meeting, meet, event, appointment, sync, standup, 1:1, one-on-one, call, session, invite, reunión, reunion, réunion, besprechung, termin, riunione, reunião, 会议, 开会, 会議, ミーティング, 打ち合わせ, встреча, встречу, созвон, vergadering, afspraak, spotkanie, toplantı, toplanti, 회의, 미팅
calendar: calendar, agenda, diary, schedule, calendario, calendrier, kalender, 日历, 日程, カレンダー, 予定, календарь, agenda, kalendarz, takvim, 캘린더, 일정
schedule: schedule, book, arrange, set up, plan, organise, organize, programar, agendar, planifier, planen, einplanen, pianificare, 安排, 预约, 予約
reschedule: reschedule, move, postpone, push back, delay, shift, bump, reprogramar, posponer, reporter, décaler, verschieben, rinviare, 改期, 推迟, 延期
cancel: cancel, call off, cancelar, annuler, absagen, stornieren, annullare, 取消, キャンセル
free: free, available, availability, open slot, disponible, libre, frei, verfügbar, libero, 空闲, 空いて, свободн, vrij, wolny, müsait, musait, 시간이 되는, 시간 되는
search: search, find, look up, lookup, look for, locate, dig up, hunt, seek, where is, where did, buscar, busca, encontrar, chercher, cherche, rechercher, trouver, suchen, such, finden, cercare, cerca, trovare, procurar, 搜索, 查找, 查询, 找, 検索, 探す, 探して, найди, найти, поиск, zoek, zoeken, szukaj, wyszukaj, znajdź, znajdz, ara, bul, 검색, 찾아
show: show, display, view, read, print, contents, mostrar, muestra, leer, lee, montrer, afficher, lire, zeigen, zeig, anzeigen, lesen, mostra, leggere, ler, 显示, 查看, 看, 读取, 表示, 見せて, 読む, покажи, показать, toon, laat zien, pokaż, pokaz, göster, goster, 보여줘, 보여
write: write, save, store, put, overwrite, escribir, guardar, écrire, enregistrer, schreiben, speichern, scrivere, salvare, escrever, salvar, 写入, 保存, 書き込む
delete: delete, remove, erase, wipe, purge, trash, destroy, get rid of, borrar, eliminar, supprimer, efface, löschen, lösche, entfernen, cancellare, eliminare, apagar, excluir, 删除, 删掉, 削除, удали, удалить, verwijder, usuń, usun, sil, 삭제
create: create, new, add, open new, open up new, file new, raise new, log new, make new, crear, crea, créer, crée, erstellen, erstelle, anlegen, creare, criar, 创建, 新建, 作成, 作って, создай, создать, maak, utwórz, utworz, oluştur, olustur, 만들어, 생성
update: update, edit, change, modify, amend, bump, tweak, assign, actualizar, cambiar, modifier, mettre à jour, ändern, aktualisieren, aggiornare, modificare, atualizar, 更新, 修改, 変更
list: list, all, overview, listar, lister, auflisten, elencare, 列出, 一覧
fetch: fetch, download, grab, retrieve, pull, scrape, get the html, raw html, source of, descargar, télécharger, herunterladen, scaricare, baixar, 下载, 抓取, ダウンロード
screenshot: screenshot, snapshot, snap, capture, screengrab, screen grab, picture of, image of, looks like, captura, capture d'écran, bildschirmfoto, 截图, 截屏, スクリーンショット
website: website, site, page, webpage, web page, url, link, homepage, web, página, sitio, seite, webseite, sito, 网页, 网站, ウェブ, サイト, сайт, страница, страницу, website, strona, web sitesi, sitemiz, 웹사이트, 사이트
status: status, uptime, is down, is it down, go down, went down, site down, outage, reachable, online, offline, responding, is it down, caído, caida, en panne, erreichbar, 宕机, 状態, упал, не работает, çalışıyor mu, calisiyor mu, çöktü, coktu, 다운
test: test, tests, ci, passing, pass, failing, suite, build, unit test, pruebas, prueba, teste, 测试, テスト, тесты, тест, testy, 테스트
format: format, reformat, prettify, indent, indentation, beautify, tidy, whitespace, formatear, formater, formatieren, formattare, 格式化, 整形
lint: lint, linter, static analysis, warnings, unused, code smell, code review, analyse, 静的解析, проверь код, controleer de code, sprawdź kod, sprawdz kod, 코드 검사
code: code, source, script, program, repo, repository, codebase, función, código, 代码, コード, код, kod, 코드
pull_request: pull request, pr, merge request, mr, review request
access: access, permission, permissions, grant, role, privileges, admin, acceso, permiso, accès, zugriff, berechtigung, accesso, 权限, 権限
share: share, collaborate, give access, compartir, partager, teilen, freigeben, condividere, 共享, 分享, 共有
password: password, passcode, passwd, login, log in, sign in, signin, credentials, locked out, lockout, 2fa, mfa, otp, one-time code, login code, contraseña, mot de passe, passwort, kennwort, senha, 密码, パスワード, пароль, wachtwoord, hasło, haslo, şifre, sifre, 비밀번호
refund: refund, reimburse, money back, chargeback, return, reembolso, devolución, remboursement, rembourser, rückerstattung, erstatten, rimborso, 退款, 返金, возврат, верни деньги, terugbetaling, zwrot, iade, 환불
payment: pay, payment, charge, charged, invoice, bill, billing, pago, pagar, factura, paiement, payer, facture, zahlung, zahlen, rechnung, pagamento, fattura, 支付, 付款, 发票, 支払い, 請求, оплата, оплаты, платеж, платёж, betaling, płatność, platnosc, ödeme, odeme, 결제
ticket: ticket, issue, bug, case, incident, support request, helpdesk, incidencia, incidente, 工单, 问题单, チケット, тикет, заявка, zgłoszenie, zgloszenie, bilet, 티켓
csv: csv, spreadsheet, excel, xlsx, sheet, tsv, hoja de cálculo, tableur, tabelle, foglio, 表格, スプレッドシート
export: export, dump, extract, save as, exportar, exporter, exportieren, esportare, 导出, エクスポート, экспорт, экспортируй, exporteer, eksportuj, dışa aktar, 내보내
import: import, load, upload, ingest, bring in, get into, importar, importer, importieren, importare, 导入, インポート, импорт, импортируй, importeer, importuj, içe aktar, 가져오
database: database, db, sql, query, table, rows, postgres, mysql, base de datos, base de données, datenbank, 数据库, データベース
aggregate: aggregate, average, mean, sum, total, count, per, median, stats, statistics, breakdown, group by, promedio, moyenne, durchschnitt, media, 平均, 合計, 统计
chart: chart, plot, graph, visualize, visualise, diagram, histogram, gráfico, graphique, diagramm, grafico, 图表, グラフ
file: file, files, document, doc, pdf, folder, directory, archivo, fichero, documento, fichier, dossier, datei, ordner, cartella, arquivo, 文件, 文档, ファイル, файл, файла, bestand, plik, pliku, dosya, 파일
translate: translate, translation, traducir, traduire, übersetzen, tradurre, traduzir, 翻译, 翻訳
weather: weather, forecast, temperature, rain, sunny, clima, tiempo, météo, wetter, meteo, 天气, 天気
news: news, headlines, noticias, nouvelles, actualités, nachrichten, notizie, 新闻, ニュース
oncall: oncall, on-call, pager, pagerduty, page, wake up, incident commander, guardia, astreinte, bereitschaft, 值班, 当番
mute: mute, silence, snooze, suppress, quiet, acknowledge, silenciar, silence, stummschalten, 静音, ミュート, заглуши, отключи уведомления, demp, wycisz, sessize al, 무음
chat: chat, slack, channel, teams, post, chatear, canal, kanal, 群, チャット
archive: archive, file away, clean up inbox, archivar, archiver, archivieren, archiviare, 归档, アーカイブ
reply: reply, respond, answer, write back, get back to, responder, contestar, répondre, antworten, rispondere, 回复, 返信
draft: draft, compose, prepare, borrador, brouillon, entwurf, bozza, 草稿, 下書き
buy: buy, purchase, order, shop, shopping, comprar, acheter, kaufen, 买, 购买, 買う
price: price, cost, how much, cheap, deal, discount, precio, prix, preis, prezzo, preço, 价格, 値段
travel: flight, flights, hotel, trip, travel, vacation, booking, vuelo, vol, flug, volo, voo, viaje, voyage, reise, 航班, 酒店, 旅行, 飛行機
food: recipe, cook, cooking, meal, restaurant, dinner, lunch, receta, recette, rezept, ricetta, 食谱, 餐厅, レシピ
music: music, song, songs, playlist, album, música, musique, musik, 音乐, 音楽
video: video, videos, youtube, movie, film, watch, stream, película, vidéo, 视频, 動画
image: image, photo, picture, drawing, logo, imagen, foto, bild, immagine, 图片, 画像
job: job, jobs, career, resume, cv, hiring, empleo, emploi, 工作, 求人
stock: stock, stocks, shares, ticker, market, crypto, bitcoin, invest, acciones, bourse, aktie, 股票, 株
map: map, directions, route, navigate, distance, mapa, carte, itinéraire, karte, 地图, 地図
learn: learn, course, courses, tutorial, study, lesson, aprender, curso, apprendre, lernen, 学习, 课程, 学習
"""

# Requests an LLM answers by itself: evidence for "none of the tools fits" unless the catalog itself
# uses these words (a catalog with a joke tool makes "joke" a tool word again).
_LLM_NATIVE = """
joke, jokes, funny, pun, poem, poems, haiku, limerick, sonnet, story, stories, essay, lyrics, riddle,
explain, explanation, why, meaning, define, definition, difference between, what is the difference,
opinion, advice, tips, pros and cons, compare, philosophy, history of, who was, who is, trivia,
brainstorm, ideas for, rewrite, rephrase, paraphrase, summarize, summarise, proofread, grammar,
sentence, paragraph, classify, categorize, the following, fill in the blank, options:, answer choices,
chiste, poema, cuento, explica, explique, porquoi, pourquoi, blague, gedicht, witz, erkläre, warum,
笑话, 诗, 为什么, 解释, 冗談, 詩, なぜ, 説明
"""


def _stem_phrase(text: str) -> tuple[str, ...]:
    from .textnorm import tokenize

    return tuple(tokenize(text, keep_stopwords=True))


@lru_cache(maxsize=1)
def _tables() -> tuple[dict[tuple[str, ...], set[str]], list[tuple[str, str]], int]:
    """(stemmed word sequence -> concepts, [(CJK substring, concept)], longest phrase)."""
    from .textnorm import _NO_SPACE_SCRIPT, fold

    phrases: dict[tuple[str, ...], set[str]] = {}
    cjk: list[tuple[str, str]] = []
    longest = 1
    for line in _GROUPS.strip().splitlines():
        concept, _, words = line.partition(":")
        concept = "~" + concept.strip()
        for word in words.split(","):
            word = word.strip()
            if not word:
                continue
            if _NO_SPACE_SCRIPT.search(word):
                cjk.append((fold(word), concept))
                continue
            key = _stem_phrase(word)
            if key:
                phrases.setdefault(key, set()).add(concept)
                longest = max(longest, len(key))
    return phrases, cjk, longest


@lru_cache(maxsize=1)
def _llm_native() -> tuple[frozenset[tuple[str, ...]], tuple[str, ...]]:
    from .textnorm import _NO_SPACE_SCRIPT, fold

    words: set[tuple[str, ...]] = set()
    cjk: list[str] = []
    for item in _LLM_NATIVE.replace("\n", " ").split(","):
        item = item.strip()
        if not item:
            continue
        if _NO_SPACE_SCRIPT.search(item):
            cjk.append(fold(item))
        else:
            key = _stem_phrase(item)
            if key:
                words.add(key)
    return frozenset(words), tuple(cjk)


@lru_cache(maxsize=1)
def _phrase_starts() -> frozenset[str]:
    return frozenset(key[0] for key in _tables()[0])


def _ngrams(tokens: list[str], longest: int):
    for size in range(1, longest + 1):
        for start in range(len(tokens) - size + 1):
            yield tuple(tokens[start : start + size])


def concept_sources(text: str, tokens: list[str] | None = None) -> dict[str, set[str]]:
    """Concept token -> the words of `text` that triggered it ('~email' -> {'mail'}).

    `tokens` (stopwords kept) may be passed when the caller already corrected typos in them.
    """
    from .textnorm import fold

    phrases, cjk, longest = _tables()
    if tokens is None:
        tokens = list(_stem_phrase(text))
    found: dict[str, set[str]] = {}
    starts = _phrase_starts()
    for i, token in enumerate(tokens):
        if token not in starts:
            continue
        for size in range(1, min(longest, len(tokens) - i) + 1):
            gram = tuple(tokens[i : i + size])
            for concept in phrases.get(gram, ()):
                found.setdefault(concept, set()).update(gram)
    if cjk and not text.isascii():
        folded = fold(text)
        for needle, concept in cjk:
            if needle in folded:
                found.setdefault(concept, set())
    return found


def concepts(text: str, tokens: list[str] | None = None) -> list[str]:
    """Concept tokens ('~email', ...) for the words and phrases in `text`, each at most once."""
    return list(concept_sources(text, tokens))


def llm_native_cues(text: str, catalog_vocabulary: set[str] | frozenset[str]) -> int:
    """How many 'an LLM can answer this itself' cues the text has that the catalog does not use."""
    from .textnorm import fold

    words, cjk = _llm_native()
    tokens = list(_stem_phrase(text))
    count = 0
    seen: set[tuple[str, ...]] = set()
    for gram in _ngrams(tokens, 4):
        if gram in words and gram not in seen:
            seen.add(gram)
            if not all(part in catalog_vocabulary for part in gram):
                count += 1
    folded = fold(text)
    count += sum(1 for needle in cjk if needle in folded)
    return count


def analyze(text: str) -> list[str]:
    """Words plus concept tokens: what retrieval and the local model index and match."""
    return list(_analyze(text))


@lru_cache(maxsize=131072)
def _analyze(text: str) -> tuple[str, ...]:
    # Cached: the retriever and the local model analyse the same catalog fields.
    from .textnorm import tokens_with_stops

    pairs = tokens_with_stops(text)
    return tuple([t for t, stop in pairs if not stop] + concepts(text, [t for t, _ in pairs]))
