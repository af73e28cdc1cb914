"""Each of schemathesis's per-operation items gets a node id of its own.

Under pytest 9, schemathesis 4.32 leaves every operation's item of `test_openapi_fuzz.py` with
the test function's bare node id (its name has the operation; its id does not). pytest runs them
all the same, but pytest-xdist (scripts/test runs the suite on two workers) schedules by node id
and ran one operation of 39. pytest 9 keeps the id in `Node._id`; if that changes, the fuzz's own
check (more than ten requests an operation) fails rather than passing on less.
"""

from __future__ import annotations

import pytest
from _pytest.nodeid import NodeId


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        label = getattr(item, "operation_label", None)
        node_id = getattr(item, "_id", None)
        if label and isinstance(node_id, NodeId) and node_id.params is None:
            item._id = NodeId(path=node_id.path, names=node_id.names, params=label)
