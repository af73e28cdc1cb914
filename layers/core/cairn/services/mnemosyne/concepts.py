"""The concept graph: which chunks mention which concepts, in the shared Link repository.

At ingest a document's text yields its concepts (concept_rules.py: offline rules, plus the
configured language model's entities when there is one), and each chunk gets a keyed `concept`
link to every concept whose name or alias it contains (word-bounded, ignoring case):

| item                | pk                                        | sk                        |
|---------------------|-------------------------------------------|---------------------------|
| chunk -> concept    | `links#<brain>#out#<chunk id>`            | `concept#concept:<key>`   |
| concept <- chunk    | `links#<brain>#in#concept:<key>`          | `concept#<chunk id>`      |

A concept's node is its key cut to 400 characters and to what a link's node may hold
(MAX_NODE_BYTES), when indexed and when looked up alike. Re-ingesting a document changes only the
links of chunks whose concepts changed. The `graph` search leg reads the query's candidate concepts
(what the rules find in it, then its word n-grams up to four words: at most MAX_QUERY_CONCEPTS)
one partition each per library, up to MAX_DF links, and ranks the chunks they lead to by the
concepts they share with the query, rarer and longer concepts weighing more. A search over many
libraries reads that many times more, so a link is read as its stored record (the chunk id and the
link's names), no Link model, and names are decoded only for the chunks returned. Links of chunks
that no longer exist are passed over (the caller reads the chunks).

Links carry names taken from the text, so they go with it: a document's linked reach
(concept_reach.py) bounds the chunk ids its links may name, and a rewrite through any path that
leaves it fewer chunks (an ingest, a REST PUT, a gbrain page, a memory's update, a restore)
removes the links of the ones it dropped (`unlink_dropped`, which every path's index writes call);
a deletion or an erasure removes them all
(`unlink_removed`, `unlink_document`), and a linker that raced one takes its own back.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections import defaultdict
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from cairn.domain.errors import reading_record
from cairn.domain.ids import new_id
from cairn.domain.models import Brain, Chunk, Document, Link, MetadataValue
from cairn.domain.plain_text import RUN, folded, plain, runs
from cairn.domain.stopwords import CONCEPT_EDGES as _STOP
from cairn.ports.chunks import ChunkIndex
from cairn.ports.clock import Clock
from cairn.ports.records import Delete, Put
from cairn.services.documents.chunk_ids import LIVE, parse_chunk_id
from cairn.services.links.repository import MAX_NODE_BYTES, LinkRepository, links_prefix
from cairn.services.mnemosyne.concept_reach import ConceptReach, Reach
from cairn.services.mnemosyne.concept_rules import ConceptMention, ConceptRules, concept_key
from cairn.services.repositories import DocumentRepository

CONCEPT: Final = "concept"  # link kind: chunk -> concept
NODE_PREFIX: Final = "concept:"
MAX_TEXT_CHARS: Final = 200_000  # what concepts are read from, per document
MAX_NGRAM: Final = 4
MAX_DF: Final = 500  # chunks read per concept; a concept on more is common, weighed as if on this many
MIN_IDF: Final = 0.1  # a concept on more than ~90 % of a brain's chunks is passed over
MAX_QUERY_CONCEPTS: Final = 64
"""The graph leg's concepts per query: one partition read each, per library (a long query's
n-grams would be thousands; see _query_concepts for which are kept)."""
MAX_KEY_CHARS: Final = 400
_NAME_CHARS: Final = 200  # of a name kept on a link (one cut so is taken as still mentioned)
_MAX_ALIASES: Final = 8  # kept on a link, to tell later whether its chunk still mentions the concept
_LINKS_PER_COMMIT: Final = 50  # two items each: DynamoDB's 100-item transaction
_OPS_PER_COMMIT: Final = 2 * _LINKS_PER_COMMIT
_OPS_HELD: Final = 100 * _OPS_PER_COMMIT  # made before they are written (see ConceptGraph.index)
_WORDS = re.compile(r"[\w'’&-]+")


@dataclass(frozen=True)
class ConceptHit:
    chunk_id: str
    brain_id: str
    score: float
    concepts: tuple[str, ...]
    mentions: tuple[ConceptMention, ...] = ()
    """The concepts as the links name them (name and aliases): `still_mentions` checks them."""

    def still_mentions(self, text: str) -> bool:
        """Whether the chunk's text (as read now) mentions one of the concepts that led to it.
        Links are made on ingest; a chunk written again by another surface keeps its id and its
        links, so a name edited out of it would still lead here."""
        return any(still_mentioned(text, m) for m in self.mentions)


class ConceptGraph:
    def __init__(
        self,
        links: LinkRepository,
        rules: ConceptRules,
        chunks: ChunkIndex,
        clock: Clock,
        *,
        documents: DocumentRepository | None = None,
    ) -> None:
        """`documents`: where `index_document` reads a document again after linking it (without
        it, links made as an erasure or a rewrite commits are not taken back)."""
        self.links = links
        self.rules = rules
        self.chunks = chunks
        self.query_rules = ConceptRules()  # no model per query: the rules alone
        self.clock = clock
        self.documents = documents
        self.reach = ConceptReach(links.records, links, CONCEPT)

    def index_document(self, brain_id: str, document_id: str, text: str, *, fresh: bool = False) -> int:
        """`index` over the document's live chunks (after an ingest committed them); returns links
        changed. Its linked reach is raised first, naming the stage of the chunks' ids, and the
        links of chunks an earlier, longer version had go, and those of chunk ids of another stage
        than the chunks carry when read again after linking (concept_reach.py). Then its record is
        read again: an erasure or a rewrite that committed meanwhile (in another process) may have
        removed its links before these were made, so those of chunks it no longer has are taken
        back here."""
        live = [c for c in self.chunks.get_chunks(brain_id, document_id) if c.active]
        current = _families(live)
        stages = sorted(current - {LIVE})
        upto = max((c.ordinal + 1 for c in live), default=0)
        was = self.reach.extend(brain_id, document_id, upto, fresh=fresh, stages=stages)
        changed = self.index(brain_id, text, live, fresh=fresh)
        changed += self.reach.trim(brain_id, document_id, upto, was.upto, stages=stages)
        if stages and not all(self.reach.confirm(brain_id, document_id, stage) for stage in stages):
            # a linker of a later version retired these ids' links as they were made: take them back
            return changed + self.reach.take_back(brain_id, document_id, stages, upto)
        # The ids of another version (a queued ingest's, or the live ones it replaced) hold links.
        # What the document's chunks carry is read again: a linker whose version was replaced as it
        # linked (its ids gone) retires its own links, never those of the version that replaced it.
        if was.version and (set(was.stages) - current or not current & {LIVE, *was.stages}):
            now = [c for c in self.chunks.get_chunks(brain_id, document_id) if c.active]
            changed += self.reach.retire(brain_id, document_id, _families(now))
        if self.documents is None:
            return changed
        doc = self.documents.stored_by_id(document_id)
        if doc is None or doc.brain_id != brain_id:  # its remover may have read the reach before
            taken = self.reach.trim(brain_id, document_id, 0, upto, stages=stages)
            return changed + taken + self.reach.forget(brain_id, document_id)
        return changed + self.reach.trim(brain_id, document_id, doc.chunk_count, upto, stages=stages)

    def unlink_dropped(self, brain_id: str, document_id: str, kept: int) -> int:
        """A rewrite through any path left the document `kept` chunks (DocumentIndexer.dropped):
        the links of its chunks from there up to its reach go, and the reach is lowered to `kept`;
        returns links removed. Where the reach names stages, the chunks are read: the links of the
        families they no longer carry go whole. A linker of the longer version in another process
        takes back what it links after this (index_document reads the record again)."""
        was = self.reach.held(brain_id, document_id)  # a damaged one: the widest reach, mended
        removed = self.reach.trim(brain_id, document_id, kept, was.upto)
        if was.stages:  # the write may have given it live ids (chunk_ids.kept_stage)
            current = _families(self.chunks.get_chunks(brain_id, document_id))  # inactive ones too
            if set(was.stages) - current:
                removed += self.reach.retire(brain_id, document_id, current)
        return removed

    def unlink_document(
        self,
        brain_id: str,
        document_id: str,
        *,
        done: Collection[str] = (),
        standing: bool = False,
        known: Reach | None = None,
    ) -> int:
        """Remove the links of every chunk the document may ever have had linked (but `done`, chunk
        ids whose links the caller removed), and its reach unless the document is still `standing`
        (an erasure before it removes the document); returns links removed. `known`: its reach as
        the caller read it (ConceptReach.read_many)."""
        return self.reach.forget(brain_id, document_id, done=done, keep=standing, known=known)

    def unlink_removed(self, brain: Brain, gone: Sequence[Document]) -> int:
        """`unlink_document` for the documents a deletion or erasure removed
        (DocumentService.when_removed): a linker that linked one as it went is caught here;
        returns links removed (an erasure's receipt counts them)."""
        return sum(self.unlink_document(brain.id, doc.id) for doc in gone)

    def index(self, brain_id: str, text: str, chunks: Sequence[Chunk], *, fresh: bool = False) -> int:
        """Link each of a document's chunks to the concepts it mentions; returns links changed.
        `fresh`: chunks of a document created just now (new ids: no links yet, none to read).
        The links are written as they are made, in the transactions they went in when all were
        made first: a 2 MB document whose 1,665 chunks each name 200 concepts makes 331,335
        links, and holding their ops took 529 MB."""
        concepts = _Matchers(self.rules.extract(text[:MAX_TEXT_CHARS]))
        ops: list[Put | Delete] = []
        written = 0
        now = self.clock.now()
        for chunk in chunks:
            if len(ops) >= _OPS_HELD:
                whole = len(ops) - len(ops) % _OPS_PER_COMMIT
                self.links.apply(ops[:whole], per_commit=_OPS_PER_COMMIT)
                written, ops = written + whole, ops[whole:]
            wanted = {_node(concept.name): concept for concept in concepts.mentioned(chunk.text)}
            held = (
                set()
                if fresh
                else {link.target_id for link in self.links.outgoing(brain_id, chunk.id, CONCEPT)}
            )
            for node in held - wanted.keys():
                ops += self.links.remove_ops(brain_id, chunk.id, CONCEPT, node)
            for node in wanted.keys() - held:
                link = Link(
                    id=new_id("lnk"),
                    brain_id=brain_id,
                    source_id=chunk.id,
                    target_id=node,
                    kind=CONCEPT,
                    metadata=_link_names(wanted[node]),
                    created_at=now,
                )
                ops += self.links.add_ops(link)
        self.links.apply(ops, per_commit=_OPS_PER_COMMIT)  # a concurrent re-ingest may race
        return (written + len(ops)) // 2

    def concepts_of(self, brain_id: str, chunk_id: str) -> list[str]:
        return [
            str(link.metadata.get("name") or link.target_id)
            for link in self.links.outgoing(brain_id, chunk_id, CONCEPT)
        ]

    def search(
        self, brain_ids: Sequence[str], query: str, *, limit: int, sizes: Mapping[str, int] | None = None
    ) -> list[ConceptHit]:
        """Chunks reached from the query's concepts, best first. A concept weighs its length in
        words times its inverse chunk frequency in its brain (BM25's idf, `sizes` giving each
        brain's chunk count): a concept nearly every chunk mentions (a diary's author) leads
        nowhere in particular and weighs next to nothing. A concept's links are read up to
        MAX_DF, and no further than the first that makes it too common to count (MIN_IDF); only
        the hits returned have their links' names decoded."""
        candidates = _query_concepts(query, self.query_rules.extract(query))
        scores: dict[tuple[str, str], float] = defaultdict(float)
        reached: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)  # brain -> (node, links)
        for brain_id in brain_ids:
            total = max((sizes or {}).get(brain_id, 0), 1)
            most = _most_read(total)
            for node, words in candidates.items():
                linked = self.links.incoming_metadata(brain_id, node, CONCEPT, limit=most)
                if not linked:
                    continue
                idf = _idf(len(linked), total)
                if idf < MIN_IDF:
                    continue
                for source in linked:
                    scores[(brain_id, source)] += words * idf
                reached[brain_id].append((node, linked))
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0][1]))[:limit]
        hits = []
        for (brain, chunk), score in ranked:
            led = [(node, linked[chunk]) for node, linked in reached[brain] if chunk in linked]
            concepts = tuple(node.removeprefix(NODE_PREFIX) for node, _ in led)
            mentions = tuple(_link_mention(brain, chunk, node, metadata) for node, metadata in led)
            hits.append(ConceptHit(chunk, brain, score, concepts, mentions))
        return hits


