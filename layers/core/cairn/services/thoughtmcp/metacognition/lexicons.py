"""The word lists the offline emotion engine reads, and where each comes from.

- **VADER** (Valence Aware Dictionary and sEntiment Reasoner), the `vaderSentiment` package, version
  3.3.2, MIT License (Copyright (c) 2016 C.J. Hutto; the licence covers the package including its
  `vader_lexicon.txt`, ~7,500 human-rated words, and ships in its dist-info as LICENSE.txt). Used
  for valence (its compound score, which already handles negation, degree adverbs, capitals,
  "but" and punctuation), for the strength of a discrete emotion's evidence words (their rated
  valence) and, through its list of degree adverbs, as one of the arousal cues. Cite: Hutto, C.J. &
  Gilbert, E.E. (2014), VADER: A Parsimonious Rule-based Model for Sentiment Analysis of Social
  Media Text, ICWSM-14.
- **Cairn's own lists** below (discrete emotions, arousal, dominance), composed for Cairn by hand
  from ordinary English usage and released with it under the project's licence. They are not
  taken from any published emotion lexicon: the well-known ones (NRC EmoLex, NRC VAD, ANEW,
  WordNet-Affect) do not allow commercial use or redistribution on terms Cairn can ship under.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Final

from cairn.services.thoughtmcp.metacognition.text import cues

VADER_PACKAGE: Final = "vaderSentiment"
VADER_LICENCE: Final = "MIT"


def vader_version() -> str:
    try:
        return version(VADER_PACKAGE)
    except PackageNotFoundError:  # pragma: no cover - it is a pinned dependency
        return "unknown"


@cache
def vader() -> Any:
    """The VADER analyser, loaded once (reading its lexicon takes ~20 ms). Its scores also hold
    `sum`, the sum of the text's word sentiments before punctuation emphasis, and `scored`, how
    many words it scored: what valence.py adds up over the windows of a long text."""
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    class Analyser(SentimentIntensityAnalyzer):
        def score_valence(self, sentiments: list[float], text: str) -> dict[str, float]:
            scores = dict(super().score_valence(sentiments, text))
            scores["sum"] = float(sum(sentiments))
            scores["scored"] = len(sentiments)
            return scores

    return Analyser()


@cache
def vader_boosters() -> frozenset[str]:
    """VADER's degree adverbs that intensify ("very", "extremely"), not those that dampen."""
    from vaderSentiment.vaderSentiment import BOOSTER_DICT

    return frozenset(w for w, v in BOOSTER_DICT.items() if v > 0 and " " not in w)


@cache
def vader_negations() -> frozenset[str]:
    from vaderSentiment.vaderSentiment import NEGATE

    return frozenset(NEGATE)


def word_valence(word: str) -> float | None:
    """VADER's rated valence of one word (-4..4), None when the lexicon does not hold it."""
    value = vader().lexicon.get(word)
    return None if value is None else float(value)


# --- Cairn's own lists -------------------------------------------------------------------------

EMOTION_WORDS: Final[dict[str, frozenset[str]]] = {
    "joy": cues(
        "happy happier happiest happily happiness joy joyful joyous delighted delight "
        "delightful thrilled glad cheerful elated excited exciting ecstatic overjoyed "
        "wonderful lovely love loved loving enjoy enjoyed enjoying fun pleased pleasure great "
        "amazing fantastic excellent yay hooray celebrate celebrating",
    ),
    "sadness": cues(
        "sad sadly sadness unhappy depressed depressing miserable heartbroken grief grieving "
        "sorrow sorrowful gloomy lonely disappointed disappointing disappointment tearful cry "
        "crying cried hopeless downhearted despair mourn mourning melancholy",
    ),
    "anger": cues(
        "angry anger angered furious fury rage raging outraged outrageous irritated "
        "irritating annoyed annoying mad hate hated hatred frustrated frustrating frustration "
        "resent resentful resentment livid infuriating infuriated hostile enraged",
    ),
    "fear": cues(
        "afraid scared fear fearful feared terrified terrifying anxious anxiety worried worry "
        "worrying nervous panic panicked dread dreading frightened frightening alarmed uneasy "
        "threatened petrified",
    ),
    "disgust": cues(
        "disgusted disgusting disgust gross revolting repulsive repulsed sickening nauseating "
        "vile yuck appalled appalling loathe loathsome contempt",
    ),
    "surprise": cues(
        "surprised surprising surprise surprisingly shocked shocking astonished astonishing "
        "amazed unexpected unexpectedly stunned startled wow whoa",
    ),
    "pride": cues(
        "proud pride accomplished accomplishment achievement achieved triumph triumphant "
        "honored honoured succeeded nailed",
    ),
    "shame": cues(
        "ashamed shame shameful embarrassed embarrassing embarrassment humiliated humiliating "
        "humiliation mortified disgraced",
    ),
    "guilt": cues(
        "guilty guilt regret regretted regrets regretful remorse remorseful sorry apologize "
        "apologise apologies",
        "my fault",
        "our fault",
        "blame myself",
    ),
    "gratitude": cues(
        "grateful gratitude thankful thanks thank appreciate appreciated appreciative indebted",
        "thank you",
    ),
    "awe": cues(
        "awe awed awestruck breathtaking majestic wondrous magnificent sublime marvel "
        "marvelous marvellous astounding staggering",
    ),
}
"""Cue words per discrete emotion (whole words or phrases, lower case)."""

POSITIVE_EMOTIONS: Final = frozenset({"joy", "pride", "gratitude", "awe"})
NEGATIVE_EMOTIONS: Final = frozenset({"sadness", "anger", "fear", "disgust", "shame", "guilt"})

HIGH_AROUSAL: Final = cues(
    "excited exciting thrilled ecstatic elated furious outraged livid enraged terrified "
    "panic panicked shocked stunned astonished amazed urgent urgently frantic frantically "
    "desperate desperately alarmed screaming shouting incredible unbelievable wow whoa",
    "can't wait",
)
"""Words of high activation, whatever their valence."""

LOW_AROUSAL: Final = cues(
    "calm calmly relaxed relaxing tired exhausted bored boring sleepy quiet quietly "
    "peaceful content serene steady slowly gentle gently drained weary",
)
"""Words of low activation."""

POWER_WORDS: Final = cues(
    "control controlled decide decided decision confident certain determined lead leading "
    "command commanding master mastered manage managed handle handled able capable strong "
    "empowered own ownership insist choose chose win winning won achieve achieved",
    "in charge",
    "i will",
    "we will",
    "i can",
    "we can",
    "on top of",
)
"""Control, agency and power: raise dominance."""

HELPLESS_WORDS: Final = cues(
    "helpless powerless overwhelmed trapped stuck unable lost confused hopeless forced "
    "victim vulnerable afraid scared weak defeated doomed desperate submit submitted",
    "can't",
    "cannot",
    "no choice",
    "out of control",
    "at the mercy",
)
"""Helplessness and lack of control: lower dominance."""
