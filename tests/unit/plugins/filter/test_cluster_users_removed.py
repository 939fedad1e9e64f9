"""Filter cluster_users_removed: the accounts of cluster users no longer listed, from a node's getent passwd."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.cluster_users_removed import FilterModule

REMOVED = FilterModule().filters()["cluster_users_removed"]
ALICE = "alice:x:2001:2001:hpclab cluster user:/gfsv/home/alice:/bin/bash\n"
BOB = "bob:x:2002:2002:hpclab cluster user:/gfsv/home/bob:/bin/bash\n"


def test_registered():
    assert set(FilterModule().filters()) == {"cluster_users_removed"}


def test_the_real_base_node_has_none(fixture_text):
    assert REMOVED(fixture_text("debian", "getent-passwd-base.txt"), []) == []


def test_a_user_taken_out_of_the_list(fixture_text):
    passwd = fixture_text("debian", "getent-passwd-base.txt") + ALICE + BOB
    assert REMOVED(passwd, [{"name": "alice", "uid": 2001, "gid": 2001}]) == ["bob"]
    assert REMOVED(passwd, [{"name": "alice", "uid": 2001, "gid": 2001}], min_uid="3000") == []


@pytest.mark.parametrize("users", [None, "alice", [None, "alice"]])
def test_users_of_another_shape_list_every_marked_account(users):
    assert REMOVED(ALICE, users) == ["alice"]


@pytest.mark.parametrize("passwd", [None, 7, "root:x:0"])
def test_bad_input_is_a_filter_error(passwd):
    with pytest.raises(AnsibleFilterError, match="cluster_users_removed"):
        REMOVED(passwd, [])
