"""Scholarly identifiers in one comparable form: DOIs, arXiv ids, PMIDs, PMCIDs and titles.

Every index writes these differently: Crossref says ``10.1037/ABC``, OpenAlex
``https://doi.org/10.1037/abc``, a reference list ``doi:10.1037/abc``; arXiv ids come bare, with
a version (``2403.01234v2``), with an ``arXiv:`` prefix or inside an abs/pdf/html URL. The
functions here turn each form into one normalised value, or refuse it (``None``) when it is not
a well-formed identifier, so that equal works compare equal and a malformed value never
pretends to be an identity. ``research.engine.works`` builds work identity on top of them.
"""

import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

__all__ = [
    "ArxivId",
    "MIN_TITLE_KEY_WORDS",
    "arxiv_id_from_doi",
    "arxiv_id_from_path",
    "doi_url",
    "ids_from_url",
    "normalize_doi",
    "normalize_pmcid",
    "normalize_pmid",
    "normalize_title",
    "parse_arxiv_id",
    "title_key",
]

# A DOI is "10." + a registrant code (digits, optionally subdivided by dots) + "/" + a suffix
# of any printable characters (the DOI Handbook, section 2.2). Case does not matter.
_DOI = re.compile(r"^10\.\d{4,9}(?:\.\d+)*/[^\s\x00-\x1f\x7f]+$")
# Longer than any DOI an index hands out; a bound so a hostile value cannot bloat a key.
MAX_DOI_CHARS = 300
_DOI_PREFIXES = ("doi:", "info:doi/", "urn:doi:", "doi ")
_DOI_HOSTS = frozenset({"doi.org", "dx.doi.org", "www.doi.org", "hdl.handle.net"})
# arXiv registers a DataCite DOI for every paper: 10.48550/arXiv.<id>. It names the preprint,
# which is the same work as its published version, so it is read as the arXiv id.
_ARXIV_DOI = re.compile(r"^10\.48550/arxiv\.(.+)$", re.IGNORECASE)
# Publisher platforms (Atypon, Wiley, ACM, SAGE, Taylor & Francis...) put the DOI in the path
# after /doi/ and an optional view name: /doi/10.1145/x, /doi/pdf/10.1080/y.
_DOI_PATH = re.compile(
    r"/doi/(?:(?:abs|full|pdf|pdfdirect|epdf|epub|reader|fulltext|book)/)?(10\.\d{4,9}(?:\.\d+)*/.+)$",
    re.IGNORECASE,
)

# New-style ids (since April 2007): YYMM.NNNN until 2014, YYMM.NNNNN from 2015 on.
_ARXIV_NEW = re.compile(r"^(\d{2})(\d{2})\.(\d{4,5})(?:v(\d+))?$")
# Old-style ids: archive[.subject-class]/YYMMNNN; the subject class is not part of the id.
_ARXIV_OLD = re.compile(r"^([a-z]+(?:-[a-z]+)?)(?:\.[a-z-]+)?/(\d{2})(\d{2})(\d{3})(?:v(\d+))?$")
_ARXIV_PREFIX = re.compile(r"^arxiv\s*:\s*", re.IGNORECASE)
_ARXIV_PATH = re.compile(r"^/(?:abs|pdf|html|format|ps|src)/(.+?)(?:\.pdf)?/?$", re.IGNORECASE)
_ARXIV_HOSTS = ("arxiv.org", "xxx.lanl.gov")

# PMIDs are sequential integers, eight digits today; one more digit leaves room to grow.
MAX_PMID_DIGITS = 9
_PMID = re.compile(rf"^\d{{1,{MAX_PMID_DIGITS}}}$")
_PMID_PREFIX = re.compile(r"^pmid\s*:?\s*", re.IGNORECASE)
# PMCIDs are "PMC" + an integer (seven or eight digits today).
_PMCID = re.compile(r"^(?:pmc)?\s*(\d{1,10})$", re.IGNORECASE)
_PUBMED_HOSTS = frozenset({"pubmed.ncbi.nlm.nih.gov", "www.ncbi.nlm.nih.gov", "ncbi.nlm.nih.gov"})
_PMC_HOSTS = frozenset({"pmc.ncbi.nlm.nih.gov", "www.ncbi.nlm.nih.gov", "ncbi.nlm.nih.gov"})
_EUROPE_PMC_HOSTS = frozenset({"europepmc.org", "www.europepmc.org"})

# Titles of one to three words ("Editorial", "Book reviews", "Reply to comment") recur in many
# venues every year; such a title and a year do not single out one work.
MIN_TITLE_KEY_WORDS = 4
_TITLE_PASSES = 4


