"""First person to third: "I went" said by Caroline -> "Caroline went"; nothing else is reworded.

Only pronouns change (I/me/my/mine/myself, we/us/our, and "you" when the listener is known), with
the verb agreement they force ("I am" -> "is", "I love" -> "loves", "you're" -> "is"), and an
elided opening "I" is restored ("Got the tattoo a year ago" -> "Gina got the tattoo ...").
"we" becomes "<speaker> and others", since who else is meant is not said; reflexives ("myself",
"yourself") become "themself", since repeating the name ("express Gina") misreads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cairn.adapters.local.rule_facts_lexicon import (
    ADVERBS,
    AUX_AFTER_YOU,
    AUX_AGREEMENT,
    ELIDED_GERUND,
    ELIDED_PAST,
    NOT_VERBS,
    PAST_FORMS,
    UNCHANGED_AFTER_SUBJECT,
    YOU_FILLERS,
    YOU_VERBS,
)

_TOKEN = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)*|\s+|[^A-Za-z0-9\s]")
_HAD_NEXT = frozenset(["been", "had", "gone", "done", "seen", "never", "already", "just"])
_SINGULAR = frozenset(["i", "i'm", "im", "i've", "i'll", "i'd", "me", "my", "mine", "myself"])
_FIRST = _SINGULAR | {"we", "we're", "we've", "we'll", "we'd", "us", "our", "ours", "ourselves"}
_FINITE = frozenset(
    ["is", "was", "are", "were", "has", "have", "had", "can", "could", "will", "would", "helps", "help",
     "makes", "make", "keeps", "gives", "brings", "means", "takes", "feels", "seems", "sounds", "looks",
     "helped", "made", "kept", "gave", "brought", "meant", "took", "felt", "seemed", "sounded", "looked",
     "'s", "reminds", "reminded", "shows", "showed", "teaches", "taught", "lets", "allows", "requires"]
)  # fmt: skip
_SUBJECTS = frozenset(["i", "i'm", "im", "i've", "i'll", "i'd", "we", "we're", "we've", "we'll", "we'd"])
_CLAUSE_SUBJECTS = _SUBJECTS | {"you", "they", "he", "she", "you're", "they're"}
_FIRST_FORMS = {
    "i'm": "{n} is", "im": "{n} is", "i've": "{n} has", "i'll": "{n} will", "me": "{n}", "my": "{o}",
    "mine": "{o}", "myself": "themself", "we": "{n} and others", "we're": "{n} and others are",
    "we've": "{n} and others have", "we'll": "{n} and others will", "us": "{n} and others", "our": "{o}",
    "ours": "{o}", "ourselves": "themselves",
}  # fmt: skip
_IS_NEXT = frozenset(["a", "an", "the", "so", "really", "not", "very", "pretty", "such", "too", "always"])
_BASE_IN_ED = frozenset(["need", "feed", "bleed", "breed", "proceed", "succeed", "exceed", "speed", "shed"])
_LEAD_ADVERBS = frozenset(["still", "just", "currently", "also", "finally", "really", "already", "now"])


@dataclass(frozen=True)
class Voice:
    """How to name a person in a fact: "Caroline", or "The user" / "the user" for a bare role."""

    name: str
    role_label: bool = False

    def at(self, start: bool) -> str:
        return self.name[0].upper() + self.name[1:] if start and self.role_label else self.name

    def owner(self, start: bool) -> str:
        return self.at(start) + "'s"


@dataclass(frozen=True)
class Rewritten:
    text: str
    first_person: bool  # the speaker is in it (a first-person pronoun, or a restored subject)
    singular: bool  # ... as "I"/"me"/"my", not only inside a "we"
    listener_named: bool  # a "you" was replaced by the listener


def looks_past(word: str) -> bool:
    return word in PAST_FORMS or (word.endswith("ed") and word not in _BASE_IN_ED)


def third_person_s(word: str) -> str:
    low = word.lower()
    if low == "have":
        return "has"
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return word + "es"
    if len(low) > 2 and low.endswith("y") and low[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


class _Rewriter:
    def __init__(self, text: str, speaker: Voice, listener: Voice | None) -> None:
        self.tokens = _TOKEN.findall(text)
        self.out = list(self.tokens)
        self.words = [i for i, t in enumerate(self.tokens) if t[0].isalnum()]
        self.speaker, self.listener = speaker, listener
        self.first_person = self.singular = self.listener_named = False
        self.fixed: set[int] = set()  # token indexes already rewritten by a look-ahead

    def word(self, k: int) -> str:
        return self.tokens[self.words[k]].lower() if 0 <= k < len(self.words) else ""

    def verb_after(self, k: int) -> int:
        """Index (into `words`) of the first word after word k that is not an adverb."""
        j = k + 1
        while self.word(j) in ADVERBS or (self.word(j) in ("kind", "sort") and self.word(j + 1) == "of"):
            j += 2 if self.word(j) in ("kind", "sort") else 1
        return j

    def agree(self, k: int, table: dict[str, str]) -> None:
        """Make the verb after subject word k singular (third person)."""
        j = self.verb_after(k)
        if not 0 <= j < len(self.words) or self.tokens[self.words[j] - 1 : self.words[j]] != [" "]:
            return  # punctuation in between: no verb follows
        i, low = self.words[j], self.word(j)
        if low in table:
            self.out[i] = table[low]
        elif (
            low in UNCHANGED_AFTER_SUBJECT
            or low in PAST_FORMS
            or low in NOT_VERBS
            or looks_past(low)
            or low.endswith("n't")
            or not low.isalpha()
        ):
            return
        else:
            self.out[i] = third_person_s(self.tokens[i])
        self.fixed.add(i)

    def had_or_would(self, k: int) -> str:
        nxt = self.word(self.verb_after(k))
        return "had" if nxt in _HAD_NEXT or looks_past(nxt) else "would"

    def run(self) -> Rewritten:
        for k, i in enumerate(self.words):
            if i not in self.fixed:
                self.out[i] = self.replace(k, self.tokens[i])
        return Rewritten("".join(self.out), self.first_person, self.singular, self.listener_named)

    def replace(self, k: int, tok: str) -> str:
        low, start = tok.lower(), k == 0
        if low in _FIRST and tok not in ("US", "iM", "IM"):
            new = self.first_person_form(k, low, self.speaker.at(start))
            self.first_person = True
            self.singular = self.singular or low in _SINGULAR
            return new
        if self.listener and low.startswith("you"):
            return self.second_person(k, tok, low, self.listener.at(start), self.listener.owner(start))
        return tok

    def first_person_form(self, k: int, low: str, name: str) -> str:
        if low == "i":
            if not self.compound_subject(k):
                self.agree(k, AUX_AGREEMENT)
            return name
        if low == "i've" and self.compound_subject(k):
            return name + " have"
        if low in ("i'd", "we'd"):
            group = " and others" if low == "we'd" else ""
            return f"{name}{group} {self.had_or_would(k)}"
        return _FIRST_FORMS[low].format(n=name, o=name + "'s")

    def compound_subject(self, k: int) -> bool:
        """ "my husband and I went" (plural), not "... my goals and I hope" (a new clause)."""
        if self.word(k - 1) not in ("and", "or", "nor"):
            return False
        i = self.words[k - 1] - 1
        count = 0
        while i >= 0 and not any(c in self.tokens[i] for c in ",;:.!?-—–"):
            count += 1 if self.tokens[i][0].isalnum() else 0
            if self.tokens[i].lower() in _SUBJECTS or self.tokens[i].lower() in _FINITE or count > 4:
                return False
            i -= 1
        return count > 0

    def second_person(self, k: int, tok: str, low: str, name: str, owner: str) -> str:
        if (low, self.word(k + 1)) in YOU_FILLERS or (self.word(k - 1), low) in YOU_FILLERS:
            return tok
        mapped = {"your": owner, "yours": owner, "yourself": "themself", "you're": name + " is"}
        mapped |= {"you've": name + " has", "you'll": name + " will", "you'd": name + " would"}
        if low in mapped:
            self.listener_named = True
            return mapped[low]
        if low != "you":
            return tok
        self.listener_named = True
        nxt = self.word(self.verb_after(k))
        if nxt in AUX_AFTER_YOU or nxt in YOU_VERBS:
            self.agree(k, AUX_AFTER_YOU)
        return name


def restore_subject(text: str, speaker: Voice) -> str | None:
    """`text` with its elided opening "I" restored, or None when it does not open that way."""
    words = text.split(" ")
    if len(words) < 3 or not words[0].replace("'", "").isalpha():
        return None
    low, name = words[0].lower(), speaker.at(True)
    lead = ""
    if low in _LEAD_ADVERBS:
        lead, words = low + " ", words[1:]
        low = words[0].lower()
    rest = " ".join(words[1:])
    if low == "gonna" or _gerund_clause(low, words):
        return f"{name} is {lead}{low} {rest}"
    if low in ("can't", "cannot", "won't"):
        return f"{name} {lead}{low} {rest}"
    if low == "been":
        return f"{name} has {lead}been {rest}"
    if low in ELIDED_PAST or (lead and (low in PAST_FORMS or low.endswith("ed"))):
        return f"{name} {lead}{low} {rest}"
    return None


def _gerund_clause(low: str, words: list[str]) -> bool:
    """ "Researching adoption agencies - ..." (an elided "I'm"), not "Biking sounds fun"."""
    if low not in ELIDED_GERUND:
        return False
    for n, w in enumerate(words[1:], start=2):
        after = words[n].lower() if n < len(words) else ""
        bare = w.lower().strip(",.!?;:")
        if w in ("-", "—", "–"):
            return True
        if bare in _FINITE or (bare.endswith("'s") and after in _IS_NEXT):
            return False  # the -ing word is the subject ("Searching for a studio's a tough job")
        if w.endswith((",", ";")):
            return after not in _CLAUSE_SUBJECTS  # "Working together, we can ..." has its own subject
    return True


def rewrite(text: str, speaker: Voice, listener: Voice | None = None) -> Rewritten:
    """`text` in the third person: the speaker's and (if known) the listener's pronouns named."""
    restored = restore_subject(text, speaker)
    if restored is not None:
        done = _Rewriter(restored, speaker, listener).run()
        return Rewritten(done.text, True, True, done.listener_named)
    return _Rewriter(text, speaker, listener).run()
