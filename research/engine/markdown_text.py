"""Untrusted text made inert in Markdown: escaping, excerpts with line breaks, code fences and
link destinations (used by ``research.engine.citations`` to render reports)."""

import re

__all__ = ["escape_markdown", "escape_markdown_lines", "markdown_code", "markdown_url"]

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#!|~&])")
_MD_BLOCK_START = re.compile(r"^([-+=>])|^(\d+)([.)])")


def escape_markdown(text: str) -> str:
    """Make untrusted text inert in Markdown: one line, special characters backslash-escaped,
    block markers at the start escaped and bare URLs broken so renderers do not auto-link."""
    line = " ".join(text.split())
    line = _MD_SPECIAL.sub(r"\\\1", line)
    # A leading "-", "+", ">", "=" or "1." would start a list, quote or heading underline.
    line = _MD_BLOCK_START.sub(
        lambda m: "\\" + m.group(1) if m.group(1) else m.group(2) + "\\" + m.group(3), line
    )
    line = re.sub(r"(?i)(\w)://", r"\1:\\/\\/", line)
    return re.sub(r"(?i)\bwww\.", r"www\\.", line)


def escape_markdown_lines(text: str, *, indent: int) -> str:
    """Like :func:`escape_markdown`, but the line breaks of ``text`` (an excerpt of
    consecutive blocks) stay: each line is escaped and ends with a hard break, the next is
    indented by ``indent`` spaces so it stays inside its list item. Tabs between table cells
    stay tabs."""
    lines = [
        "\t".join(escape_markdown(cell) for cell in line.split("\t"))
        for line in text.splitlines()
        if line.strip()
    ]
    return ("\\\n" + " " * indent).join(lines)


def markdown_code(code: str, *, indent: int) -> str:
    """A code excerpt as a fenced block inside a list item: the fence is longer than any run
    of backticks in the code, so nothing in it can end the block."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    pad = " " * indent
    body = "\n".join(pad + line if line else "" for line in code.splitlines())
    return f"\n\n{pad}{fence}\n{body}\n{pad}{fence}"


def markdown_url(url: str) -> str:
    """``url`` safe as a Markdown link destination (parentheses and spaces would end it)."""
    return url.replace("(", "%28").replace(")", "%29").replace(" ", "%20")