def doi_url(doi: str) -> str:
    """The resolver address of a DOI (``https://doi.org/…``), percent-encoding the characters
    a URL cannot carry; the form Crossref asks DOIs to be displayed in."""
    return "https://doi.org/" + quote(doi, safe="/:;()._-~!*'")


def normalize_doi(value: str) -> str | None:
    """The DOI in ``value`` in lower case without prefix or resolver, or ``None``.

    Accepts a bare DOI (``10.5555/ABC``), the prefixed forms ``doi:``, ``DOI ``, ``info:doi/``
    and ``urn:doi:``, and resolver URLs (``https://doi.org/…``, ``http://dx.doi.org/…``, also
    percent-encoded). DOIs are case-insensitive, so ``10.5555/ABC`` and ``10.5555/abc`` are one.
    """
    if not isinstance(value, str):
        return None
    text = value.strip()
    lowered = text.lower()
    if lowered.startswith(("http://", "https://")) or lowered.startswith(
        tuple(f"{host}/" for host in _DOI_HOSTS)
    ):
        parts = urlsplit(text if "://" in text else f"https://{text}")
        if (parts.hostname or "") not in _DOI_HOSTS:
            return None
        text = unquote(parts.path.lstrip("/"))
        lowered = text.lower()
    for prefix in _DOI_PREFIXES:
        if lowered.startswith(prefix):
            text = text[len(prefix) :].strip()
            break
    doi = text.lower()
    if len(doi) > MAX_DOI_CHARS or not _DOI.match(doi):
        return None
    return doi


@dataclass(frozen=True)
class ArxivId:
    """An arXiv identifier: ``base`` (``2403.01234`` or ``hep-th/9901001``) and its version.

    The base is the work's identity; the version tells variants of one work apart.
    """

    base: str
    version: int | None = None

    def __str__(self) -> str:
        return f"{self.base}v{self.version}" if self.version else self.base


def parse_arxiv_id(value: str) -> ArxivId | None:
    """The arXiv id in ``value``, or ``None``.

    Accepts new-style (``2403.01234``, ``0704.0001v2``) and old-style (``hep-th/9901001``,
    ``math.GT/0309136``) ids, with or without an ``arXiv:`` prefix, and the arXiv DataCite DOI
    (``10.48550/arXiv.2403.01234``). Impossible ids are refused: a month outside 01–12, a new-style
    id before 0704, a four-digit number after 2014 or a five-digit one before 2015.
    """
    if not isinstance(value, str):
        return None
    text = _ARXIV_PREFIX.sub("", value.strip())
    from_doi = _ARXIV_DOI.match(text)
    if from_doi:
        text = from_doi.group(1)
    new = _ARXIV_NEW.match(text)
    if new:
        year, month, number, version = new.groups()
        yymm = int(year + month)
        if not 1 <= int(month) <= 12 or yymm < 704:
            return None
        if (len(number) == 4) != (yymm < 1501):
            return None
        return _with_version(f"{year}{month}.{number}", version)
    old = _ARXIV_OLD.match(text.lower())
    if old:
        archive, year, month, number, version = old.groups()
        # Old-style ids ran from August 1991 to March 2007.
        if not 1 <= int(month) <= 12 or not (int(year) >= 91 or int(year + month) <= 703):
            return None
        return _with_version(f"{archive}/{year}{month}{number}", version)
    return None


def _with_version(base: str, version: str | None) -> ArxivId | None:
    if version is None:
        return ArxivId(base)
    number = int(version)
    return ArxivId(base, number) if number >= 1 else None


def arxiv_id_from_path(path: str) -> ArxivId | None:
    """The arXiv id in an arXiv URL path (``/abs/<id>``, ``/pdf/<id>[.pdf]``, ``/html/<id>``,
    ``/format/<id>``), or ``None``. The host is not checked: use it for URLs an arXiv service
    named itself; ``ids_from_url`` checks the host for URLs of unknown origin."""
    match = _ARXIV_PATH.match(unquote(path or ""))
    if not match:
        return None
    rest = match.group(1)
    # An HTML rendering may carry a sub-path (/html/2403.01234v1/#S2 or .../x1.png).
    found = parse_arxiv_id(rest)
    if found is None and "/" in rest:
        head, _, tail = rest.partition("/")
        found = parse_arxiv_id(head)
        if found is None:
            second, _, _ = tail.partition("/")
            found = parse_arxiv_id(f"{head}/{second}")
    return found


def arxiv_id_from_doi(doi: str | None) -> ArxivId | None:
    """The arXiv id behind an arXiv DataCite DOI (``10.48550/arxiv.2403.01234``), else ``None``."""
    if not doi:
        return None
    match = _ARXIV_DOI.match(doi.strip())
    return parse_arxiv_id(match.group(1)) if match else None


