"""Labelled corpora for bench/library_profiles.py, one per Mnemosyne library type, generated from
templates with a seeded RNG (nothing is downloaded; the same seed gives the same corpus).

Each corpus is documents (title, text), passages (an id → the document and the exact answer text,
found once in it) and queries, each with the id(s) of the passage(s) that answer it. A passage is
the unit an agent needs whole: the sentence stating a figure, a code block, a stanza, a line of
dialogue, the sentence of a journal entry. The facts that tell passages apart (the month of an
entry, the place of a scene, the title of a plate) are stated where real texts state them: in the
entry's date line, the scene heading, the chapter title, not in the answer sentence. This is a
weak proxy for real libraries: the templates were written to exercise what the profiles change.

One file past 500 lines: it is nine corpora's templates (data more than code), one function each.
"""

from __future__ import annotations

import random
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta


@dataclass
class Corpus:
    kind: str
    docs: list[tuple[str, str]] = field(default_factory=list)
    passages: dict[str, tuple[int, str]] = field(default_factory=dict)  # id -> (doc index, answer)
    queries: list[tuple[str, list[str]]] = field(default_factory=list)

    def spans(self) -> dict[str, tuple[int, int, int]]:
        """Passage id → (doc index, start, end) of its one occurrence."""
        out = {}
        for pid, (d, answer) in self.passages.items():
            # Whitespace may differ: a report wrapped at 72 columns breaks the answer's lines.
            pattern = re.compile(r"\s+".join(re.escape(word) for word in answer.split()))
            found = list(pattern.finditer(self.docs[d][1]))
            assert len(found) == 1, (self.kind, pid, answer)
            out[pid] = (d, found[0].start(), found[0].end())
        return out

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "docs": self.docs, "passages": self.passages, "queries": self.queries}


NAMES = [
    "Mara",
    "Ilse",
    "Tomas",
    "Rowan",
    "Petra",
    "Ansel",
    "Wren",
    "Corin",
    "Edda",
    "Linus",
    "Saskia",
    "Oren",
]
THINGS = [
    "lamp",
    "kettle",
    "ledger",
    "shawl",
    "compass",
    "letter",
    "lantern",
    "basket",
    "violin",
    "map",
    "coat",
    "rope",
]
ADJ = [
    "grey",
    "quiet",
    "narrow",
    "cold",
    "bright",
    "worn",
    "heavy",
    "pale",
    "crooked",
    "distant",
    "damp",
    "slow",
]
TOPICS = ["the weather", "an old debt", "the harvest", "a cousin abroad", "the price of bread", "the river"]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


def filler(rng: random.Random, n: int) -> str:
    """Neutral sentences that name no place, date or key object."""
    templates = [
        "{a} {v} the {t} and said nothing for a while.",
        "The {t} was {j} and {k}, as it had always been.",
        "{a} thought about {p} and then let the thought go.",
        "Somewhere a door closed, and {a} looked up from the {t}.",
        "It was a {j} hour, and {a} was tired of waiting.",
        "{a} and {b} spoke about {p} until the light changed.",
        "Nobody mentioned {p}, though everyone was thinking of it.",
        "{a} set the {t} down carefully and rubbed {h} hands.",
    ]
    out = []
    for _ in range(n):
        out.append(
            rng.choice(templates).format(
                a=rng.choice(NAMES),
                b=rng.choice(NAMES),
                t=rng.choice(THINGS),
                j=rng.choice(ADJ),
                k=rng.choice(ADJ),
                p=rng.choice(TOPICS),
                v=rng.choice(["moved", "cleaned", "checked", "mended"]),
                h=rng.choice(["her", "his"]),
            )
        )
    return " ".join(out)


def paragraphs(rng: random.Random, chars: int) -> list[str]:
    out, total = [], 0
    while total < chars:
        out.append(filler(rng, rng.randint(3, 6)))
        total += len(out[-1])
    return out


