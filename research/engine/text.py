"""Text folding and the English month names, shared by the engine, the extractive backend and
the date reader of research/sources."""

import unicodedata


def fold(text: str) -> str:
    """``text`` in matching form: compatibility-decomposed (NFKD), accents (combining marks)
    dropped and case-folded — "Électricité" and "electricite" fold alike."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


# English month names and their usual abbreviations, to the month's number.
MONTHS: dict[str, int] = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
