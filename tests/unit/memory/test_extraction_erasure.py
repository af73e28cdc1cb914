"""An extraction job under way when its actor is erased: what it stores after the erasure's scans
is taken back, and it stores nothing more, so the receipt's "completed" holds."""

from __future__ import annotations

from typing import Any

from cairn.auth import access
from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.services.memory.extraction import Said


def facts_of(container: Container, brain: Brain, actor: str) -> list[str]:
    with access.as_system():
        return [
            d.path
            for d in container.documents.documents(brain, "memory/")
            if d.metadata.get("kind") == "fact" and d.metadata.get("actor_id") == actor
        ]


def test_facts_stored_after_the_actors_erasure_are_taken_back(container: Container, brain: Brain) -> None:
    said = [Said("user", f"I keep note number {n} about my health.") for n in range(6)]
    container.extraction.submit_transcript(brain, said, actor_id="alice")
    container.extraction.submit_transcript(brain, [Said("user", "I like sailing.")], actor_id="bob")
    store = container.extraction.facts.store
    calls = 0

    def erased_after_two(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 3:  # the erasure runs whole between two stores of the job
            with access.as_system():
                receipt = container.erasure.erase("session_actor", "alice")
            assert receipt.status == "completed"
        return store(*args, **kwargs)

    container.extraction.facts.store = erased_after_two  # type: ignore[method-assign]
    assert container.jobs.run_pending() == 2
    assert facts_of(container, brain, "alice") == []
    assert len(facts_of(container, brain, "bob")) == 1  # another actor's job is not stopped
    rows = container.adapters.jobs._store.rows.values()  # type: ignore[attr-defined]
    stopped = next(r for r in rows if (r.result or {}).get("erased"))
    assert stopped.checkpoints["drafts"] == []  # the actor's words went with the job's stop

    container.extraction.facts.store = store  # type: ignore[method-assign]
    container.extraction.submit_transcript(brain, [Said("user", "I moved to Oslo.")], actor_id="alice")
    container.jobs.run_pending()
    assert len(facts_of(container, brain, "alice")) == 1  # what alice says after the erasure is kept