def _families(chunks: Sequence[Chunk]) -> set[str]:
    """The stages of the chunks' ids (LIVE for live ids, and for no chunk)."""
    return {ref.stage if ref else LIVE for ref in (parse_chunk_id(c.id) for c in chunks)} or {LIVE}


def _idf(df: int, total: int) -> float:
    return math.log(1.0 + max(total - df + 0.5, 0.0) / (df + 0.5))


def _most_read(total: int) -> int:
    """How many of a concept's links to read in a brain of `total` chunks: MAX_DF, or one more
    than the most chunks a concept may be on and still reach MIN_IDF when that is fewer (reading
    that many tells it is passed over). _idf falls as df grows."""
    low, high = 1, MAX_DF  # _idf(1, total) >= MIN_IDF for any total >= 1
    if _idf(high, total) >= MIN_IDF:
        return MAX_DF
    while high - low > 1:  # _idf(low) reaches MIN_IDF, _idf(high) does not
        middle = (low + high) // 2
        low, high = (middle, high) if _idf(middle, total) >= MIN_IDF else (low, middle)
    return high


def _link_names(concept: ConceptMention) -> dict[str, MetadataValue]:
    """What a link keeps of its concept: its name and aliases, each cut to 200 characters."""
    kept: dict[str, MetadataValue] = {"name": concept.name[:_NAME_CHARS]}
    if concept.aliases:
        kept["aliases"] = "\n".join(a[:_NAME_CHARS] for a in concept.aliases[:_MAX_ALIASES])
    return kept


