"""Text folding shared by the engine and the extractive backend."""

import unicodedata


def fold(text: str) -> str:
    """``text`` in matching form: compatibility-decomposed (NFKD), accents (combining marks)
    dropped and case-folded — "Électricité" and "electricite" fold alike."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()