def with_key(rng: random.Random, paras: list[str], key: str) -> str:
    """Paragraphs with `key` inserted as a sentence of a random paragraph (never the first)."""
    i = rng.randrange(1, len(paras)) if len(paras) > 1 else 0
    parts = paras[i].split(". ")
    j = rng.randrange(0, len(parts) + 1)
    joined = ". ".join([*parts[:j], key.rstrip("."), *parts[j:]])
    paras = [*paras[:i], joined if joined.endswith(".") else joined + ".", *paras[i + 1 :]]
    return "\n\n".join(paras)


# --- fiction -------------------------------------------------------------------------------------

PLACES = [
    "lighthouse",
    "orchard",
    "mill",
    "harbour",
    "chapel",
    "market",
    "library",
    "bakery",
    "forge",
    "station",
    "quarry",
    "vineyard",
    "greenhouse",
    "bridge",
    "tavern",
    "schoolhouse",
    "boathouse",
    "observatory",
]
SPOTS = [
    "under the stairs",
    "behind a loose brick",
    "in a tin box",
    "beneath the floorboards",
    "inside a boot",
]
ROMAN = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X"]


def fiction(rng: random.Random) -> Corpus:
    c = Corpus("fiction")
    used: set[tuple[str, str, str]] = set()
    places = PLACES[:]
    rng.shuffle(places)
    for book in range(3):
        parts = []
        for ch in range(6):
            place = places[(book * 6 + ch) % len(places)]
            title = [
                f"CHAPTER {ROMAN[ch]}. THE {place.upper()}",
                f"Chapter {ch + 1} — The {place.title()}",
                f"# Chapter {ch + 1}: The {place.title()}",
            ][book]
            scenes = []
            for _ in range(3):
                who, what = rng.choice(NAMES), rng.choice(THINGS)
                while (who, what, place) in used:
                    who, what = rng.choice(NAMES), rng.choice(THINGS)
                used.add((who, what, place))
                pid = f"f{len(c.passages)}"
                key = f"{who} found the {what} {rng.choice(SPOTS)}, wrapped in {rng.choice(ADJ)} cloth."
                opener = f"Evening settled over the {place}. "
                scenes.append(opener + with_key(rng, paragraphs(rng, rng.randint(500, 1500)), key))
                c.passages[pid] = (book, key)
                c.queries.append((f"What did {who} find at the {place}?", [pid]))
            brk = rng.choice(["* * *", "***", "#", " " * 24 + "~ ~ ~"][: 3 if book == 2 else 4])
            parts.append(title + "\n\n" + f"\n\n{brk}\n\n".join(scenes))
        c.docs.append((f"The Long Year, volume {book + 1}", "\n\n".join(parts)))
    return c


# --- journal -------------------------------------------------------------------------------------

ERRANDS = {
    "dentist": [
        "the dentist said the crown needs replacing",
        "the dentist found a small cavity",
        "the dentist cleaned and polished",
    ],
    "garage": [
        "the garage replaced the brake pads",
        "the garage said the clutch is worn",
        "the garage fixed the exhaust",
    ],
    "vet": [
        "the vet gave the dog a booster",
        "the vet said the cat is overweight",
        "the vet stitched the dog's paw",
    ],
    "plumber": [
        "the plumber fixed the boiler pressure",
        "the plumber replaced the kitchen tap",
        "the plumber unblocked the drain",
    ],
    "allotment": [
        "the allotment committee raised the rent",
        "we dug potatoes at the allotment",
        "someone stole tools from the allotment",
    ],
}