def still_mentioned(text: str, mention: ConceptMention) -> bool:
    """Whether a chunk's text, as read now, mentions the concept a link of it names (`mention_of`):
    a chunk another surface wrote again keeps its links until its next ingest."""
    return len(mention.name) >= _NAME_CHARS or _pattern(mention).search(text) is not None


def mention_of(link: Link) -> ConceptMention:
    """The concept a chunk's link was made for, as the link names it."""
    return _link_mention(link.brain_id, link.source_id, link.target_id, link.metadata)


def _link_mention(brain_id: str, chunk_id: str, node: str, metadata: Any) -> ConceptMention:
    """The concept a link was made for, as its metadata names it (the node's key when it names none)."""
    with reading_record(f"{links_prefix(brain_id)}in#{node}", f"{CONCEPT}#{chunk_id}", "concept link"):
        name = metadata.get("name")
        aliases = metadata.get("aliases")
    return ConceptMention(
        name if isinstance(name, str) and name else node.removeprefix(NODE_PREFIX),
        tuple(a for a in aliases.split("\n") if a) if isinstance(aliases, str) else (),
    )


def _node(name: str) -> str:
    return _key_node(concept_key(name))


def _key_node(key: str) -> str:
    """The node of a concept key: cut to MAX_KEY_CHARS, then to whole characters within
    MAX_NODE_BYTES (a key of non-ASCII letters can hold four bytes a character)."""
    node = NODE_PREFIX + key[:MAX_KEY_CHARS]
    encoded = node.encode("utf-8", errors="replace")
    if len(encoded) <= MAX_NODE_BYTES:
        return node
    return encoded[:MAX_NODE_BYTES].decode("utf-8", errors="ignore")


