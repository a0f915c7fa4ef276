"""Recognising pages that are a gate in front of the content, not the content.

Bot checks, CAPTCHAs and subscription walls are served with HTTP 200 often
enough that the status code cannot be trusted. Their text must never become
evidence ("Verify you are human" is not a finding), so they are recognised
here and refused. A long article that merely embeds a CAPTCHA widget for its
comment form is not refused: every rule requires the readable text to be
short as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# Below this many characters of main text a page is "just the gate".
SHORT_TEXT_CHARS = 1500

_CHALLENGE_TITLES = (
    "just a moment",
    "attention required",
    "access denied",
    "are you a robot",
    "are you human",
    "security check",
    "verify you are human",
    "human verification",
    "captcha",
    "ddos protection",
    "one more step",
    "checking your browser",
    "pardon our interruption",
    "request unsuccessful",
    "bot verification",
)
_CHALLENGE_MARKUP = (
    "g-recaptcha",
    "recaptcha/api.js",
    "h-captcha",
    "hcaptcha.com",
    "cf-turnstile",
    "challenges.cloudflare.com",
    "/cdn-cgi/challenge-platform",
    "cf-chl-",
    "captcha-delivery.com",
    "px-captcha",
    "_incapsula_resource",
    "awswaf-captcha",
    "distil_r_captcha",
)
_CHALLENGE_PHRASES = (
    "verify you are human",
    "verify that you are human",
    "verify you are not a robot",
    "checking if the site connection is secure",
    "checking your browser before accessing",
    "enable javascript and cookies to continue",
    "complete the security check",
    "please complete the captcha",
    "press and hold the button",
    "unusual traffic from your computer network",
    "needs to review the security of your connection",
)
_PAYWALL_PHRASES = (
    "subscribe to continue reading",
    "subscribe to read the full",
    "this article is for subscribers only",
    "this content is for subscribers",
    "available to subscribers only",
    "log in to continue reading",
    "sign in to continue reading",
    "to continue reading, please",
    "you have reached your limit of free articles",
    "become a member to read",
    "create a free account to continue reading",
)


@dataclass(frozen=True)
class Gate:
    """What stands in front of the content."""

    kind: Literal["challenge", "paywall"]
    clue: str


def detect_gate(*, title: str, main_text: str, raw_html: str) -> Gate | None:
    """Return the gate a page shows instead of its content, or None for a real page.

    ``raw_html`` should be the first part of the document (lower-cased by the
    caller or not; matching is case-insensitive); ``main_text`` is what the
    extractor kept.
    """
    if len(main_text) >= SHORT_TEXT_CHARS:
        return None
    title_l = title.lower()
    text_l = main_text.lower()
    html_l = raw_html.lower()
    visible_l = f"{title_l}\n{text_l}"
    markup = next((m for m in _CHALLENGE_MARKUP if m in html_l), None)
    phrase = next((p for p in _CHALLENGE_PHRASES if p in visible_l or p in html_l), None)
    titled = next((t for t in _CHALLENGE_TITLES if t in title_l), None)
    if markup or phrase:
        return Gate("challenge", markup or phrase or "")
    if titled and len(main_text) < 400:
        return Gate("challenge", titled)
    paywall = next((p for p in _PAYWALL_PHRASES if p in visible_l or p in html_l), None)
    if paywall:
        return Gate("paywall", paywall)
    return None
