"""The offline entity extractor: a few high-precision rules, no model.

Precision over recall: a missed entity costs a weaker link; a false one pollutes every list,
count and briefing, and an agent cannot tell it from a real one. The rules, in order:

1. Lexicon (types `technology`, `service`, `agent`): a curated list of names, each with the
   forms it is written in (`Postgres`, `psql` → PostgreSQL; `k8s` → Kubernetes; `nextjs` →
   Next.js; `AWS Lambda` → Lambda). Mentions carry the other forms as the entity's aliases.
   A form matches as a whole token: not inside a longer word, path, handle or dotted name
   (`redis.conf`, `@redis/client`, `node-redis` do not match; `Redis-backed` does). Forms are
   case-insensitive, except words that are ordinary English too (React, Slack, Lambda,
   Bedrock, Flask, Rust, Angular, Stripe, Notion, Sentry, Vue, Java, Svelte, Tailwind,
   Copilot): those match only
   capitalised exactly so and never as the first word of a sentence ("React quickly" is prose).
   Cloud and hosted offerings are `service` (AWS, S3, DynamoDB, GitHub, Slack, ...), languages,
   frameworks, databases and tools `technology`, coding agents `agent` (Claude Code, Copilot).
2. Domains (`domain`): host names ending in a common public suffix (`.com`, `.io`, `.co.uk`,
   ...), lower-cased, `www.` dropped; an e-mail address yields its domain. Not when glued to a
   word, path or code (`self.app`, `request.app`: a first label that is a usual code receiver
   is refused) and not when the next character continues a dotted name.
3. People (`person`): exactly two capitalised words (an optional title before them is dropped),
   right after a cue that only people take: "met with", "call with", "spoke to", "emailed",
   "according to", "approved by", "assigned to", "email from", "thanks to", ... The name must
   not run on into a third capitalised word, and neither word may be a place, weekday, month,
   organisation or team word, or a lexicon name ("call with New York" and "meeting with
   Product Marketing" yield nothing). Bare "with", "from", "by" and @handles are not cues.
4. Workflows (`workflow`): a quoted or backticked name, or two to four capitalised words,
   directly before "workflow", "pipeline", "automation", "playbook" or "runbook" (or a quoted
   name after "workflow called/named"). Systems (`system`): the same before "system",
   "platform", "dashboard", "portal", "CRM" or "ERP". Services (`service`): the same before
   "service", "microservice" or "API". The cue word is not part of the name; leading
   determiners ("The", "Our", "New") are dropped before counting words; names containing a
   lexicon name are left to rule 1.

Clients come from a memory's client_id and agents from its source agent (EntityService.extract),
never from text. With a language model configured, entity_llm.py adds the model's finds to
these rules'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from cairn.domain.plain_text import RUN, plain, runs
from cairn.services.memory.entities import Mention


@dataclass(frozen=True)
class _Term:
    name: str
    type: str
    forms: tuple[str, ...] = ()  # other spellings, matched case-insensitively
    exact: tuple[str, ...] = ()  # ordinary words too: matched only capitalised so, mid-sentence


def _t(name: str, *forms: str) -> _Term:
    return _Term(name, "technology", forms)


def _s(name: str, *forms: str) -> _Term:
    return _Term(name, "service", forms)


LEXICON: tuple[_Term, ...] = (
    # databases and search
    _t("PostgreSQL", "Postgres", "psql", "pgsql"),
    _t("MySQL"),
    _t("MariaDB"),
    _t("SQLite", "sqlite3"),
    _t("MongoDB", "Mongo"),
    _t("Redis"),
    _t("Elasticsearch"),
    _t("OpenSearch"),
    _t("Neo4j"),
    _t("Qdrant"),
    _t("pgvector"),
    _t("GraphQL"),
    # languages
    _t("Python"),
    _t("JavaScript"),
    _t("TypeScript"),
    _t("Kotlin"),
    _t("PHP"),
    _Term("Rust", "technology", exact=("Rust",)),
    _Term("Java", "technology", exact=("Java",)),
    # frameworks and runtimes
    _t("Node.js", "nodejs"),
    _t("Next.js", "nextjs"),
    _t("Nuxt"),
    _t("Express.js", "expressjs"),
    _t("Django"),
    _t("FastAPI"),
    _Term("Svelte", "technology", ("SvelteKit",), exact=("Svelte",)),
    _Term("Tailwind CSS", "technology", ("tailwindcss",), exact=("Tailwind",)),
    _t("WordPress"),
    _t("WooCommerce"),
    _t("LangChain"),
    _t("PyTorch"),
    _t("ONNX"),
    _Term("React", "technology", ("React.js", "reactjs"), exact=("React",)),
    _Term("Vue.js", "technology", ("vuejs",), exact=("Vue",)),
    _Term("Angular", "technology", ("AngularJS",), exact=("Angular",)),
    _Term("Flask", "technology", exact=("Flask",)),
    # infrastructure and tools
    _t("Docker", "Dockerfile"),
    _t("Kubernetes", "k8s"),
    _t("Terraform"),
    _t("Nginx"),
    _t("Linux"),
    _t("Ubuntu"),
    _t("Git"),
    _t("n8n"),
    _t("Ollama"),
    # hosted services
    _s("AWS", "Amazon Web Services"),
    _s("S3", "Amazon S3", "AWS S3"),
    _s("DynamoDB", "Amazon DynamoDB", "AWS DynamoDB"),
    _s("Step Functions", "AWS Step Functions"),
    _s("CloudFront", "Amazon CloudFront"),
    _s("CloudWatch", "Amazon CloudWatch"),
    _s("EC2", "Amazon EC2"),
    _s("SQS", "Amazon SQS"),
    _Term("Lambda", "service", ("AWS Lambda",), exact=("Lambda",)),
    _Term("Bedrock", "service", ("Amazon Bedrock", "AWS Bedrock"), exact=("Bedrock",)),
    _s("Azure", "Microsoft Azure"),
    _s("Google Cloud", "GCP"),
    _s("Cloudflare"),
    _s("Vercel"),
    _s("Netlify"),
    _s("GitHub"),
    _s("GitLab"),
    _s("Jira"),
    _s("Shopify"),
    _s("Figma"),
    _s("Twilio"),
    _s("SendGrid"),
    _s("Datadog"),
    _s("OpenAI"),
    _s("Anthropic"),
    _s("ChatGPT"),
    _Term("Slack", "service", exact=("Slack",)),
    _Term("Stripe", "service", exact=("Stripe",)),
    _Term("Notion", "service", exact=("Notion",)),
    _Term("Sentry", "service", exact=("Sentry",)),
    # coding agents
    _Term("Claude Code", "agent"),
    _Term("GitHub Copilot", "agent", exact=("Copilot",)),
)

# Not preceded by a word character or a path, handle, dotted or hyphenated name; not followed
# by a word character or by a dot that continues a dotted name.
_BEFORE = r"(?<![\w.@/#$\\-])"
_AFTER = r"(?![\w]|\.\w)"
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n[\s\-*#>\d.)]*)$")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _alternation(forms: list[str]) -> str:
    return "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))


_BY_FORM: dict[str, _Term] = {}
_EXACT: dict[str, _Term] = {}
for _term in LEXICON:
    for _form in (_term.name, *_term.forms):
        if _form not in _term.exact:
            _BY_FORM[_form.casefold()] = _term
    for _form in _term.exact:
        _EXACT[_form] = _term
_LOOSE_RE = re.compile(_BEFORE + "(" + _alternation(list(_BY_FORM)) + ")" + _AFTER, re.IGNORECASE)
_LOOSE_ORDER = tuple(sorted(_BY_FORM, key=len, reverse=True))  # _LOOSE_RE's alternation order
_FORM_RUNS = {form: frozenset(RUN.findall(form)) for form in _LOOSE_ORDER}  # every form is ASCII
_EXACT_RE = re.compile(_BEFORE + "(" + _alternation(list(_EXACT)) + ")" + _AFTER)
_ALL_FORMS = {*_BY_FORM, *(f.casefold() for f in _EXACT)}
_LEXICON_WORDS = frozenset(f for f in _ALL_FORMS if " " not in f)
_LEXICON_PHRASES = tuple(f for f in _ALL_FORMS if " " in f)


def _has_lexicon_name(name: str) -> bool:
    words = name.casefold().split()
    joined = f" {' '.join(words)} "
    return bool(set(words) & _LEXICON_WORDS) or any(f" {p} " in joined for p in _LEXICON_PHRASES)


_SUFFIXES = (
    "com|org|net|io|dev|co|ai|tech|cloud|info|biz|tv|us|uk|ca|au|nz|ie|de|fr|nl|ch|se|dk|fi|pl|eu|jp|br|mx"
)
_DOMAIN_RE = re.compile(
    r"(?<![\w.-])((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:" + _SUFFIXES + r"))(?![\w-]|\.\w|\()",
    re.IGNORECASE,
)
_CODE_RECEIVERS = _words(
    "self this cls app request req res response obj config settings ctx os sys window document module"
    " exports process console math np pd ui api db client server user data item file"
)

_TITLE = r"(?:(?:Dr|Mr|Mrs|Ms|Mx|Prof)\.?[ \t]+)?"
_NAME_WORD = r"(?:[A-Z][a-z]+(?:[A-Z][a-z]+)?(?:['’-][A-Z][a-z]+)?|[A-Z]['’][A-Z][a-z]+)"
_PERSON_CUES = (
    r"(?:met|meeting|meetings|call|calls|called|spoke|speaking|talked|talking|chatted|chatting"
    r"|synced|sync|catch-up|interview|interviewed|1:1)\s+(?:with|to)"
    r"|emailed|pinged|messaged|asked|told|thanked|cc(?:'d|ed)?:?"
    r"|according\s+to|thanks\s+to|assigned\s+to|contact:|owner:"
    r"|(?:reported|requested|approved|reviewed|owned|written|authored|raised|suggested|proposed"
    r"|signed\s+off|led|presented)\s+by"
    r"|(?:email|e-mail|message|note|feedback|request|reply|invite|call|answer)\s+from"
)
_PERSON_RE = re.compile(
    r"(?<![\w-])(?i:"
    + _PERSON_CUES
    + r")[ \t]+"
    + _TITLE
    + r"("
    + _NAME_WORD
    + r")[ \t]+("
    + _NAME_WORD
    + r")(?![\w'’-]|\.\w|[ \t]+[A-Z])"
)
_NOT_NAMES = _words(
    """the a an this that these those our my your their his her its we i you they it
    monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday
    january february march april may june july august september october november december
    new old north south east west central upper lower san santa los las el la le de saint st mount
    lake fort port united royal great greater city county state island islands
    inc corp corporation company co llc ltd limited group team teams department dept office
    board committee council university college school bank hospital street road avenue
    support sales engineering product marketing legal finance ops operations design customer
    customers client clients partner partners vendor vendors management manager security
    cloud web services service api app apps bot server platform system data labs studio studios
    logistics solutions systems technologies consulting holdings industries media digital agency
    capital ventures health foods global international network networks software analytics
    google amazon microsoft apple meta facebook twitter linkedin youtube netflix uber
    claude gemini gpt mr mrs ms dr prof sir madam hi hello dear thanks regards best"""
)

_QUOTED = r"(?<!\w)[\"'`“‘]([^\"'`”’\n]{2,60})[\"'`”’]"
_NAMED_CUES = {
    "workflow": r"workflow|pipeline|automation|playbook|runbook",
    "system": r"system|platform|dashboard|portal|CRM|ERP",
    "service": r"service|microservice|API",
}
_KIND_CUES = {kind: frozenset(w.casefold() for w in cues.split("|")) for kind, cues in _NAMED_CUES.items()}
_CUE_WORDS = frozenset().union(*_KIND_CUES.values())
_NAMED_RE = {
    kind: re.compile(
        r"(?:" + _QUOTED + r"[ \t]+|(?<![\w.-])((?:[A-Z][\w&+-]*[ \t]+){1,4}))(?i:" + cues + r")(?![\w-])"
        r"|(?i:\b(?:" + cues + r"))[ \t]+(?i:called|named)[ \t]+" + _QUOTED
    )
    for kind, cues in _NAMED_CUES.items()
}
_LEADING = _words("the a an our my your their this that these those new old main current legacy")


class RuleEntityExtractor:
    """EntityExtractor by the rules of this module's docstring."""

    def extract(self, text: str) -> list[Mention]:
        # In plain text (domain/plain_text.py) a lexicon form, or a cue of rule 4, between
        # non-word characters can only match where each of its `\w+` runs is one of the text's
        # words. Most documents hold few of the forms and lack some kinds' cues, and a full pass
        # of either is among the costliest steps of linking a document's concepts.
        held = runs(text.lower()) if plain(text) else None
        found: list[tuple[int, Mention]] = []
        found += _lexicon(text, held)
        found += _domains(text)
        found += _people(text)
        for kind in _NAMED_CUES:
            if held is None or not held.isdisjoint(_KIND_CUES[kind]):
                found += _named(text, kind)
        found.sort(key=lambda pair: pair[0])
        seen: set[str] = set()
        out: list[Mention] = []
        for _, mention in found:
            key = mention.name.casefold()
            if key not in seen:
                seen.add(key)
                out.append(mention)
        return out