class _Matchers:
    """A document's concepts, looked up by a chunk's words rather than each tried on each chunk
    (a document names up to MAX_CONCEPTS of them; a chunk mentions a few). In `plain` text
    (domain/plain_text.py) an
    ASCII form can only match where each of its `\\w+` runs is one of the text's words, case aside:
    the pattern's ends and the `\\s+` between its words fall on non-word characters. So a concept is
    tried only on chunks holding the longest run of one of its forms; one with a form that is not
    ASCII, or has no word character, is tried on every chunk, and every concept on a chunk that is
    not plain."""

    def __init__(self, concepts: Sequence[ConceptMention]) -> None:
        self.matchers = [_Matcher(c) for c in concepts]
        self.by_word: dict[str, list[int]] = defaultdict(list)
        self.everywhere: list[int] = []
        for n, matcher in enumerate(self.matchers):
            if matcher.keys is None:
                self.everywhere.append(n)
            for word in matcher.keys or ():
                self.by_word[word].append(n)

    def mentioned(self, text: str) -> list[ConceptMention]:
        """The concepts `text` mentions, in the order they were given. Text that is not `plain` is
        looked up as `folded` (plain): a concept looked up by its words (all its forms ASCII) can
        only be mentioned where it is found in that, and its pattern then decides on the text
        itself. Trying every pattern on such text instead, a 1 MB document holding a dotless i in
        each chunk took 3 s."""
        fold = not plain(text)
        looked_up = folded(text) if fold else text
        lowered = looked_up.lower()
        tokens = runs(lowered)
        spaced = " ".join(lowered.split())
        tried = set(self.everywhere)
        for word in tokens.intersection(self.by_word):
            tried.update(self.by_word[word])
        found = []
        for n in sorted(tried):
            matcher = self.matchers[n]
            if matcher.keys is None and fold:
                hit = matcher.mentioned(text, None)  # a form not ASCII, or of no word: the pattern decides
            else:
                hit = matcher.mentioned(looked_up, lowered, tokens, spaced)
                hit = hit and (not fold or matcher.mentioned(text, None))
            if hit:
                found.append(matcher.concept)
        return found


