"""ExtractiveGenerator: answers made only of the passages' own sentences, each cited exactly."""

from __future__ import annotations

import re

import numpy as np
import pytest

from cairn.adapters.local.extractive import NO_MEMORY, ExtractiveGenerator, word_groups
from cairn.adapters.local.extractive_select import MAX_EMBEDDED
from cairn.ports.generator import Answer, Citation, Delta, Done, Passage

pytestmark = pytest.mark.anyio

DIARY = [
    Passage(
        "c1",
        "d1",
        "1:56 pm on 8 May, 2023 — Caroline: Hey Mel! Good to see you. How have you been?",
        0.9,
    ),
    Passage(
        "c2",
        "d2",
        "1:57 pm on 8 May, 2023 — Caroline: I went to a LGBTQ support group yesterday and it was so "
        "powerful. The stories there gave me courage.",
        0.8,
    ),
    Passage("c3", "d3", "Melanie: Did you go to the support group with anyone? Groups can be scary.", 0.7),
    Passage(
        "c4",
        "d4",
        "## Weekend\n\n- Melanie painted a sunrise by the lake in 2022.\n- She ran a charity race.",
        0.3,
    ),
]


def answer_sentences(answer: Answer) -> list[str]:
    return [answer.text[c.answer_start : c.answer_end] for c in answer.citations]


async def test_every_answer_sentence_is_lifted_verbatim_from_a_passage() -> None:
    texts = {p.chunk_id: p.text for p in DIARY}
    for question in (
        "When did Caroline go to the LGBTQ support group?",
        "Who painted a sunrise?",
        "charity race",
    ):
        answer = await ExtractiveGenerator().complete(question, DIARY)
        assert answer.citations, question
        for citation, sentence in zip(answer.citations, answer_sentences(answer), strict=True):
            assert sentence == citation.quote and sentence in texts[citation.chunk_id]
        # and the answer is nothing but those sentences and the separators between them
        rest = answer.text
        for sentence in answer_sentences(answer):
            rest = rest.replace(sentence, "", 1)
        assert rest.strip() == ""


async def test_picks_the_sentence_that_answers_over_distractors() -> None:
    answer = await ExtractiveGenerator(max_sentences=1).complete(
        "When did Caroline go to the LGBTQ support group?", DIARY
    )
    assert answer_sentences(answer) == [DIARY[1].text.split(" The stories")[0]]  # date, speaker and all


async def test_a_relevant_sentence_from_a_lower_ranked_passage_wins_over_rank_alone() -> None:
    answer = await ExtractiveGenerator(max_sentences=1).complete("Who painted a sunrise by the lake?", DIARY)
    assert answer.citations[0].chunk_id == "c4"
    assert answer.text == "Melanie painted a sunrise by the lake in 2022."  # the bullet marker is trimmed


async def test_statements_beat_questions_that_repeat_the_words() -> None:
    # Given a higher-ranked turn asking exactly what the question asks, and the reply below it
    passages = [
        Passage("ask", "d1", "Did you take the pottery class with Anna?", 0.9),
        Passage("reply", "d2", "Yes, I took the pottery class with Anna.", 0.8),
    ]
    answer = await ExtractiveGenerator(max_sentences=1).complete(
        "Did Jo take the pottery class with Anna?", passages
    )
    assert answer_sentences(answer) == ["Yes, I took the pottery class with Anna."]


async def test_the_same_sentence_in_overlapping_chunks_is_quoted_once() -> None:
    text = "Alice moved to Lisbon in March. She loves the tram."
    passages = [
        Passage("a", "d", text, 0.9),
        Passage("b", "d", text, 0.8),
        Passage("c", "e", text.upper(), 0.1),
    ]
    answer = await ExtractiveGenerator().complete("Where did Alice move to?", passages)
    assert answer_sentences(answer) == ["Alice moved to Lisbon in March."]
    assert answer.citations[0].chunk_id == "a"


async def test_each_sentence_streams_in_word_groups_followed_by_its_citation() -> None:
    events = [e async for e in ExtractiveGenerator(words_per_delta=3).stream("support group", DIARY[1:2])]
    assert isinstance(events[-1], Done) and events[-1].model == "extractive"
    answer = ""
    for event in events[:-1]:
        if isinstance(event, Delta):
            assert len(event.text.split()) <= 3
            answer += event.text
        else:
            assert isinstance(event, Citation)
            assert answer.endswith(event.quote) and event.answer_end == len(answer)
    assert answer == events[-1].answer
    assert isinstance(events[-2], Citation)


@pytest.mark.parametrize("passages", [[], [Passage("x", "y", "The boiler was serviced in autumn.")]])
async def test_nothing_relevant_says_so_without_citations(passages: list[Passage]) -> None:
    answer = await ExtractiveGenerator().complete("What is Caroline's favourite quantum algorithm?", passages)
    assert answer == Answer(NO_MEMORY, [], "extractive")


async def test_headings_and_empty_passages_are_not_quoted() -> None:
    passages = [
        Passage("h", "d", "# Shopping\n\n---\n"),
        Passage("e", "d", ""),
        Passage("s", "d", "Buy shopping bags."),
    ]
    answer = await ExtractiveGenerator().complete("shopping", passages)
    assert answer_sentences(answer) == ["Buy shopping bags."]