def journal(rng: random.Random) -> Corpus:
    c = Corpus("journal")
    day = date(2022, 1, 3)
    seen: set[tuple[str, int, int]] = set()
    for volume in range(2):
        entries = []
        for _ in range(30):
            day += timedelta(days=rng.randint(9, 15))
            style = rng.randrange(3)
            head = [
                f"{day:%A}, {day.day} {day:%B %Y}",
                day.isoformat(),
                f"{day:%B} {day.day}, {day.year}",
            ][style]
            paras = paragraphs(rng, rng.randint(300, 1600))
            errand = rng.choice(list(ERRANDS))
            if (errand, day.year, day.month) in seen:
                entries.append(head + "\n\n" + "\n\n".join(paras))
                continue
            seen.add((errand, day.year, day.month))
            key = f"In the end {rng.choice(ERRANDS[errand])}, which cost {rng.randint(20, 400)} pounds."
            pid = f"j{len(c.passages)}"
            c.passages[pid] = (volume, key)
            c.queries.append((f"What happened with the {errand} in {day:%B %Y}?", [pid]))
            entries.append(head + "\n\n" + with_key(rng, paras, key))
        c.docs.append((f"Diary {volume + 1}", "\n\n".join(entries)))
    return c


# --- technical -----------------------------------------------------------------------------------

SERVICES = [
    "ledgerd",
    "mailgate",
    "vaultkeeper",
    "tilecache",
    "queuebird",
    "searchlight",
    "authority",
    "pipewright",
]
TASKS = {
    "rotate the signing keys": "rotate-keys --grace {n}h --notify ops@{s}.internal",
    "enable TLS on the listener": "listener.tls.enabled=true listener.tls.cert=/etc/{s}/tls.pem",
    "back up the database": "backup --target s3://{s}-backups/nightly --compress zstd --keep {n}",
    "raise the connection limit": "limits.max_connections={n}0 limits.queue={n}",
    "turn on debug logging": "log.level=debug log.sample_rate=0.{n} log.sink=/var/log/{s}/debug.log",
}


def code_for(rng: random.Random, service: str, task: str) -> str:
    n = rng.randint(2, 9)
    head = TASKS[task].format(n=n, s=service)
    lines = [f"# {task} for {service}", f"{service}ctl {head}"]
    for i in range(rng.randint(6, 22)):
        lines.append(
            f"{service}ctl set {rng.choice(ADJ)}.{rng.choice(THINGS)}_{i} {rng.randint(1, 999)}  # step {i}"
        )
    return "```sh\n" + "\n".join(lines) + "\n```"


def tech_prose(rng: random.Random, service: str, n: int) -> str:
    bits = [
        f"The {service} daemon reads its settings at start-up and again on reload.",
        "Changes made with the control tool are written to the local state directory.",
        "Operators usually script these steps and run them from the deployment host.",
        "A restart is not needed; the process applies the new values within a second.",
        "Every command prints the previous value so a change can be undone by hand.",
        "The control tool exits non-zero when a value is out of range.",
        f"Keep the {service} configuration in version control alongside the other services.",
    ]
    return " ".join(rng.choice(bits) for _ in range(n))


def technical(rng: random.Random) -> Corpus:
    c = Corpus("technical")
    for d, service in enumerate(SERVICES):
        sections = [f"# {service} operations guide", tech_prose(rng, service, 4)]
        for task in rng.sample(list(TASKS), 4):
            block = code_for(rng, service, task)
            pid = f"t{len(c.passages)}"
            c.passages[pid] = (d, block)
            c.queries.append((f"How do I {task} in {service}?", [pid]))
            sections.append(f"## {task.capitalize()}")
            sections.append(tech_prose(rng, service, rng.randint(2, 6)))
            sections.append(block)
            if rng.random() < 0.5:
                rows = "\n".join(
                    f"| {rng.choice(THINGS)} | {rng.randint(1, 99)} | {rng.choice(ADJ)} |"
                    for _ in range(rng.randint(3, 8))
                )
                sections.append("| option | default | note |\n|---|---|---|\n" + rows)
            sections.append(tech_prose(rng, service, rng.randint(1, 4)))
        c.docs.append((f"{service} guide", "\n\n".join(sections)))
    return c


# --- finance -------------------------------------------------------------------------------------

