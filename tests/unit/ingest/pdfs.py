"""Hand-built PDFs for extraction tests (no PDF writer dependency needed)."""

from __future__ import annotations


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: list[list[str]], title: str | None = None) -> bytes:
    """A valid PDF with one Helvetica text line per string, pages in order."""
    objects: list[bytes] = []
    page_ids = [3 + 2 * i for i in range(len(pages))]
    font_id = 3 + 2 * len(pages)
    info_id = font_id + 1
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{pid} 0 R" for pid in page_ids)
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    for index, lines in enumerate(pages):
        content_id = page_ids[index] + 1
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content_id} 0 R "
            f"/Resources << /Font << /F1 {font_id} 0 R >> >> >>".encode()
        )
        ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        for line in lines:
            ops.append(f"({_escape(line)}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(_FONT)
    objects.append(f"<< /Title ({_escape(title)}) >>".encode() if title else b"<< >>")

    return _assemble(objects, info_id)


def shared_content_pdf(pages: int, lines: list[str], fonts: int = 1) -> bytes:
    """`pages` pages all drawn by one content stream; page n's /F1 is font n % `fonts` (each font
    object its own, all Helvetica)."""
    content = _text_stream(lines)
    font_ids = [4 + n for n in range(fonts)]
    page_ids = [4 + fonts + n for n in range(pages)]
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{' '.join(f'{pid} 0 R' for pid in page_ids)}] /Count {pages} >>".encode(),
        content,
        *[_FONT] * fonts,
        *[
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R "
            f"/Resources << /Font << /F1 {font_ids[n % fonts]} 0 R >> >> >>".encode()
            for n in range(pages)
        ],
    ]
    return _assemble(objects)


def form_pdf(draws: int, forms: int = 1, lines: tuple[str, ...] = ("Form words",)) -> bytes:
    """One page that draws form XObjects /X0, /X1, ... (`forms` of them, each showing `lines`) in
    turn, `draws` times in all."""
    names = " ".join(f"/X{n} {5 + n} 0 R" for n in range(forms))
    page_ops = "\n".join(
        ["BT /F1 12 Tf 72 760 Td (Page words) Tj ET"] + [f"/X{n % forms} Do" for n in range(draws)]
    )
    form = b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        _FONT,
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
        b"/Resources << /Font << /F1 3 0 R >> /XObject << %s >> >> >>" % (5 + forms, names.encode()),
        *[_text_stream(list(lines), form) for _ in range(forms)],
        _stream(page_ops.encode("latin-1")),
    ]
    return _assemble(objects)


def figures_pdf(figures: int, figure_bytes: int) -> bytes:
    """A page of text, then `figures` pages each drawn by a content stream of its own holding only
    lines drawn (no text), `figure_bytes` long."""
    line = b"10 10 m 200 200 l S\n"
    figure = line * (figure_bytes // len(line))
    page_ids = [4 + 2 * n for n in range(figures + 1)]
    kids = " ".join(f"{pid} 0 R" for pid in page_ids)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {figures + 1} >>".encode(),
        _FONT,
    ]
    for n in range(figures + 1):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /Font << /F1 3 0 R >> >> >>" % (page_ids[n] + 1)
        )
        objects.append(_text_stream(["Page words"]) if n == 0 else _stream(figure))
    return _assemble(objects)


_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"


def _text_stream(lines: list[str], extra: bytes = b"") -> bytes:
    ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td", *(f"({_escape(line)}) Tj T*" for line in lines), "ET"]
    return _stream("\n".join(ops).encode("latin-1"), extra)


def _stream(data: bytes, extra: bytes = b"") -> bytes:
    return b"<< %s/Length %d >>\nstream\n" % (extra, len(data)) + data + b"\nendstream"


def _assemble(objects: list[bytes], info_id: int | None = None) -> bytes:
    """A PDF file of `objects`, numbered from 1 (the catalog first)."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref_at = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    info = b" /Info %d 0 R" % info_id if info_id is not None else b""
    out += b"trailer\n<< /Size %d /Root 1 0 R%s >>\n" % (len(objects) + 1, info)
    out += b"startxref\n%d\n%%%%EOF\n" % xref_at
    return bytes(out)


def unlisted_objects_pdf(missing: int, misplaced: int = 0, found: int = 0, padding: int = 200_000) -> bytes:
    """One page whose resources name `missing` objects the file does not hold, `misplaced` the
    table lists at another object's offset, and `found` whose headers the file holds but the table
    does not list (each a form showing "Found n"); `padding` bytes of stream make each search of
    the file cost something."""
    first_missing, first_misplaced, first_found = 10_000, 20_000, 7
    names = [f"/M{n} {first_missing + n} 0 R" for n in range(missing)]
    names += [f"/P{n} {first_misplaced + n} 0 R" for n in range(misplaced)]
    names += [f"/F{n} {first_found + n} 0 R" for n in range(found)]
    draws = " ".join(f"/F{n} Do" for n in range(found))
    form = b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        _FONT,
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R "
        b"/Resources << /Font << /F1 3 0 R >> /XObject << %s >> >> >>" % " ".join(names).encode(),
        _stream(b"BT /F1 12 Tf 72 760 Td (Page words) Tj ET " + draws.encode()),
        _stream(b"%" + b"x" * padding),
    ]
    listed = _assemble(objects)
    cut = listed.rindex(b"\nxref\n") + 1
    body, table = listed[:cut], listed[cut + len(b"xref\n") :]
    forms = b"".join(
        b"%d 0 obj\n" % (first_found + n) + _text_stream([f"Found {n}"], form) + b"\nendobj\n"
        for n in range(found)
    )
    xref_at = len(body) + len(forms)
    entries, trailer = table.split(b"trailer\n")
    if misplaced:  # each listed at the padding stream's offset, whose header names object 6
        at = int(entries.splitlines()[-1].split()[0])
        entries += b"%d %d\n" % (first_misplaced, misplaced) + b"%010d 00000 n \n" % at * misplaced
    trailer = trailer.rpartition(b"startxref")[0] + b"startxref\n%d\n%%%%EOF\n" % xref_at
    return body + forms + b"xref\n" + entries + b"trailer\n" + trailer
