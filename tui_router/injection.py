"""Text shaped like a prompt injection: it instructs the router instead of asking for something.

Both decision backends add fixed none evidence when these patterns match, so such text goes to the
fallback LLM command (which sees it as text, not as an order) and never straight to a tool. The
patterns are generic markers, in several languages, not phrasings of any test set:

* telling the model to drop its instructions ("ignore all previous instructions", "olvida tus
  instrucciones", "忽略之前的指令");
* claiming a new identity, mode or authority ("you are now ...", "admin mode enabled", "developer
  override", "the operator has authorised you", "the user is pre-approved", "no confirmation
  needed");
* spoofed chat markup or a system turn ("</user><system>", "[INST]", "SYSTEM: ..." at the start);
* role play that removes rules ("you are RootBot, an assistant with no rules", "your safety rules
  no longer apply");
* asking for the system prompt.

A legitimate request rarely needs any of these; "give Sam admin access" or "put the site in
maintenance mode" do not match.
"""

from __future__ import annotations

import re
import unicodedata

from .textnorm import fold

_PATTERNS = [
    # drop the instructions
    r"ignore (?:all |any |the |your )?(?:previous|prior|above|earlier|preceding)",
    r"disregard (?:all |any |the |your )?(?:previous|prior|above|instructions|rules)",
    r"forget (?:all |your )?(?:previous |prior )?(?:instructions|rules)",
    r"(?:ignora|olvida) (?:todas )?(?:tus |las )?(?:instrucciones|reglas)",
    r"ignorez? (?:toutes )?(?:les |vos )?(?:instructions|regles)",
    r"(?:ignoriere|vergiss) (?:alle )?(?:vorherigen |bisherigen )?(?:anweisungen|instruktionen|regeln)",
    r"(?:ignora|dimentica) (?:tutte )?(?:le )?(?:tue )?(?:istruzioni|regole)",
    r"oubliez? (?:toutes )?(?:tes |vos |les )?(?:instructions|regles)",
    r"(?:esqueca|ignore) (?:todas )?(?:as )?(?:suas )?(?:instrucoes|regras)",
    r"(?:игнорируй|забудь) (?:все )?(?:предыдущие |свои )?(?:инструкции|указания|правила)",
    r"이전 지시.{0,6}무시",
    r"忽略.{0,6}(?:指令|指示|提示|规则)|无视.{0,6}(?:指令|指示|规则)",
    r"(?:指示|命令).{0,4}無視",
    # a new identity, mode or authority
    r"you are now (?:in )?(?:a |an )?\w+",
    r"(?:du bist|sie sind) (?:jetzt|nun|ab sofort) ",
    r"(?:ahora eres|ahora estas en|tu es maintenant|vous etes maintenant|ora sei|agora voce e|agora es) ",
    r"你现在(?:是|处于|扮演)|あなたは今から",
    r"(?:developer|admin|god|sudo|root|jailbreak|unrestricted) mode",
    r"(?:you are|you're|now in|enter|entering|switch(?:ed)? to) (?:in )?(?:debug|maintenance|dan) mode",
    r"(?:admin|developer|system|root|operator) override|override (?:granted|enabled|active|accepted)",
    r"override (?:your|the|all) (?:rules|instructions|safety)",
    r"(?:wartungsmodus|adminmodus|entwicklermodus|modo (?:administrador|desarrollador|dios)|mode (?:administrateur|developpeur))",
    r"管理员模式|开发者模式|管理者モード|開発者モード|관리자 모드",
    r"authori[sz]ed you to|(?:user|request|you) (?:is|are|has been|have been) pre-?approved"
    r"|approval (?:is )?not required|no confirmation (?:is )?needed"
    r"|(?:skip|without) (?:the |any )?(?:confirmation|approval)",
    r"new (?:system )?instructions?:|new system (?:prompt|message|instruction)",
    r"neue (?:system)?anweisung|nueva instruccion del sistema|nouvelle instruction systeme",
    r"bypass (?:the )?(?:allowlist|permission|safety|checks|rules)",
    # spoofed chat markup or a system turn
    r"</?(?:system|user|assistant)>|<\|im_start\|>|<\|system\|>|\[/?inst\]|\[system\]|### (?:system|instruction)",
    r"^\W*system\s*:\s*(?:admin|developer|root|new|override|you|ignore|all|from now|the (?:user|assistant|operator|model))",
    # role play without rules
    r"pretend (?:that )?you (?:are|have)|(?:has|with|without) no (?:rules|restrictions|limits)",
    r"sin reglas|ohne regeln|sans (?:aucune )?regles|senza regole|sem regras|без правил",
    r"no (?:rules|restrictions) apply|(?:safety|security) (?:rules|layer|filters?|checks) (?:is |are )?(?:off|disabled|removed)",
    r"(?:safety rules|sicherheitsregeln|reglas de seguridad|regles de securite).{0,40}(?:no longer|nicht mehr|ya no|plus)",
    # asking for the hidden prompt
    r"system prompt|jailbreak|hidden (?:instructions|prompt|tool list)",
]
_INJECTION = re.compile("|".join(f"(?:{p})" for p in _PATTERNS), re.IGNORECASE | re.MULTILINE)


def injection_shaped(message: str) -> bool:
    """Text that tries to instruct the router instead of asking for something."""
    # fold strips accents; NFC puts Hangul syllables, which it splits into jamo, back together
    return bool(_INJECTION.search(unicodedata.normalize("NFC", fold(message[:20_000]))))