def _mention(term: _Term) -> Mention:
    aliases = tuple(dict.fromkeys(f for f in (*term.forms, *term.exact) if f != term.name))
    return Mention(term.name, term.type, aliases=aliases)


def _lexicon(text: str, held: set[str] | None) -> list[tuple[int, Mention]]:
    """`held`: the words of a plain text (see RuleEntityExtractor.extract), None to try every form."""
    loose = (
        _LOOSE_RE if held is None else _loose_re(frozenset(f for f in _LOOSE_ORDER if _FORM_RUNS[f] <= held))
    )
    found = (
        []
        if loose is None
        else [(m.start(), _mention(_loose_term(m.group(1)))) for m in loose.finditer(text)]
    )
    for m in _EXACT_RE.finditer(text):
        if not _SENTENCE_START.search(text[max(0, m.start() - 40) : m.start()]):
            found.append((m.start(), _mention(_EXACT[m.group(1)])))
    return found


def _loose_term(matched: str) -> _Term:
    """The term of a form a case-insensitive pattern matched, which takes ı and İ for i too."""
    term = _BY_FORM.get(matched.casefold())
    if term is None:
        term = next(t for f, t in _BY_FORM.items() if re.fullmatch(re.escape(f), matched, re.IGNORECASE))
    return term


@lru_cache(maxsize=512)
def _loose_re(forms: frozenset[str]) -> re.Pattern[str] | None:
    """_LOOSE_RE with only `forms` (the others cannot match), in the same order."""
    kept = [form for form in _LOOSE_ORDER if form in forms]
    return (
        re.compile(_BEFORE + "(" + "|".join(map(re.escape, kept)) + ")" + _AFTER, re.IGNORECASE)
        if kept
        else None
    )


