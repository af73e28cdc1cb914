"""Word lists for the rule-based fact extractor and reflector (lowercase; apostrophes straight)."""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# --- verb agreement -------------------------------------------------------------------------
AUX_AGREEMENT = {"am": "is", "have": "has", "haven't": "hasn't", "do": "does", "don't": "doesn't",
                 "dont": "doesn't", "wanna": "wants to"}  # fmt: skip
AUX_AFTER_YOU = {"are": "is", "were": "was", "have": "has", "haven't": "hasn't", "do": "does",
                 "don't": "doesn't", "aren't": "isn't", "weren't": "wasn't", "wanna": "wants to"}  # fmt: skip
UNCHANGED_AFTER_SUBJECT = _words("""was were can could will would should shall must might may
    gotta gonna need'nt ought used""")
ADVERBS = _words("""really also just always never often usually sometimes still recently finally
    actually totally definitely absolutely even only truly already now kinda mostly personally
    generally honestly seriously currently constantly certainly probably barely hardly rarely
    especially literally simply genuinely normally def sorta somehow soon both all each too ever""")
PAST_FORMS = _words("""went got had made took saw came found felt bought brought thought told said gave
    left met ran began knew heard kept lost won wrote sent spent built taught caught fought sold held
    stood understood became drew grew threw flew ate drank swam sang rode drove fell wore broke chose
    spoke woke forgot sat slept paid laid led fed meant lent dealt did was were read put set cut hit
    let hurt quit spread shut cost bet fit bit hid shook stuck struck swung dug spun knelt learnt
    burnt dreamt lit overcame forgave rebuilt upset became begun done gone seen been taken given""")
NOT_VERBS = _words("""and or but nor to too so as the a an of in on at for with by from that this
    these those it myself yourself who which what when where why how not no yes if than then""")
ELIDED_PAST = _words("""got went had made took bought joined started finished tried visited
    adopted moved met attended signed picked found painted learned learnt booked ran won""")
ELIDED_GERUND = _words("""planning thinking hoping trying working looking heading going taking
    starting learning getting researching doing reading writing painting studying volunteering
    practicing practising training preparing saving searching waiting considering focusing
    spending hanging""")

# --- "you" that stays "you" -----------------------------------------------------------------
YOU_FILLERS = frozenset(
    [("you", "know"), ("you", "guys"), ("you", "all"), ("thank", "you"), ("see", "you"),
     ("mind", "you"), ("you", "see"), ("bless", "you"), ("miss", "you"), ("love", "you")]
)  # fmt: skip
YOU_VERBS = _words("""like love want need know think go do have make get feel say see look paint
    enjoy keep take find try seem mean deserve inspire rock help work play live mention said told give
    come start put run bring build create plan decide choose learn teach write read show share use
    hear remember prefer""")

# --- what makes a sentence worth keeping ------------------------------------------------------
FILLER = _words("""wow hey hi hello thanks thank great awesome amazing cool nice good glad happy
    proud sure totally agree love hope see know think wait bet appreciate sounds sound fun lovely
    wonderful fantastic incredible beautiful sweet super pretty lot definitely absolutely course
    right true exactly yep yup yeah yes sorry hear excited stoked chat chatting talk talking soon later
    bye care luck congrats congratulations cheers lol haha oh ah aw aww um hmm well anyway
    always here glad means mean meant kind words supportive inspiring let inspired awesome
    cute gorgeous stunning blast thrilled honored touched grateful thankful blessed hug hugs
    catch tell share keep going feel feeling felt look looks looking forward mind idea ideas
    thing stuff way ways something anything everything day wish cool nice rock rocks""")
INTERJECTIONS = _words("""wow hey hi hello yeah yes yep yup oh ah aw aww um hmm well so anyway
    ok okay sure totally haha lol omg gosh cool great awesome nice thanks btw also plus and but
    absolutely definitely indeed really honestly seriously exactly alright right noted sorry""")
PREFERENCE = _words("""love loves loved like likes enjoy enjoys enjoyed prefer prefers hate hates
    favourite favorite fave adore adores passionate obsessed into fan keen""")
REACTION_OBJECTS = _words("""that it this those these you your the them his her their ya""")
RELATIONS = _words("""sister sisters brother brothers mom mum mother dad father parents husband wife
    kids kid children child son sons daughter daughters friend friends partner boyfriend girlfriend
    family grandma grandpa grandmother grandfather aunt uncle cousin cousins niece nephew fiance
    fiancee baby babies wife's husband's in-laws roommate neighbor neighbour colleague coworker
    coworkers boss mentor pet pets dog dogs cat cats puppy pup""")
PLAN = _words("""going gonna planning plan plans will 'll intend intending hoping hope aim
    aiming tomorrow next upcoming soon want wanna""")
DECISION = _words("""decided decide decision chose choose settled agreed committed""")
STATUS_START = _words("""working busy swamped doing currently still living staying studying
    feeling dealing recovering training""")
EVENT_VERBS = _words("""went joined started finished visited adopted moved met attended signed
    bought got took ran won lost painted married graduated traveled travelled volunteered
    participated organized organised hosted celebrated completed received launched opened
    quit donated had made saw became""")
NOT_NAMES = _words("""i i'm i've i'll i'd mom mum dad ok okay lol omg wow hey hi hello thanks yes
    no yeah god btw the a an this that these those it its my our your his her their we you they he
    she there here what when where why how who which so but and or if then just also oh well
    monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat
    jan feb mar apr jun jul aug sep sept oct nov dec""")

# --- how a session went (reflection) ----------------------------------------------------------
SUCCESS = (r"\bthanks?\b|\bthank you\b|\bthat worked\b|\bit worked\b|\bworks now\b|\bworking now\b"
           r"|\bperfect\b|\bsolved\b|\bfixed\b|\bresolved\b|\bthat did it\b|\bworks great\b")  # fmt: skip
RESOLVED = (r"\bthat worked\b|\bit worked\b|\bworks now\b|\bworking now\b|\bsolved\b|\bfixed\b"
            r"|\bresolved\b|\bthat did it\b")  # fmt: skip
FAILURE = (r"\bdoes(?:n't| not) work\b|\bdid(?:n't| not) work\b|\bnot working\b|\bstill broken\b"
           r"|\bbroken\b|\berror\b|\bexception\b|\btraceback\b|\bfail(?:s|ed|ing|ure)?\b|\bwrong\b"
           r"|\bcrash(?:es|ed|ing)?\b|\bstill (?:get|see)ting\b|\bno luck\b")  # fmt: skip
NEGATED = r"(?:\b(?:no|not|without|never|zero|any)|n't)\s+(?:\w+\s+)?$"
REQUEST = (r"^(?:please|can you|could you|would you|how (?:do|can|should) i|help me|i need|i want"
           r"|why (?:does|is|do)|what(?:'s| is) the best)\b")  # fmt: skip
REACTION_OPENERS = ("it's great", "it's awesome", "it's amazing", "it's so", "that's", "that is",
                    "sounds", "good to", "great to", "glad", "so glad", "congrats", "congratulations",
                    "thanks", "thank you", "way to go", "keep it up", "keep going", "keep up", "good luck",
                    "best of luck", "hope", "i hope", "wishing", "what a", "how ", "love that",
                    "love it", "take care", "talk soon", "see you", "bye", "let me know", "sorry",
                    "i'm sorry", "you rock", "you got this", "you've got this", "i'm so happy for you",
                    "i'm so proud")  # fmt: skip
