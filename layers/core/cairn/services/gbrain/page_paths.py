"""Which documents are gbrain pages, and under which slug.

A page is a live document that is not a memory (memories carry a typed facet whose rules, such as
superseding, expiry and a ThoughtMCP owner, only their own services keep) and whose path is either

- a slug (`people/alice`: what brain_put writes), or
- a Markdown file whose path without `.md` is a slug (`memory/global/boiler-01hx….md`: what
  memory_remember, the store protocol or an ingest writes), shown under that slug.

So one brain reads the same through every surface: a note remembered on the canonical surface is the
page `memory/global/boiler-01hx…`, found by brain_search and read by brain_get. When both forms of
one slug exist, the bare path is the page and the Markdown file stays a plain document.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from cairn.domain.models import Document
from cairn.domain.pages import is_slug

MARKDOWN = ".md"


def slug_of_path(path: str) -> str | None:
    """The slug a document at `path` would be the page of; None when it could be none."""
    if is_slug(path):
        return path
    if path.endswith(MARKDOWN) and is_slug(path[: -len(MARKDOWN)]):
        return path[: -len(MARKDOWN)]
    return None


def page_slug(doc: Document) -> str | None:
    """The slug of the page a document is, None when it is not one (a memory, a deleted document, a
    path no slug maps to). Shadowing (both forms of a slug live) is the caller's to settle."""
    if doc.memory is not None or doc.deleted_at is not None:
        return None
    return slug_of_path(doc.path)


def paths_of(slug: str) -> tuple[str, str]:
    """Where a page of this slug may be stored, the preferred path first."""
    return slug, slug + MARKDOWN


def pick(slug: str, found: Mapping[str, Document | None]) -> Document | None:
    """Of the documents found at `paths_of(slug)` (by path), the page: the bare path's, else the
    Markdown file's; None when neither is a page."""
    for path in paths_of(slug):
        doc = found.get(path)
        if doc is not None and page_slug(doc) == slug:
            return doc
    return None


def unshadowed(docs: Iterable[Document]) -> list[tuple[str, Document]]:
    """The pages among `docs` (a listing holding both forms of any slug it holds) with their slugs,
    in the listing's order: a Markdown file is left out when the bare path of its slug is a page."""
    pages = [(slug, doc) for doc in docs if (slug := page_slug(doc)) is not None]
    bare = {slug for slug, doc in pages if doc.path == slug}
    return [(slug, doc) for slug, doc in pages if doc.path == slug or slug not in bare]