def _domains(text: str) -> list[tuple[int, Mention]]:
    found = []
    for m in _DOMAIN_RE.finditer(text):
        host = m.group(1).lower().removeprefix("www.")
        labels = host.split(".")
        if len(labels) < 2 or labels[0] in _CODE_RECEIVERS or labels[0].isdigit():
            continue
        found.append((m.start(), Mention(host, "domain")))
    return found


def _people(text: str) -> list[tuple[int, Mention]]:
    found = []
    for m in _PERSON_RE.finditer(text):
        first, last = m.group(1), m.group(2)
        words = {first.casefold(), last.casefold()}
        if words & _NOT_NAMES or _has_lexicon_name(f"{first} {last}"):
            continue
        found.append((m.start(1), Mention(f"{first} {last}", "person")))
    return found


def _named(text: str, kind: str) -> list[tuple[int, Mention]]:
    found = []
    for m in _NAMED_RE[kind].finditer(text):
        quoted = m.group(1) or m.group(3)
        if quoted is not None:
            name = quoted.strip()
            start = m.start(1) if m.group(1) is not None else m.start(3)
        else:
            words = m.group(2).split()
            while words and words[0].casefold() in _LEADING:
                words.pop(0)
            if len(words) < 2:
                continue
            name, start = " ".join(words), m.start(2)
        if not name or _has_lexicon_name(name) or set(name.casefold().split()) & _CUE_WORDS:
            continue
        found.append((start, Mention(name, kind)))
    return found