FACILITIES = [
    "revolving credit facility",
    "term loan",
    "equipment lease",
    "bridge facility",
    "overdraft line",
]
ENTITIES = ["Harbour Mills Ltd.", "Corin Foods Inc.", "North Quarry plc", "Wren Logistics LLC"]


def finance_prose(rng: random.Random, n: int) -> str:
    bits = [
        "Management continues to monitor liquidity against the covenants agreed with the lenders.",
        "Working capital moved in line with the seasonal pattern of previous years.",
        "The audit committee reviewed the treasury policy and made no changes.",
        "No new hedging arrangements were entered into during the period.",
        "Cash collection from customers improved after the billing system upgrade.",
        "The board considers the group a going concern for the next twelve months.",
    ]
    return " ".join(rng.choice(bits) for _ in range(n))


def finance(rng: random.Random) -> Corpus:
    c = Corpus("finance")
    seen: set[tuple[str, str, int, int]] = set()
    for d, entity in enumerate(ENTITIES * 2):
        year = 2021 + d // len(ENTITIES)
        paras = [finance_prose(rng, rng.randint(2, 5))]
        for _ in range(9):
            fac, month = rng.choice(FACILITIES), rng.randrange(12)
            if (entity, fac, year, month) in seen:
                continue
            seen.add((entity, fac, year, month))
            day = rng.randint(1, 28)
            mon = MONTHS[month][:3] + ("." if len(MONTHS[month]) > 3 else "")
            amount = f"${rng.randint(1, 9)},{rng.randint(100, 999)},{rng.randint(100, 999)}"
            key = (
                f"On {mon} {day}, {year} the Co. drew {amount} under the {fac} (acct. no. "
                f"{rng.randint(1000, 9999)}-{rng.randint(10, 99)}) "
                f"at {rng.randint(2, 9)}.{rng.randint(10, 99)}% "
                f"p.a., repayable in {rng.randint(2, 20)} quarterly instalments."
            )
            pid = f"m{len(c.passages)}"
            c.passages[pid] = (d, key)
            c.queries.append((f"How much did {entity} draw on the {fac} in {MONTHS[month]} {year}?", [pid]))
            paras.append(
                f"{finance_prose(rng, rng.randint(1, 4))} {key} {finance_prose(rng, rng.randint(1, 4))}"
            )
            if rng.random() < 0.3:
                rows = "\n".join(
                    f"| Q{q} {year} | {rng.randint(100, 999)}.{rng.randint(0, 9)} "
                    f"| {rng.randint(1, 30)}.{rng.randint(0, 9)}% |"
                    for q in range(1, 5)
                )
                paras.append("| quarter | revenue ($m) | margin |\n|---|---:|---:|\n" + rows)
        # Half the reports are plain-text exports wrapped at 72 columns, as many filings are.
        if d % 2:
            paras = [p if p.startswith("|") else textwrap.fill(p, 72) for p in paras]
        c.docs.append((f"{entity} annual report {year}", "\n\n".join(paras)))
    return c


# --- music ---------------------------------------------------------------------------------------

IMAGES = [
    "river",
    "lantern",
    "sparrow",
    "harbour",
    "ember",
    "winter",
    "orchard",
    "thunder",
    "compass",
    "ribbon",
    "candle",
    "meadow",
    "anchor",
    "feather",
    "mirror",
    "chimney",
    "violet",
    "thistle",
]
VERBS = ["burning", "drifting", "calling", "falling", "waiting", "singing", "turning", "breaking"]