class _Matcher:
    """A concept's pattern, compiled when first needed, behind cheap tests that answer as it would
    (most concepts of a document are absent from most of its chunks, and a search was the half of
    concept linking's time in `cairn ingest`). In `plain` text with every form ASCII:

    - a form that is one word is mentioned exactly when it is one of the text's words, case aside
      (the pattern asks for it between non-word characters);
    - any other form is mentioned exactly when its lower-cased words, one space apart, occur
      between non-word characters in the lower-cased text with each run of whitespace made one
      space (`spaced`): the pattern joins a form's words by `\\s+`. It can only be there if each of
      its `\\w+` runs is one of the text's words, which is tested first.

    In other text the pattern decides, behind a substring test of each form's longest word.
    `keys`: the longest `\\w+` run of each form, lower-cased (see _Matchers), or None when a form
    has none or is not ASCII."""

    def __init__(self, concept: ConceptMention) -> None:
        self.concept = concept
        names = [form.strip() for form in (concept.name, *concept.aliases) if form.strip()]
        runs = [RUN.findall(name.lower()) if name.isascii() else [] for name in names]
        keys = frozenset(max(found, key=len) for found in runs if found)
        self.keys = keys if names and all(runs) else None
        single = [name for name in names if name.isascii() and RUN.fullmatch(name)]
        self.tokens = frozenset(name.lower() for name in single)
        self.others = len(single) < len(names)
        self.phrases = (
            [
                (frozenset(found), " ".join(name.lower().split()))
                for name, found in zip(names, runs, strict=True)
                if name not in single
            ]
            if all(name.isascii() for name in names)
            else None
        )
        forms = [name.split() for name in names]
        words = [max(words, key=len).lower() for words in forms]
        self.words = words if words and all(word.isascii() for word in words) else None
        self._pattern: re.Pattern[str] | None = None

    def mentioned(
        self, text: str, lowered: str | None, tokens: set[str] | None = None, spaced: str | None = None
    ) -> bool:
        """Whether `text` mentions the concept; when `text` is `plain`, `lowered` is `text.lower()`,
        `tokens` its words (`\\w+` runs of `lowered`) and `spaced` `" ".join(lowered.split())`."""
        if tokens is not None:
            if not self.tokens.isdisjoint(tokens):
                return True
            if not self.others:
                return False
            if spaced is not None and self.phrases is not None:
                return any(found <= tokens and _bounded_in(spaced, phrase) for found, phrase in self.phrases)
        if lowered is not None and self.words is not None and not any(w in lowered for w in self.words):
            return False
        if self._pattern is None:
            self._pattern = _pattern(self.concept)
        return self._pattern.search(text) is not None


