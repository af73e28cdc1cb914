"""The reply-skeleton helper the wire-conformance tests share (tests/support/wire_skeleton.py): an
expected skeleton against an actual reply."""

from __future__ import annotations

from tests.support.wire_skeleton import differences, extra_keys, skeleton


def test_a_skeleton_keeps_the_shape_and_drops_the_values() -> None:
    reply = {"id": "m1", "count": 2, "ok": True, "gone": None, "rows": [{"a": 1.5}, {"a": 2}], "none": []}

    assert skeleton(reply) == {
        "id": "string",
        "count": "number",
        "ok": "boolean",
        "gone": "null",
        "rows": [{"a": "number"}],
        "none": [],
    }


def test_a_conforming_reply_differs_in_nothing_and_its_extra_keys_are_listed_apart() -> None:
    expected = {"id": "string", "rows": [{"a": "number"}]}
    actual = {"id": "m1", "more": 1, "rows": [{"a": 1, "b": "x"}, {"a": 2}]}

    assert differences(expected, actual) == []
    assert extra_keys(expected, actual) == ["$.more", "$.rows[].b"]


def test_a_missing_key_a_wrong_type_and_a_wrong_container_are_each_reported() -> None:
    expected = {"id": "string", "count": "number", "nested": {"x": "string"}, "rows": [{"a": "number"}]}

    found = differences(expected, {"count": "2", "nested": [1], "rows": {"a": 1}})

    assert [line.split(":")[0] for line in found] == ["$.id", "$.count", "$.nested", "$.rows"]
    assert "missing" in found[0] and 'got "string"' in found[1]


def test_every_list_element_is_held_to_the_expected_first_element() -> None:
    found = differences({"rows": [{"a": "number"}]}, {"rows": [{"a": 1}, {"a": "x"}, {}]})

    assert [line.split(":")[0] for line in found] == ["$.rows[1].a", "$.rows[2].a"]


def test_an_expected_empty_list_constrains_nothing_but_a_non_empty_one_needs_elements() -> None:
    assert differences({"rows": []}, {"rows": [1, "x", {"a": 1}]}) == []
    assert differences({"rows": ["string"]}, {"rows": []}) != []


def test_a_leaf_may_allow_several_types_or_any() -> None:
    expected = {"maybe": "string|null", "whatever": "any", "blob": "object|null"}

    assert differences(expected, {"maybe": None, "whatever": [1], "blob": {"k": 1}}) == []
    assert differences(expected, {"maybe": "x", "whatever": None, "blob": None}) == []
    found = differences(expected, {"maybe": 3, "whatever": 1, "blob": "x"})
    assert [line.split(":")[0] for line in found] == ["$.maybe", "$.blob"]
