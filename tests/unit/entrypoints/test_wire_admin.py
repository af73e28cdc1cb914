"""The admin wire's subject kinds are a Literal (a plain JSON-schema enum for MCP and REST clients),
written out by hand beside the domain's SubjectKind: the two must name the same kinds."""

from typing import get_args

from cairn.domain.subjects import SubjectKind
from cairn.entrypoints.wire_admin import EraseSubject, SubjectKindName


def test_the_wire_names_every_subject_kind_the_domain_has_and_no_other() -> None:
    assert list(get_args(SubjectKindName)) == [kind.value for kind in SubjectKind]


def test_an_erase_request_of_each_kind_reads_as_that_kind() -> None:
    for kind in SubjectKind:
        assert SubjectKind(EraseSubject(kind=kind.value, subject="ann").kind) is kind
