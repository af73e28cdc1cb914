"""The offline fact extractor: each memorable sentence, rewritten in the third person.

Deterministic and model-free. A sentence is kept when it says something about the speaker (a
first-person statement with content words) or names a person, place, date or number in a
statement; greetings, thanks, praise, reactions and questions are dropped. The kept sentence is
the speaker's own words with pronouns resolved ("I" -> "Caroline", "we" -> "Caroline and others",
"you" -> the other speaker of a two-party talk, "myself" -> "themself"), an elided opening "I"
restored ("Got a puppy" -> "Maria got a puppy"), and relative dates anchored to when it was said
("yesterday (on 7 May 2023)"); nothing else is added. Leading interjections and vocatives
("Wow, Mel!") and trailing emoji are dropped, and every fact ends with a full stop.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import replace

from cairn.adapters.local import rule_facts_text as text
from cairn.adapters.local.rule_facts_dates import anchor_dates, has_date
from cairn.adapters.local.rule_facts_labels import label, planned, preference, relation
from cairn.adapters.local.rule_facts_lexicon import REACTION_OPENERS
from cairn.adapters.local.rule_facts_rewrite import Rewritten, Voice, rewrite
from cairn.ports.facts import FactDraft, Utterance

NAME = "rules"
ROLES = ("user", "assistant")


def voice_of(u: Utterance) -> Voice:
    speaker = u.speaker.strip()
    if not speaker or speaker.lower() in ROLES:
        return Voice(f"the {speaker.lower() or u.role}", role_label=True)
    return Voice(speaker)


def _begins_another(word: str, ordered: list[str]) -> bool:
    """Whether a name of `ordered` (sorted, distinct) other than `word` starts with it: those that
    do follow it in order (a search, where comparing with every name was quadratic in speakers)."""
    at = bisect.bisect_left(ordered, word)
    if at < len(ordered) and ordered[at] == word:
        at += 1
    return at < len(ordered) and ordered[at].startswith(word)


class _Conversation:
    """Who is talking to whom, and which capitalised words are names, across one call."""

    def __init__(self, spoken: Sequence[Utterance]) -> None:
        self.voices = list(dict.fromkeys(voice_of(u) for u in spoken))
        named = [v.name for v in self.voices if not v.role_label]
        self.known = text.capitalised_elsewhere(u.text for u in spoken) | set(named)
        self.speakers = set(named)
        ordered = sorted(set(named))
        nicknames = {w for w in self.known if len(w) >= 3 and _begins_another(w, ordered)}
        self.vocatives = frozenset(self.speakers | nicknames)

    def listener(self, speaker: Voice) -> Voice | None:
        if speaker.role_label:
            other = "the assistant" if speaker.name == "the user" else "the user"
            return Voice(other, role_label=True)
        if len(self.voices) != 2:  # before the list: one per message was quadratic in speakers
            return None
        others = [v for v in self.voices if v != speaker and not v.role_label]
        return others[0] if len(others) == 1 else None


class RuleFactExtractor:
    def __init__(self, *, min_substance: int = 2) -> None:
        self.min_substance = min_substance

    @property
    def name(self) -> str:
        return NAME

    def extract(self, utterances: Sequence[Utterance]) -> list[FactDraft]:
        spoken = [u for u in utterances if u.role in ROLES and u.text.strip()]
        if not spoken:
            return []
        talk = _Conversation(spoken)
        found: dict[str, FactDraft] = {}
        for u in spoken:
            for fact in self.facts_of(u, talk):
                seen = found.get(fact.text)
                if seen is None:
                    found[fact.text] = fact
                elif fact.source_ids[0] not in seen.source_ids:
                    found[fact.text] = replace(seen, source_ids=seen.source_ids + fact.source_ids)
        return list(found.values())

    def facts_of(self, u: Utterance, talk: _Conversation) -> list[FactDraft]:
        speaker = voice_of(u)
        listener = talk.listener(speaker)
        out = []
        for raw in text.said(u.text):
            sentence = text.strip_lead(raw, talk.vocatives)
            if sentence and not text.is_question(sentence):
                fact = self.fact(u, sentence, speaker, listener, talk)
                if fact is not None:
                    out.append(fact)
        return out

    def fact(
        self, u: Utterance, sentence: str, speaker: Voice, listener: Voice | None, talk: _Conversation
    ) -> FactDraft | None:
        done = rewrite(sentence, speaker, listener)
        names = text.names_in(sentence, talk.known)
        others = [n for n in names if n != speaker.name]
        if not self.worth_keeping(sentence, done, others, talk):
            return None
        body = done.text
        dated = has_date(sentence)
        if u.said_at is not None:
            body, _ = anchor_dates(body, u.said_at.date())
        final = text.finish(body)
        if not final:
            return None
        entities = [speaker.name] if done.first_person and not speaker.role_label else []
        entities += names
        if done.listener_named and listener is not None and not listener.role_label:
            entities.append(listener.name)
        tag = label(sentence, first_person=done.first_person, dated=dated, names=names, others=len(others))
        return FactDraft(
            text=final,
            source_ids=(u.id,),
            type=tag.type,
            category=tag.category,
            subject=speaker.at(True) if done.first_person else None,
            entities=tuple(dict.fromkeys(entities)),
            importance=tag.importance,
        )

    def worth_keeping(self, sentence: str, done: Rewritten, others: list[str], talk: _Conversation) -> bool:
        low = sentence.lower()
        if low.startswith(REACTION_OPENERS):
            return False  # praise, thanks, wishes: about the moment, not about anyone
        others_words = {w for n in others for w in n.split()}
        content = text.substance(sentence, others_words, text.lowered(talk.vocatives))
        anchored = bool(others) or has_date(sentence) or text.has_number(sentence)
        extra = anchored or preference(sentence) or relation(sentence) or planned(sentence)
        if done.singular:
            return len(content) >= self.min_substance or (bool(content) and extra)
        if done.first_person:  # only "we"/"our": a generic "we can do this" unless it is anchored
            return bool(content) and (extra or text.past_tense_after_we(sentence))
        if low.split(" ", 1)[0] in ("you", "your", "you're", "you'd", "you've", "you'll"):
            return False  # praise or advice for the listener, not a fact about anyone
        full_names = sum(1 for n in others if " " in n)  # "It was Matt Patterson": an answer
        return anchored and len(content) + full_names >= self.min_substance