def _bounded_in(text: str, phrase: str) -> bool:
    """Whether `phrase` occurs in `text` with no word character right before or after it."""
    start = text.find(phrase)
    while start >= 0:
        end = start + len(phrase)
        if (start == 0 or not _word_char(text[start - 1])) and (
            end == len(text) or not _word_char(text[end])
        ):
            return True
        start = text.find(phrase, start + 1)
    return False


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


@functools.lru_cache(maxsize=8192)
def _pattern(concept: ConceptMention) -> re.Pattern[str]:
    """Kept across documents: a corpus names the same concepts again and again, and compiling
    was a tenth of concept linking's time in `cairn ingest`."""
    forms = sorted({concept.name, *concept.aliases}, key=len, reverse=True)
    alternatives = "|".join(r"\s+".join(map(re.escape, form.split())) for form in forms if form.strip())
    return re.compile(rf"(?<![\w]){'(?:' + alternatives + ')'}(?![\w])", re.IGNORECASE)


def _query_concepts(query: str, found: Sequence[ConceptMention]) -> dict[str, int]:
    """Concept node -> its length in words, at most MAX_QUERY_CONCEPTS of them: first the names the
    rules found in the query, then its n-grams (not all stopwords) taken one length after another
    in turn, each length's longest first (a long word is a rarer one, and a concept is more often
    one or two words than four, so no length crowds out the others)."""
    nodes: dict[str, int] = {}
    for mention in found:
        for form in (mention.name, *mention.aliases):
            key = concept_key(form)
            if key:
                nodes.setdefault(_key_node(key), len(key.split()))
    for gram in _interleaved(_ngrams(_WORDS.findall(query))):
        if len(nodes) >= MAX_QUERY_CONCEPTS:
            break
        nodes.setdefault(_key_node(gram), len(gram.split()))
    return dict(list(nodes.items())[:MAX_QUERY_CONCEPTS])


def _ngrams(words: Sequence[str]) -> list[list[str]]:
    """The distinct keys of the words' n-grams of each length 1..MAX_NGRAM, each length's longest
    first (ties in the order met)."""
    by_length: list[list[str]] = []
    for n in range(1, MAX_NGRAM + 1):
        keys: dict[str, None] = {}
        for i in range(len(words) - n + 1):
            gram = words[i : i + n]
            if gram[0].casefold() in _STOP or gram[-1].casefold() in _STOP:
                continue
            key = concept_key(" ".join(gram))
            if key:
                keys[key] = None
        by_length.append(sorted(keys, key=len, reverse=True))
    return by_length


def _interleaved(lists: Sequence[Sequence[str]]) -> Iterator[str]:
    """The first of each list, then the second of each, and so on."""
    for row in itertools.zip_longest(*lists):
        yield from (item for item in row if item is not None)