def music(rng: random.Random) -> Corpus:
    c = Corpus("music")
    for album in range(2):
        songs = []
        for s in range(9):
            title = f"{rng.choice(IMAGES).title()} {rng.choice(VERBS).title()}"
            chorus = "\n".join(f"Oh the {rng.choice(IMAGES)} keeps {rng.choice(VERBS)}" for _ in range(4))
            stanzas = []
            for v in range(rng.randint(4, 6)):
                a, b = rng.sample(IMAGES, 2)
                lines = [f"I saw a {a} {rng.choice(VERBS)} by the {rng.choice(IMAGES)}"]
                lines += [
                    f"{rng.choice(['And', 'But', 'So', 'Then'])} the {rng.choice(IMAGES)} "
                    f"was {rng.choice(VERBS)} low"
                    for _ in range(rng.randint(2, 4))
                ]
                lines.append(f"Till the {b} came {rng.choice(VERBS)} home (verse {album}.{s}.{v})")
                stanza = "\n".join(lines)
                stanzas.append(stanza)
                pid = f"s{len(c.passages)}"
                c.passages[pid] = (album, stanza)
                c.queries.append((f"the verse of {title} where a {a} is seen and the {b} comes home", [pid]))
                if v % 2 == 1:
                    stanzas.append(chorus)
            songs.append(f"## {title}\n\n" + "\n\n".join(stanzas))
        c.docs.append((f"Album {album + 1} lyrics", "\n\n".join(songs)))
    return c


# --- film ----------------------------------------------------------------------------------------

LINES = [
    "I buried the money under the pier",
    "You never told me about the second letter",
    "We leave before the tide turns",
    "Your brother called again last night",
    "I sold the boat to pay the doctor",
    "The key was never in the drawer",
]


def film(rng: random.Random) -> Corpus:
    c = Corpus("film")
    cast = ["RAY", "LENA", "OTTO", "JUNE"]
    seen: set[tuple[str, str, str]] = set()
    for script in range(3):
        scenes: list[str] = []
        for _ in range(16):
            place, when = rng.choice(PLACES).upper(), rng.choice(["NIGHT", "DAY", "DAWN"])
            slug = f"{rng.choice(['INT.', 'EXT.'])} {place} - {when}"
            beats = []
            for _ in range(rng.randint(3, 9)):
                who = rng.choice(cast)
                beats.append(
                    f"{who.title()} {rng.choice(['waits', 'paces', 'looks away', 'lights a cigarette'])}. "
                    f"{filler(rng, 1)}"
                )
                beats.append(f"{' ' * 20}{who}\n{' ' * 10}{filler(rng, 1)}")
            speaker, line = rng.choice(cast), rng.choice(LINES)
            if (speaker, line, place) not in seen:
                seen.add((speaker, line, place))
                key = f"{' ' * 20}{speaker}\n{' ' * 10}{line}, {rng.choice(NAMES)}. ({script}.{len(scenes)})"
                pid = f"c{len(c.passages)}"
                c.passages[pid] = (script, key.strip())
                what = line.split(" ", 1)[1]
                c.queries.append(
                    (f"In the {place.lower()} scene at {when.lower()}, {speaker.title()} says {what}", [pid])
                )
                beats.insert(rng.randrange(1, len(beats) + 1), key)
            scenes.append(slug + "\n\n" + "\n\n".join(beats))
        c.docs.append((f"Low Tide, draft {script + 1}", "\n\n".join(scenes)))
    return c


# --- nonfiction, art, business -------------------------------------------------------------------

INVENTIONS = [
    "the canal lock",
    "the water mill",
    "the printing press",
    "the steam pump",
    "the telegraph",
    "the lighthouse lens",
    "the windmill",
    "the dry dock",
]
CITIES = ["Ghent", "Lyon", "Bristol", "Turin", "Leiden", "Porto", "Bergen", "Kraków"]


