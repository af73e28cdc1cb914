"""Every stopword list in Cairn, named for the job it does.

The lists differ on purpose: each was tuned with its job's tests, and the search list is built
into the embedded index. Merging two changes what Cairn finds or extracts, so a new use picks the
list whose job matches rather than adding one elsewhere.
"""

from __future__ import annotations

from typing import Final


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# The full-text legs and boolean queries (domain/words.py): the common 179-word English list.
# The embedded index skips these words' postings when it is built, so changing it means a rebuild.
SEARCH: Final = _words(
    """
    a about above after again against ain all am an and any are aren aren't as at be because been
    before being below between both but by can couldn couldn't d did didn didn't do does doesn
    doesn't doing don don't down during each few for from further had hadn hadn't has hasn hasn't
    have haven haven't having he her here hers herself him himself his how i if in into is isn isn't
    it it's its itself just ll m ma me mightn mightn't more most mustn mustn't my myself needn
    needn't no nor not now o of off on once only or other our ours ourselves out over own re s same
    shan shan't she she's should should've shouldn shouldn't so some such t than that that'll the
    their theirs them themselves then there these they this those through to too under until up ve
    very was wasn wasn't we were weren weren't what when where which while who whom why will with
    won won't wouldn wouldn't y you you'd you'll you're you've your yours yourself yourselves
    """
)

# Offline answers and rule-based facts (extractive_text, rule_facts_text): the search list's
# contractions spelled out, plus the fillers of chat (yeah, okay, kind of, thing).
EXTRACTIVE: Final = _words(
    """
    a about above after again against all also am an and any are aren't as at be because been before
    being below between both but by can can't could couldn't did didn't do does doesn't doing don't
    down during each few for from further get go going got had hadn't has hasn't have haven't having
    he he'd he'll he's her here here's hers herself hey hi him himself his how how's i i'd i'll i'm
    i've if in into is isn't it it's its itself just kind know let's like likely many may me might
    more most much must mustn't my myself no nor not of off oh ok okay on once one only or other
    ought our ours ourselves out over own really same shall shan't she she'd she'll she's should
    shouldn't so some sort such than that that's the their theirs them themselves then there there's
    these they they'd they'll they're they've thing things think this those through to too under
    until up very was wasn't we we'd we'll we're we've went were weren't what what's when when's
    where where's which while who who's whom why why's will with won't would wouldn't yeah yes you
    you'd you'll you're you've your yours yourself yourselves
    """
)

# ThoughtMCP's rule-based reasoning (services/thoughtmcp/reasoning/text.py): function words, modal verbs.
REASONING: Final = _words(
    """
    a able about above across after again against all also am among an and any are as assume at be
    because been before being believe below between both but by can could did do does doing down
    during each either else few for from further get got guess had has have having he her here hers
    him his hopefully how i if in into is it its itself just let likely lot lots made make many
    maybe me more most much my need needs no nor not now of off on once only or other our ours out
    over own per perhaps possibly probably really same seem seems shall she should so some such than
    that the their theirs them then there these they thing things think this those through to too
    under until up upon us use used using very via want wants was way we were what when where which
    while who whom why will with within without would yet you your yours
    """
)

# Words a reflection's cited claim need not share with its source (memory_reflection).
REFLECTION: Final = _words(
    """
    a about after again all also an and any are as at be been before being but by can could did do
    does doing done for from had has have how i if in into is it its just me more most my no not now
    of on once only or other our out over own same she should so some such than that the their them
    then there these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your
    """
)

# Fact de-duplication (fact_memory): only articles, conjunctions and prepositions, so two facts
# that differ in any content word stay two.
FACT_MATCH: Final = _words(
    """
    a an and are at be been but by for from in is it its of on or that the this to was were with
    """
)

# ThoughtMCP's automatic keywords (thoughts): frequent words of three letters or more.
KEYWORDS: Final = _words(
    """
    about after again all also and any are be because been before being both but can could each few
    for from further had has have here how into is it's its just more most not once only other our
    out over own same should some such than that the their them then there these they this those
    very was were what when where which while who whom why will with would you your
    """
)

# Words a concept n-gram may not start or end with (concepts).
CONCEPT_EDGES: Final = _words(
    """
    a about an and are as at be been but by did do does for from he her here his how i if in into is
    it its me my not of on or our she so than that the their then there these they this those to was
    we were what when where which who whom why with you your
    """
)

# Dutch function words (articles, pronouns, prepositions, conjunctions, common auxiliaries): with
# SEARCH, the words a bare-word query in the Jeffs Brain query language drops (domain/jeffs_query.py).
DUTCH: Final = _words(
    """
    aan al alles als alsof altijd andere ben bij daar dan dat de der des deze die dit doch doen door
    dus een eens en er ge geen geweest haar had heb hebben heeft hem het hier hij hoe hun iemand iets
    ik in is ja je jij jou jouw kan kon kunnen maar me meer men met mij mijn moet na naar niet niets
    nog nu of om omdat onder ons ook op over reeds te tegen toch toen tot u uit uw van veel voor want
    waren was wat we wel werd wezen wie wil worden wordt zal ze zelf zich zij zijn zo zonder zou
    """
)