def normalize_pmid(value: str | int) -> str | None:
    """A PubMed id as digits without leading zeros (``PMID: 0123`` → ``123``), or ``None``."""
    text = _PMID_PREFIX.sub("", str(value).strip())
    if not text.isascii() or not text.isdigit():
        return None
    digits = text.lstrip("0")
    return digits if _PMID.match(digits) else None


def normalize_pmcid(value: str | int) -> str | None:
    """A PubMed Central id as ``PMC`` + digits (``pmc0123``, ``123`` → ``PMC123``), or ``None``."""
    match = _PMCID.match(str(value).strip())
    if not match or int(match.group(1)) == 0:
        return None
    return f"PMC{int(match.group(1))}"


def ids_from_url(url: str) -> dict[str, str]:
    """The identifiers a well-known scholarly URL carries, by kind (``doi``, ``arxiv``,
    ``pmid``, ``pmcid``; arXiv ids without their version).

    Recognised: DOI resolvers (doi.org, dx.doi.org) and the ``/doi/<DOI>`` path publisher
    platforms use; arXiv abs/pdf/html pages (arxiv.org and its subdomains); PubMed records;
    PubMed Central and Europe PMC articles. Any other URL carries no identifier.
    """
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower().rstrip(".")
    except (AttributeError, ValueError):
        return {}
    if parts.scheme.lower() not in ("http", "https") or not host:
        return {}
    path = parts.path
    found: dict[str, str] = {}
    if host in _DOI_HOSTS:
        doi = normalize_doi(unquote(path.lstrip("/")))
        if doi:
            _add_doi(found, doi)
        return found
    if any(host == known or host.endswith("." + known) for known in _ARXIV_HOSTS):
        arxiv = arxiv_id_from_path(path)
        if arxiv:
            found["arxiv"] = arxiv.base
        return found
    if host in _PUBMED_HOSTS:
        segments = [s for s in path.split("/") if s]
        if host == "pubmed.ncbi.nlm.nih.gov" and len(segments) == 1:
            pmid = normalize_pmid(segments[0])
        elif len(segments) == 2 and segments[0] == "pubmed":
            pmid = normalize_pmid(segments[1])
        else:
            pmid = None
        if pmid:
            found["pmid"] = pmid
    if host in _PMC_HOSTS:
        segments = [s for s in path.split("/") if s]
        if segments[:1] == ["pmc"]:
            segments = segments[1:]
        if len(segments) >= 2 and segments[0] == "articles":
            pmcid = normalize_pmcid(segments[1])
            if pmcid:
                found["pmcid"] = pmcid
    if host in _EUROPE_PMC_HOSTS:
        segments = [s for s in path.split("/") if s]
        if len(segments) >= 3 and segments[0] in ("article", "abstract"):
            source, record = segments[1].upper(), segments[2]
            if source == "MED" and normalize_pmid(record):
                found["pmid"] = normalize_pmid(record) or ""
            elif source == "PMC" and normalize_pmcid(record):
                found["pmcid"] = normalize_pmcid(record) or ""
    if found:
        return found
    in_path = _DOI_PATH.search(unquote(path))
    if in_path:
        doi = normalize_doi(in_path.group(1))
        if doi:
            _add_doi(found, doi)
    return found


def _add_doi(found: dict[str, str], doi: str) -> None:
    arxiv = arxiv_id_from_doi(doi)
    if arxiv:
        found["arxiv"] = arxiv.base
    else:
        found["doi"] = doi


def normalize_title(title: str) -> str:
    """A title in comparable form: case folded, accents and compatibility forms folded
    (``ﬁ`` → ``fi``, ``é`` → ``e``), every character that is not a letter or a digit made a
    space, whitespace collapsed."""
    if not isinstance(title, str):
        return ""
    text = title
    # Folding can expose characters that fold again (casefold's special cases, letters that
    # decompose into letter + mark); repeating until nothing changes makes the result a fixed
    # point. Two passes settle every string we know of; the bound only guards against a loop.
    for _ in range(_TITLE_PASSES):
        folded = _fold_title(text)
        if folded == text:
            break
        text = folded
    return text


def _fold_title(text: str) -> str:
    kept = []
    for char in unicodedata.normalize("NFKD", text.casefold()):
        if unicodedata.combining(char):
            continue
        kept.append(char if unicodedata.category(char)[0] in "LN" else " ")
    return " ".join("".join(kept).split())


def title_key(title: str, year: int | None) -> str | None:
    """The weakest work key: normalised title and year, or ``None`` when the year is unknown or
    the title has fewer than ``MIN_TITLE_KEY_WORDS`` words."""
    if year is None:
        return None
    words = normalize_title(title).split()
    if len(words) < MIN_TITLE_KEY_WORDS:
        return None
    return f"{' '.join(words)}|{year}"
