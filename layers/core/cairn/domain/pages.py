"""gbrain pages, as text: slugs, the page format (frontmatter, compiled truth, timeline) and the
fields derived from it. Pure functions; services/gbrain/pages.py stores pages as documents.

A page's text is YAML frontmatter between two bare `---` lines (scalar values only), then the
compiled truth, a bare `---` line, and the timeline. Parsing keeps what the format can carry and
rendering writes a normal form, so `parse(render(parse(x)))` equals `parse(x)` plus the two keys
render adds (`gbrain_id`, and `slug` set to the canonical `collection::slug`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

from cairn.domain.errors import CairnError, InvalidInput
from cairn.domain.text import SURROGATE

MAX_SLUG_BYTES = 512
MAX_CONTENT_BYTES = 1_048_576
MAX_TAG_CHARS = 64
MAX_TAGS_PER_CALL = 100
MAX_TAGS_PER_PAGE = 1000  # each kept twice in the page's record: well inside a DynamoDB item
MAX_LIMIT = 1000
SUMMARY_CHARS = 200
DEFAULT_COLLECTION = "default"
DEFAULT_TYPE = "concept"
GENERAL_WING = "general"
SEPARATOR = "---"
QUALIFIER = "::"

_SLUG_CHARS = re.compile(r"[a-z0-9/_-]+")
_TAG_CHARS = re.compile(r"[a-z0-9_-]+")
_ROOM_DROP = re.compile(r"[^a-z0-9-]")


# -- errors the gbrain surface maps onto its own codes -------------------------------------------


class InvalidSlug(InvalidInput):
    """A slug or collection name outside the rules (the surface's invalid-params error)."""


class AmbiguousSlug(CairnError):
    """A bare slug that names pages in several collections; `candidates` are `coll::slug`, sorted."""

    code = "ambiguous_slug"

    def __init__(self, slug: str, candidates: Iterable[str]) -> None:
        super().__init__(f"AmbiguityError: slug `{slug}` matches multiple collections")
        self.candidates = sorted(candidates)


class CollectionRestoring(CairnError):
    """The collection is being restored or needs a full re-sync: it refuses every mutation."""

    code = "collection_restoring"

    def __init__(self, collection: str, state: str, needs_full_sync: bool) -> None:
        flag = "true" if needs_full_sync else "false"
        super().__init__(
            f"CollectionRestoringError: collection={collection} state={state} needs_full_sync={flag}"
        )
        self.collection = collection
        self.state = state
        self.needs_full_sync = needs_full_sync


class CollectionReadOnly(CairnError):
    code = "collection_read_only"

    def __init__(self, collection: str) -> None:
        super().__init__(f"CollectionReadOnlyError: collection={collection}")
        self.collection = collection


# -- slugs ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SlugRef:
    """A caller's page reference: a slug, and the collection when it was qualified (`coll::slug`)."""

    slug: str
    collection: str | None = None


def split_qualified(text: str) -> SlugRef:
    """Split `coll::slug` at the first `::` without validating either part."""
    collection, sep, slug = text.partition(QUALIFIER)
    return SlugRef(slug=slug, collection=collection) if sep else SlugRef(slug=text)


def parse_slug_ref(text: str) -> SlugRef:
    """A valid reference: the slug's rules, and for `coll::slug` the collection name's too."""
    ref = split_qualified(text)
    if ref.collection is not None:
        validate_collection_name(ref.collection)
    return SlugRef(slug=validate_slug(ref.slug), collection=ref.collection)


def validate_slug(slug: str) -> str:
    """`slug` when it is a relative path of `[a-z0-9/_-]` without empty segments, at most
    MAX_SLUG_BYTES; InvalidSlug otherwise."""
    if not isinstance(slug, str) or not slug:
        raise InvalidSlug("invalid slug: must not be empty")
    if len(slug.encode("utf-8", "surrogatepass")) > MAX_SLUG_BYTES:
        raise InvalidSlug(f"invalid slug: exceeds maximum length of {MAX_SLUG_BYTES} characters")
    if slug.startswith(("/", "\\")):  # a drive prefix (`c:`) fails the character rule
        raise InvalidSlug("invalid slug: must be a relative path")
    if not _SLUG_CHARS.fullmatch(slug):
        raise InvalidSlug("invalid slug: allowed characters are [a-z0-9/_-]")
    if "" in slug.split("/"):
        raise InvalidSlug("invalid slug: must not contain empty path segments")
    return slug


def is_slug(text: str) -> bool:
    try:
        validate_slug(text)
    except InvalidSlug:
        return False
    return True


def validate_collection_name(name: str) -> str:
    if not name:
        raise InvalidSlug("invalid slug: collection name must not be empty")
    if not _SLUG_CHARS.fullmatch(name):
        raise InvalidSlug("invalid slug: allowed characters are [a-z0-9/_-]")
    return name


def qualified(collection: str, slug: str) -> str:
    return f"{collection}{QUALIFIER}{slug}"


def validate_tags(tags: Iterable[str], *, removing: bool = False) -> list[str]:
    """Tags a page may be given; `removing`: tags to take off a page, which may be any it has
    (another surface may have tagged it "Green Tea"), so their characters are not checked."""
    found = list(tags)
    if len(found) > MAX_TAGS_PER_CALL:
        raise InvalidInput(f"too many tags: at most {MAX_TAGS_PER_CALL} per call")
    for tag in found:
        if not isinstance(tag, str) or not tag:
            raise InvalidInput("invalid tag: must not be empty")
        if len(tag) > MAX_TAG_CHARS:
            raise InvalidInput(f"invalid tag: exceeds maximum length of {MAX_TAG_CHARS} characters")
        if not removing and not _TAG_CHARS.fullmatch(tag):
            raise InvalidInput("invalid tag: allowed characters are [a-z0-9_-]")
    return found


# -- the page format -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PageText:
    frontmatter: dict[str, str] = field(default_factory=dict)
    compiled_truth: str = ""
    timeline: str = ""


def parse_page(content: str) -> PageText:
    """Frontmatter between a first line that is exactly `---` and the next bare `---` line (no
    closing line: no frontmatter); the body splits at its first bare `---` line into compiled
    truth (trailing newlines stripped) and timeline (no such line: no timeline)."""
    body = content
    frontmatter: dict[str, str] = {}
    lines = _lines(content)
    if lines and _is_separator(lines[0]):
        closing = next((i for i in range(1, len(lines)) if _is_separator(lines[i])), None)
        if closing is not None:
            frontmatter = parse_frontmatter("".join(lines[1:closing]))
            body = "".join(lines[closing + 1 :])
    body_lines = _lines(body)
    cut = next((i for i, line in enumerate(body_lines) if _is_separator(line)), None)
    if cut is None:
        return PageText(frontmatter, _strip_newlines(body), "")
    return PageText(frontmatter, _strip_newlines("".join(body_lines[:cut])), "".join(body_lines[cut + 1 :]))


def render_page(text: PageText, *, canonical_slug: str, gbrain_id: str) -> str:
    """Frontmatter sorted by key with `gbrain_id` and the canonical `slug` set, the compiled truth
    ending in a newline, the separator (always), then the timeline."""
    frontmatter = {**text.frontmatter, "gbrain_id": gbrain_id, "slug": canonical_slug}
    lines = [f"{_yaml_key(key)}: {_yaml_text(frontmatter[key])}" for key in sorted(frontmatter)]
    compiled = text.compiled_truth if text.compiled_truth.endswith("\n") else text.compiled_truth + "\n"
    head = "\n".join([SEPARATOR, *lines, SEPARATOR]) + "\n"
    return f"{head}{compiled}{SEPARATOR}\n{text.timeline}"


def parse_frontmatter(source: str) -> dict[str, str]:
    """The scalar entries of a YAML mapping, as text (null is ""); lists and maps are dropped;
    anything but a valid YAML mapping is no frontmatter at all."""
    simple = _simple_frontmatter(source)
    return simple if simple is not None else _yaml_frontmatter(source)


# `key: value` lines whose value is plain text that no YAML resolver claims (it starts with a
# letter, so only the null and bool words could be read as anything but itself): what the YAML
# loader makes of them is the text, so they need no parser. PyYAML's pure-Python parser took 80 %
# of brain_graph's time (a frontmatter per node) on such frontmatter.
_SIMPLE_LINE = re.compile(
    r"([A-Za-z_][A-Za-z0-9_-]*): +([A-Za-z](?:[A-Za-z0-9 _,.()/-]*[A-Za-z0-9_,.()/-])?)"
)
_RESOLVED_WORDS = frozenset({"null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE"})


def _simple_frontmatter(source: str) -> dict[str, str] | None:
    """The entries when every line is a simple `key: value` (or empty), else None."""
    out: dict[str, str] = {}
    for line in source.split("\n"):
        if not line:
            continue
        match = _SIMPLE_LINE.fullmatch(line)
        if match is None:
            return None
        key, value = match.groups()
        if key in _RESOLVED_WORDS or value in _RESOLVED_WORDS:
            return None
        out[key] = value
    return out or None


def _yaml_frontmatter(source: str) -> dict[str, str]:
    try:
        loader = _ScalarLoader(source)  # a SafeLoader: no arbitrary objects
        try:
            node = loader.get_single_node()
            if node is None or _merged_pairs(node) > MAX_MERGED_PAIRS:
                return {}
            loaded = loader.construct_document(node)  # what yaml.load does after the check
        finally:
            loader.dispose()
    except (yaml.YAMLError, ValueError, RecursionError, OverflowError):
        return {}
    if not isinstance(loaded, dict):
        return {}
    out: dict[str, str] = {}
    for key, value in loaded.items():
        if key is None or isinstance(key, list | dict | tuple) or isinstance(value, list | dict):
            continue
        name, text = _scalar(key), _scalar(value)
        if name is not None and text is not None:
            out[name] = text
    return out


MAX_MERGED_PAIRS = 300_000
"""More entries than 1 MiB of YAML can write (each takes at least 4 bytes): only merge keys
(`<<: *anchor`) copying maps into maps pass it, and a frontmatter that does is none at all."""


def _merged_pairs(root: yaml.Node) -> int:
    """The entries of every mapping of the document once its merge keys are expanded, as the
    loader would build them. Each map merged into the next (`m2: &m2 {<<: *m1, k2: 2}`) copies
    all the keys before it: 4,000 such maps (154 KB) took 6 s to load, and 1 MiB of them would
    take minutes and gigabytes (the square of their number)."""
    sizes: dict[int, int] = {}
    seen: set[int] = set()  # an anchor may hold itself (`&m {x: *m}`)
    total = 0
    pending: list[tuple[yaml.Node, bool]] = [(root, False)]
    while pending and total <= MAX_MERGED_PAIRS:
        node, ready = pending.pop()
        if id(node) in sizes or (not ready and id(node) in seen):
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            sizes[id(node)] = 0
            pending += [(child, False) for child in node.value]
        elif isinstance(node, yaml.MappingNode):
            merged = [v for k, v in node.value if k.tag == "tag:yaml.org,2002:merge"]
            sources = [m for v in merged for m in (v.value if isinstance(v, yaml.SequenceNode) else [v])]
            sources = [m for m in sources if isinstance(m, yaml.MappingNode)]
            if not ready:
                pending.append((node, True))
                pending += [(m, False) for m in sources]
                pending += [(v, False) for k, v in node.value if k.tag != "tag:yaml.org,2002:merge"]
                continue
            size = len(node.value) - len(merged) + sum(sizes.get(id(m), 0) for m in sources)
            sizes[id(node)] = size
            total += size
        else:
            sizes[id(node)] = 0
    return total


def _lines(text: str) -> list[str]:
    """Lines with their `\\n` kept; only `\\n` ends a line (str.splitlines breaks at more)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def _is_separator(line: str) -> bool:
    return line.removesuffix("\n").removesuffix("\r") == SEPARATOR


def _strip_newlines(text: str) -> str:
    """`text` without its trailing run of CR and LF. Not `[\\r\\n]+\\Z`: the regex tried every
    position of a run that does not end the text, so a page of 1 MB of `\\r` then a letter took
    half an hour to read."""
    return text.rstrip("\r\n")


# -- YAML: scalars only, YAML 1.2-style (dates stay text, `yes` is text, `007` is 7) -----------------


class _ScalarLoader(yaml.SafeLoader):
    pass


_DROPPED_TAGS = {
    "tag:yaml.org,2002:timestamp",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
}
_ScalarLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in _DROPPED_TAGS]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_ScalarLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_ScalarLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^[-+]?[0-9]+$"), list("-+0123456789")
)
_ScalarLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+.0123456789"),
)


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return str(int(str(loader.construct_scalar(node)), 10))


def _construct_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    value = str(loader.construct_scalar(node)).lower()
    if value.endswith(".inf"):
        return "-.inf" if value.startswith("-") else ".inf"
    if value == ".nan":
        return ".nan"
    return repr(float(value))


def _construct_bool(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node)).lower()


_ScalarLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_ScalarLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)
_ScalarLoader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)


def _scalar(value: Any) -> str | None:
    """Text of a loaded scalar (numbers and booleans arrive as text already); None: not a scalar."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _whole_characters(value)
    if isinstance(value, int | float):
        return str(value)
    return None  # bytes (!!binary), sets and other constructed values


def _whole_characters(text: str) -> str:
    """YAML's `\\u` escapes can spell halves of a UTF-16 pair: a pair is joined into its
    character, a lone half becomes U+FFFD. A text holding a lone half cannot be encoded, so every
    reply that showed it failed."""
    if SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


_YAML_NON_PRINTABLE = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def _yaml_key(key: str) -> str:
    """A key plain when it is a simple word that reads back as itself, else double-quoted."""
    return key if _PLAIN_KEY.fullmatch(key) and _reads_back(key, as_key=True) else _quoted(key)


def _yaml_text(value: str) -> str:
    """`value` as YAML that reads back as the same text: plain when it does, else double-quoted."""
    if "\n" not in value and not _YAML_NON_PRINTABLE.search(value) and _reads_back(value):
        return value
    return _quoted(value)


def _quoted(value: str) -> str:
    out = []
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif _YAML_NON_PRINTABLE.match(ch) or ch in "\r\x85\u2028\u2029":
            out.append(_escape(ord(ch)))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _escape(point: int) -> str:
    if point < 0x100:
        return f"\\x{point:02x}"
    return f"\\u{point:04x}" if point < 0x10000 else f"\\U{point:08x}"


def _reads_back(text: str, *, as_key: bool = False) -> bool:
    try:
        loaded = yaml.load(f"{text}: v" if as_key else f"k: {text}", Loader=_ScalarLoader)
    except (yaml.YAMLError, ValueError, RecursionError, OverflowError):
        return False
    if not isinstance(loaded, dict) or len(loaded) != 1:
        return False
    key, value = next(iter(loaded.items()))
    if as_key:
        return _scalar(key) == text and value == "v"
    return key == "k" and _scalar(value) == text


# -- derived fields ------------------------------------------------------------------------------


def page_title(text: PageText, slug: str) -> str:
    return text.frontmatter.get("title", slug)


def page_type(text: PageText) -> str:
    return text.frontmatter.get("type", DEFAULT_TYPE)


def page_summary(text: PageText) -> str:
    """The first paragraph of the compiled truth that is not a heading (its lines joined by
    spaces), else its first non-empty line; at most SUMMARY_CHARS characters."""
    for paragraph in re.split(r"\n[ \t\r]*\n", text.compiled_truth):
        lines = [line.strip() for line in paragraph.split("\n") if line.strip()]
        if lines and not lines[0].startswith("#"):
            return " ".join(lines)[:SUMMARY_CHARS]
    first = next((line.strip() for line in text.compiled_truth.split("\n") if line.strip()), "")
    return first[:SUMMARY_CHARS]


def page_wing(slug: str) -> str:
    """The slug's first segment; `general` for a slug without one."""
    return slug.split("/", 1)[0] if "/" in slug else GENERAL_WING


def page_room(text: PageText) -> str:
    """The first `## ` heading of the compiled truth, lowercased, spaces as `-`, only [a-z0-9-]."""
    for line in text.compiled_truth.split("\n"):
        if line.startswith("## "):
            return _ROOM_DROP.sub("", line[3:].strip().lower().replace(" ", "-"))
    return ""


def timeline_entries(text: PageText) -> list[str]:
    """The timeline split at its `---` lines between entries, trimmed, empty ones left out."""
    return [entry.strip() for entry in text.timeline.split("\n---\n") if entry.strip()]
