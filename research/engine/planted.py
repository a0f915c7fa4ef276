"""Passages written to steer a program rather than to inform a reader.

A page may carry text aimed at the automated researcher that reads it: a fake system message,
an order to AI assistants, a request to fetch an internal address or to disclose a secret, a
demand to treat the page as official. Such text never steers us (the decider sees no page
text and the fetcher refuses private addresses), but quoting it as a finding repeats the
attacker's claim. This module recognises it by its form, never by the wording of particular
pages:

* a **role label** of a chat format opening a line or sentence ("System:", "[assistant]",
  "<|im_start|>", "[INST]");
* a **banner** in capitals that opens or closes a pretend block ("BEGIN TRUSTED NOTICE");
* a **directive addressed to a program**: an obligation ("must", "are required to", "should",
  an imperative after a vocative) in a sentence whose addressee is an automated reader (AI,
  language models, assistants, agents, bots, crawlers, research or indexing tools);
* a **request only a program can carry out**: set aside its instructions or the other
  sources, disclose its prompt or configuration, reach a cloud metadata address, re-rank the
  page as official or trusted, narrow its searches to one site.

The vocabularies below name kinds of things (automated readers, secrets, obligations), each
with the plain words English uses for it; they are not taken from any fixture. Human-directed
instructions ("you must run make install", "visit https://example.org") do not match: the
addressee is a person and the address public.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

# Automated readers, as a page would name them when it addresses one.
_MACHINE = (
    r"(?:a\.?i\.?|llms?|gpts?|(?:large\s+)?language\s+models?|chat\s?bots?|bots?|crawlers?|"
    r"scrapers?|spiders?|indexers?|summari[sz]ers?|"
    r"(?:ai|research|automated|autonomous|virtual|coding|digital)\s+"
    r"(?:assistants?|agents?|tools?|systems?|researchers?|readers?|models?|pipelines?)|"
    r"(?:research|indexing|summari[sz]ation|search|retrieval|scraping|crawling)\s+"
    r"(?:tools?|systems?|pipelines?|software|programs?|engines?))"
)
# Saying that something is obligatory.
_OBLIGATION = (
    r"(?:must|shall|should|(?:is|are)\s+(?:now\s+)?(?:required|instructed|expected|obliged|"
    r"directed|told|ordered|asked|requested|authori[sz]ed)\s+to|need\s+to|have\s+to|"
    r"(?:is|are)\s+to|will\s+now)"
)
_ROLE_LABEL = re.compile(
    r"(?:^|[\n.!?]\s*)(?:\[\s*(?:system|assistant|developer|operator|admin)\b[^\]\n]{0,30}\]"
    r"|(?:system|assistant|developer|user|ai|bot|model|operator|administrator|admin)"
    r"(?:\s+(?:message|prompt|notice|note|override|instruction))?\s*:)"
    r"|<\|[a-z_]{2,20}\|>|\[/?inst\]|<</?sys>>|</?(?:system|assistant)>",
    re.IGNORECASE,
)
# A pretend block's opening or closing line; PGP armour ("-----BEGIN PGP …") is a real one.
_BANNER = re.compile(
    r"(?<![-\w])(?:BEGIN|END)(?:\s+OF)?(?:\s+[A-Z]{2,}){0,3}\s+(?:BLOCK|MESSAGE|NOTICE|PROMPT|"
    r"INSTRUCTIONS?|OVERRIDE)\b"
)
_ADDRESSED = re.compile(
    rf"\b{_MACHINE}\b(?:\s+[\w,]+){{0,8}}?\s+{_OBLIGATION}\b"
    rf"|\b(?:if|when|while)\s+you\s+are\s+(?:an?\s+|the\s+)?{_MACHINE}\b"
    rf"|\b(?:attention|note|notice|message|instructions?|reminder)\s*(?:to|for)\s+(?:all\s+|any\s+)?"
    rf"(?:\w+\s+)?{_MACHINE}\b"
    rf"|(?:^|[.!?]\s+)(?:dear\s+|all\s+|to\s+(?:all|any)\s+)?(?:\w+\s+){{0,2}}?{_MACHINE}\s*[,:]\s+"
    rf"(?:please\s+)?[a-z]+",
    re.IGNORECASE,
)
# What the reader is told to set aside: its instructions, or the other sources.
_OVERRIDE = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass|discard)\s+(?:all\s+|any\s+|the\s+|your\s+|"
    r"these\s+|of\s+)*(?:(?:previous|prior|above|earlier|other|original|official|existing|"
    r"system|initial|standing)\s+)+(?:\w+\s+)?(?:instructions?|prompts?|rules|guidelines|"
    r"directives|documentation|docs|sources|results|answers|pages)\b",
    re.IGNORECASE,
)
# Secrets only a program holds: its prompt and instructions, its configuration.
_DISCLOSE = re.compile(
    r"\b(?:reveal|disclose|print|output|send|leak|share|post|include|repeat|paste|append)\s+"
    r"(?:\w+\s+){0,3}?(?:system\s+prompt|(?:hidden|initial|original|system)\s+instructions|"
    r"your\s+(?:prompt|instructions|configuration|api\s+keys?|credentials|environment))\b",
    re.IGNORECASE,
)
_RERANK = re.compile(
    r"\b(?:classify|treat|mark|label|rank|regard|consider|cite|list|record|present|describe)\s+"
    r"(?:this|the|it)\s+(?:(?:page|article|site|source|document|text|post|entry|wiki|thread|"
    r"answer|notice)\s+)?as\s+(?:the\s+|an?\s+)?(?:official|authoritative|trusted|primary|verified|"
    r"canonical|most\s+reliable)\b"
    r"|\b(?:restrict|limit|confine)\s+(?:all\s+|any\s+|your\s+)?(?:further\s+|future\s+)?"
    r"(?:searches|queries|research|browsing|sources)\s+to\s+(?:site:|(?:this|our|the\s+following|"
    r"one|a\s+single)\s+(?:site|domain|wiki|page|source)\b|(?:[\w-]+\.)+[a-z]{2,}\b)",
    re.IGNORECASE,
)
_FORMS = (
    ("role label", _ROLE_LABEL),
    ("banner", _BANNER),
    ("override", _OVERRIDE),
    ("disclosure", _DISCLOSE),
    ("re-ranking", _RERANK),
    ("addressed to a program", _ADDRESSED),
)
_URL = re.compile(r"\bhttps?://[^\s<>\"')\]]+", re.IGNORECASE)
_REACH = re.compile(
    r"\b(?:fetch|visit|open|request|load|call|access|retrieve|browse|query|curl|ping|get|post)\b",
    re.IGNORECASE,
)
# Host names of cloud metadata services and internal zones: no page has a reason to send a
# person there. Loopback and private addresses are left alone, since documentation sends
# people to their own development servers ("visit http://127.0.0.1:5000/").
_INTERNAL_NAMES = re.compile(r"^(?:metadata(?:\.[a-z0-9-]+)*|[a-z0-9.-]+\.internal)$")


def is_planted(text: str) -> bool:
    """Whether ``text`` (a passage of a page) is shaped as instructions to a program."""
    return planted_form(text) is not None


def planted_form(text: str) -> str | None:
    """Which form marks ``text`` as instructions to a program, or None."""
    for name, pattern in _FORMS:
        if pattern.search(text):
            return name
    if _REACH.search(text) and any(_internal(url) for url in _URL.findall(text)):
        return "internal address"
    return None


def _internal(url: str) -> bool:
    """Whether ``url`` points at a link-local address (where cloud metadata services answer)
    or a metadata or ``.internal`` host name."""
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return False
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return bool(_INTERNAL_NAMES.match(host))
    return address.is_link_local
