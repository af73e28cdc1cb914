"""The explorer's graph (services/explorer/neighbourhood.py) shows a document's concepts as its text
reads now, on every record store: a document written again through another surface than ingest (a
REST PUT, a gbrain put, an edit in the web UI) keeps its chunks' concept links until its next
ingest, and a name edited out of it no longer leads to it, or from it, as the search's graph leg
already passed it over."""

from __future__ import annotations

from cairn.bootstrap import Container
from cairn.services.explorer.neighbourhood import Neighbourhoods
from cairn.services.mnemosyne.concepts import NODE_PREFIX

PATH = "notes/harbour.md"
LINKED = "## Harbour\n\nThe Quellmire Ferry Company moved its ledger to Vantorra Harbour."
EDITED = b"## Harbour\n\nThe ferry company moved its ledger to Vantorra Harbour."


def test_a_name_edited_out_through_another_surface_leaves_the_graph(c: Container) -> None:
    brain = c.brains.create("Shore", slug="shore")
    c.documents.write(brain, PATH, LINKED.encode())
    doc = c.documents.repo.stored(brain.id, PATH)
    assert doc is not None
    c.concepts.index_document(brain.id, doc.id, LINKED)
    graph = Neighbourhoods(c.documents.repo, c.entities.repo, c.search.chunks)
    named = {"Quellmire Ferry Company", "Vantorra Harbour"}
    assert named <= {n.label for n in graph.around(brain, doc.id, 1).nodes}
    quellmire = f"{NODE_PREFIX}quellmire ferry company"
    assert doc.id in {n.id for n in graph.around(brain, quellmire, 1).nodes}

    c.documents.write(brain, PATH, EDITED)  # not an ingest: the links stay

    labels = {n.label for n in graph.around(brain, doc.id, 1).nodes}
    assert "Vantorra Harbour" in labels and "Quellmire Ferry Company" not in labels
    assert doc.id not in {n.id for n in graph.around(brain, quellmire, 1).nodes}
    assert doc.id in {n.id for n in graph.around(brain, f"{NODE_PREFIX}vantorra harbour", 1).nodes}