def test_word_groups_concatenate_back_to_the_text() -> None:
    text = " one two  three\nfour five six seven"
    groups = word_groups(text, 2)
    assert "".join(groups) == text
    assert [len(re.findall(r"\S+", g)) for g in groups] == [2, 2, 2, 1]


async def test_the_statement_answering_a_question_just_before_it_is_quoted() -> None:
    # Given a passage whose matching sentence is itself a question, answered by the next sentence
    passages = [Passage("p", "d", "Did you ever go to Peru? Yes, we hiked the Inca trail in 2019.")]
    answer = await ExtractiveGenerator(max_sentences=1).complete("When did they go to Peru?", passages)
    assert answer.text == "Yes, we hiked the Inca trail in 2019."


async def test_at_most_max_sentences_and_a_passage_reads_in_order() -> None:
    passage = Passage(
        "p", "d", "Tea is grown in Assam. Green tea is steamed. Black tea is oxidised. Tea is drunk hot."
    )
    answer = await ExtractiveGenerator(max_sentences=2).complete("tea", [passage])
    sentences = answer_sentences(answer)
    assert len(sentences) == 2
    assert sentences == sorted(sentences, key=passage.text.index)


async def test_passages_that_share_nothing_with_the_question_are_not_quoted() -> None:
    # Given a top passage full of the question's words, one that answers as well, and filler
    passages = [
        Passage("top", "d1", "The garden roses are red. The boiler was serviced in autumn.", 0.9),
        Passage("filler", "d2", "A late frost hurt the plums this year.", 0.85),
        Passage("mid", "d3", "The garden roses came from a nursery in Kent.", 0.8),
    ]
    answer = await ExtractiveGenerator(max_sentences=5).complete("Tell me about the garden roses", passages)
    # Then only the sentences about garden roses are quoted, each cited with its own passage
    quoted = dict(zip(answer_sentences(answer), [c.document_id for c in answer.citations], strict=True))
    assert quoted == {
        "The garden roses are red.": "d1",
        "The garden roses came from a nursery in Kent.": "d3",
    }


async def test_sentences_far_below_the_best_are_not_quoted() -> None:
    passages = [
        Passage("a", "d1", "Alice moved to Lisbon in March 2021 with her partner.", 0.9),
        Passage("b", "d2", "Alice likes coffee.", 0.8),
    ]
    answer = await ExtractiveGenerator(max_sentences=5).complete("When did Alice move to Lisbon?", passages)
    assert answer_sentences(answer) == ["Alice moved to Lisbon in March 2021 with her partner."]


async def test_of_two_sentences_saying_as_much_the_shorter_is_quoted() -> None:
    passage = Passage(
        "trip",
        "d",
        "That long and bright summer we went sailing slowly past many small rocky islands, deep quiet "
        "fjords, white glaciers and tiny fishing villages. We went sailing past islands and fjords.",
    )
    answer = await ExtractiveGenerator(max_sentences=1).complete("Where did they go sailing?", [passage])
    assert answer_sentences(answer) == ["We went sailing past islands and fjords."]


class _Cosines:
    """An embedder whose vectors make each text's cosine to the first one what `cosine` says."""

    model_id = "stub"
    dimension = 2

    def __init__(self, cosine: dict[str, float]) -> None:
        self.cosine = cosine
        self.seen: list[list[str]] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.seen.append(list(texts))
        rows = [[1.0, 0.0]] + [[c, (1 - c * c) ** 0.5] for c in (self.cosine.get(t, 0.0) for t in texts[1:])]
        return np.array(rows, dtype=np.float32)


async def test_with_an_embedder_sentences_are_chosen_by_similarity_relative_to_the_best() -> None:
    # Given sentences sharing no word with the question, scored by the embedder
    passages = [
        Passage("a", "d1", "He stayed in a cabin near Tromsø. The printer jams.", 0.9),
        Passage("b", "d2", "They hiked a fjord for a fortnight. Lunch was soup.", 0.8),
    ]
    embedder = _Cosines(
        {
            "He stayed in a cabin near Tromsø.": 0.62,
            "They hiked a fjord for a fortnight.": 0.55,
            "The printer jams.": 0.45,  # above the floor, below 0.8 of the best
            "Lunch was soup.": 0.1,
        }
    )
    answer = await ExtractiveGenerator(max_sentences=5, embedder=embedder).complete(
        "Where did Bob spend his holiday?", passages
    )
    assert answer_sentences(answer) == [
        "He stayed in a cabin near Tromsø.",
        "They hiked a fjord for a fortnight.",
    ]
    assert [c.document_id for c in answer.citations] == ["d1", "d2"]


async def test_with_an_embedder_nothing_under_the_floor_is_quoted() -> None:
    embedder = _Cosines({"The boiler was serviced in autumn.": 0.3})
    answer = await ExtractiveGenerator(embedder=embedder, min_similarity=0.4).complete(
        "What did the wedding venue cost?", [Passage("x", "y", "The boiler was serviced in autumn.")]
    )
    assert answer == Answer(NO_MEMORY, [], "extractive")


async def test_with_an_embedder_at_most_max_embedded_sentences_are_embedded() -> None:
    embedder = _Cosines({})
    passages = [Passage(f"c{i}", f"d{i}", "One fact. " * 50) for i in range(10)]
    await ExtractiveGenerator(embedder=embedder).complete("anything", passages)
    assert len(embedder.seen) == 1 and len(embedder.seen[0]) == 1 + MAX_EMBEDDED
