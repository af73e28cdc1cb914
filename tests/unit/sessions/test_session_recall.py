"""Session recall on the fakes (a bag-of-words hashing embedder): what the context may change.

Plain search ranks the tennis note fifth for "when is the match" (four notes say "match" more
often); only the session's context can lift it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.services.documents.inputs import DocumentInput
from cairn.services.search.service import SearchHit
from cairn.services.sessions.session_recall import SessionRecall

QUERY = "when is the match"
CHESS = "memory/global/chess.md"
TENNIS = "memory/global/tennis.md"
ABOUT_TENNIS = "which match? the tennis one at the park, I mean"
STRONG = 10.0  # RRF with k=60 is flat: context must outweigh the query list to reorder its top
ABOUT_CHESS = "which match? the chess one at the club, I mean"
NOTES = {
    CHESS: "The chess match is on Friday. A long match, the club says.",
    "memory/global/football.md": "The football match was a draw; the match report is online.",
    "memory/global/boxing.md": "Boxing: the title match is sold out.",
    "memory/global/cricket.md": "The cricket match starts at noon; the match may rain off.",
    TENNIS: "Tennis on Sunday at the park, a friendly match.",
    "memory/global/park.md": "The park opens at nine; the tennis courts at ten.",
    "memory/global/garden.md": "Tomatoes need watering every evening.",
    "memory/project/p/sync.md": "Project sync: specs and code meet on Monday.",
}


@pytest.fixture
def notes(container: Container, brain: Brain) -> None:
    for path, text in NOTES.items():
        container.documents.write(brain, path, text.encode())


def _paths(chunks: list[SearchHit]) -> list[str]:
    return [c.path for c in chunks]


def _session(container: Container, brain: Brain, *messages: tuple[str, str]) -> str:
    s = container.sessions.create(brain)
    for role, content in messages:
        container.sessions.append(brain, s.id, role, content)
    return s.id


def _recall(container: Container, brain: Brain, sid: str, **tuning: Any) -> list[str]:
    """Recall with some tuning changed (the service's own recall uses the configured one)."""
    base = container.sessions.recaller
    recaller = SessionRecall(base.search, base.embedder, replace(base.tuning, **tuning))
    session, _ = container.sessions.get(brain, sid)
    context = container.sessions.recent(brain, sid, recaller.tuning.window)
    return _paths(recaller.recall(brain, session, QUERY, context))


def _plain(container: Container, brain: Brain) -> list[str]:
    return [h.path for h in container.search.search(brain, QUERY, top_k=10).hits]


@pytest.mark.usefixtures("notes")
def test_without_messages_recall_is_plain_search(container: Container, brain: Brain) -> None:
    sid = _session(container, brain)
    assert _paths(container.sessions.recall(brain, sid, QUERY)) == _plain(container, brain)
    assert _plain(container, brain).index(TENNIS) == 4  # below the four that say "match" more


@pytest.mark.usefixtures("notes")
def test_recent_context_lifts_what_it_is_about(container: Container, brain: Brain) -> None:
    sid = _session(
        container, brain, ("user", ABOUT_TENNIS), ("user", "the match at the park: tennis, on sunday")
    )
    recalled = _paths(container.sessions.recall(brain, sid, QUERY))
    assert recalled.index(TENNIS) < _plain(container, brain).index(TENNIS)
    assert sorted(recalled) == sorted(_plain(container, brain))  # same notes, new order


@pytest.mark.usefixtures("notes")
def test_context_weight_decides_how_far(container: Container, brain: Brain) -> None:
    tennis = _session(container, brain, ("user", ABOUT_TENNIS))
    chess = _session(container, brain, ("user", ABOUT_CHESS))
    assert _recall(container, brain, tennis, context_weight=STRONG)[0] == TENNIS
    assert _recall(container, brain, chess, context_weight=STRONG)[0] == CHESS
    assert _recall(container, brain, tennis, context_weight=0.0) == _plain(container, brain)


@pytest.mark.usefixtures("notes")
def test_newer_messages_weigh_more(container: Container, brain: Brain) -> None:
    chess_last = _session(container, brain, ("user", ABOUT_TENNIS), ("user", ABOUT_CHESS))
    tennis_last = _session(container, brain, ("user", ABOUT_CHESS), ("user", ABOUT_TENNIS))
    ranks_chess_last = _recall(container, brain, chess_last, context_weight=STRONG, decay=0.2)
    ranks_tennis_last = _recall(container, brain, tennis_last, context_weight=STRONG, decay=0.2)
    assert ranks_chess_last.index(CHESS) < ranks_chess_last.index(TENNIS)
    assert ranks_tennis_last.index(TENNIS) < ranks_tennis_last.index(CHESS)


@pytest.mark.usefixtures("notes")
def test_a_message_unlike_the_query_is_gated_out(container: Container, brain: Brain) -> None:
    sid = _session(container, brain, ("user", "tennis park sunday racket serve"))
    # cosine(query, message) is 0: below the gate the message changes nothing
    assert _paths(container.sessions.recall(brain, sid, QUERY)) == _plain(container, brain)
    assert _recall(container, brain, sid, context_weight=STRONG) == _plain(container, brain)
    assert _recall(container, brain, sid, context_weight=STRONG, gate_floor=-1.0)[0] == TENNIS


@pytest.mark.usefixtures("notes")
def test_tool_and_system_messages_are_not_context(container: Container, brain: Brain) -> None:
    sid = _session(container, brain, ("system", ABOUT_TENNIS), ("tool", ABOUT_TENNIS))
    assert _recall(container, brain, sid, context_weight=STRONG) == _plain(container, brain)


@pytest.mark.usefixtures("notes")
def test_echoes_of_the_conversation_go_last(container: Container, brain: Brain) -> None:
    said = "The chess match is on Friday. A long match, the club says."
    sid = _session(container, brain, ("user", said))
    chunks = container.sessions.recall(brain, sid, QUERY)
    assert chunks[-1].path == CHESS and chunks[-1].component_scores["echo"] is True
    assert _plain(container, brain).index(CHESS) < len(chunks) - 1
    assert all(c.component_scores["echo"] is False for c in chunks[:-1])


@pytest.mark.usefixtures("notes")
def test_documents_written_in_the_session_are_boosted(container: Container, brain: Brain) -> None:
    sid = _session(container, brain)
    other = _session(container, brain)
    tennis_doc = container.documents.get(brain, TENNIS)
    text = container.documents.read(brain, TENNIS)
    container.documents.write(brain, TENNIS, text, DocumentInput(metadata={"session_id": sid}))
    assert _paths(container.sessions.recall(brain, sid, QUERY))[0] == TENNIS
    assert _paths(container.sessions.recall(brain, other, QUERY)) == _plain(container, brain)
    assert container.documents.get(brain, TENNIS).id == tennis_doc.id


@pytest.mark.usefixtures("notes")
def test_scope_and_top_k_apply(container: Container, brain: Brain) -> None:
    sid = _session(container, brain, ("user", ABOUT_TENNIS))
    assert _paths(container.sessions.recall(brain, sid, QUERY, scope="project")) == [
        "memory/project/p/sync.md"
    ]
    assert len(container.sessions.recall(brain, sid, QUERY, top_k=1)) == 1


@pytest.mark.usefixtures("notes")
def test_chunks_carry_their_document_and_ranks(container: Container, brain: Brain) -> None:
    sid = _session(container, brain, ("user", ABOUT_TENNIS))
    chunks = container.sessions.recall(brain, sid, QUERY)
    tennis = next(c for c in chunks if c.path == TENNIS)
    doc = container.documents.get(brain, TENNIS)
    assert (tennis.document_id, tennis.brain_id, tennis.title) == (doc.id, brain.id, doc.title)
    assert tennis.chunk_id and tennis.content == NOTES[TENNIS] and tennis.score > 0
    assert tennis.component_scores["query_rank"] == 5  # its place in plain search
    assert tennis.component_scores["context_rank"] == 1
    assert [c.score for c in chunks] == sorted((c.score for c in chunks), reverse=True)