def nonfiction(rng: random.Random) -> Corpus:
    c = Corpus("nonfiction")
    for d, invention in enumerate(INVENTIONS):
        sections = [f"# A history of {invention}"]
        for city in rng.sample(CITIES, 5):
            year = rng.randint(1500, 1890)
            who = f"{rng.choice(NAMES)} {rng.choice(['Vos', 'Marchetti', 'Hale', 'Duarte', 'Lind'])}"
            key = f"In {year} the engineer {who} built the town's first {invention.split()[-1]}."
            pid = f"n{len(c.passages)}"
            c.passages[pid] = (d, key)
            c.queries.append((f"Who built the first {invention.split()[-1]} in {city}, and when?", [pid]))
            sections.append(f"## {city}")
            sections.append(with_key(rng, paragraphs(rng, rng.randint(500, 1400)), key))
        c.docs.append((f"A history of {invention}", "\n\n".join(sections)))
    return c


PIGMENTS = ["ultramarine", "lead white", "vermilion", "yellow ochre", "bone black", "viridian", "madder lake"]
FEATURES = ["sky", "river", "coat", "hands", "background", "window"]


def art(rng: random.Random) -> Corpus:
    c = Corpus("art")
    plate = 0
    for d in range(3):
        entries = []
        for _ in range(14):
            plate += 1
            title = (
                f"{rng.choice(ADJ).title()} {rng.choice(PLACES).title()} with {rng.choice(THINGS).title()}"
            )
            head = f"Plate {plate}. {title} ({rng.randint(1850, 1930)})"
            feature, pigment = rng.choice(FEATURES), rng.choice(PIGMENTS)
            key = f"The {feature} was laid in with {pigment} over a warm ground (plate {plate})."
            pid = f"a{len(c.passages)}"
            c.passages[pid] = (d, key)
            c.queries.append((f"Which pigment was used for the {feature} in {title}?", [pid]))
            entries.append(head + "\n\n" + with_key(rng, paragraphs(rng, rng.randint(400, 1400)), key))
        c.docs.append((f"Catalogue, room {d + 1}", "\n\n".join(entries)))
    return c


VENDORS = ["Brightline", "Oakfield", "Tessera", "Northwind", "Calloway", "Meridian"]
DECISIONS = ["renew", "cancel", "renegotiate", "extend by a year", "put out to tender"]


def business(rng: random.Random) -> Corpus:
    c = Corpus("business")
    day = date(2023, 1, 9)
    seen: set[tuple[str, int, int]] = set()
    for d in range(2):
        meetings = []
        for _ in range(22):
            day += timedelta(days=rng.randint(12, 20))
            head = f"{day.day} {day:%B %Y} — operations committee"
            paras = paragraphs(rng, rng.randint(300, 1300))
            vendor = rng.choice(VENDORS)
            body = "\n\n".join(paras)
            if (vendor, day.year, day.month) not in seen:
                seen.add((vendor, day.year, day.month))
                key = (
                    f"After discussion the committee agreed to {rng.choice(DECISIONS)} the {vendor} contract "
                    f"(minute {len(c.passages) + 1})."
                )
                pid = f"b{len(c.passages)}"
                c.passages[pid] = (d, key)
                c.queries.append(
                    (f"What did the committee decide about the {vendor} contract in {day:%B %Y}?", [pid])
                )
                body = with_key(rng, paras, key)
            if rng.random() < 0.4:
                rows = "\n".join(
                    f"| {rng.choice(NAMES)} | {rng.choice(THINGS)} review | {rng.randint(1, 28)} {day:%b} |"
                    for _ in range(rng.randint(2, 6))
                )
                body += "\n\n| owner | action | due |\n|---|---|---|\n" + rows
            meetings.append(head + "\n\n" + body)
        c.docs.append((f"Operations committee minutes {d + 1}", "\n\n".join(meetings)))
    return c


GENERATORS: dict[str, Callable[[random.Random], Corpus]] = {
    "fiction": fiction,
    "nonfiction": nonfiction,
    "technical": technical,
    "music": music,
    "film": film,
    "art": art,
    "journal": journal,
    "business": business,
    "finance": finance,
}


def build(kind: str, seed: int = 7) -> Corpus:
    corpus = GENERATORS[kind](random.Random(f"{kind}:{seed}"))
    corpus.spans()  # every answer occurs exactly once
    return corpus
