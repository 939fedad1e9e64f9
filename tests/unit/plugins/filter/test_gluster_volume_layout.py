from __future__ import annotations

import pytest

from ansible_collections.hpclab.cluster.plugins.filter.gluster_volume_layout import FilterModule, gluster_volume_layout

HOSTS = ["n1", "n2", "n3"]


def layout(volume, hosts=None, play=None, **kw):
    return gluster_volume_layout(volume, hosts or HOSTS, play or HOSTS, **kw)


def test_brick_dirs_are_path_major_host_minor():
    result = layout({"name": "gv0", "replica": 3, "brick_dirs": ["/b/one/", "/b//two"]})
    assert result == {
        "bricks": ["n1:/b/one", "n2:/b/one", "n3:/b/one", "n1:/b/two", "n2:/b/two", "n3:/b/two"],
        "set_size": 3,
        "problems": [],
    }


def test_explicit_bricks_win_over_brick_dirs():
    result = layout({"name": "gv0", "replica": 3, "bricks": ["n3:/x", "n2:/x", "n1:/x"], "brick_dirs": ["/ignored"]})
    assert result["bricks"] == ["n3:/x", "n2:/x", "n1:/x"]
    assert result["problems"] == []


@pytest.mark.parametrize(
    "volume,fragment",
    [
        ({"name": "gv0", "replica": 3, "bricks": ["n1:/a", "n2:/a", "n3:/a", "n1:/b"]}, "4 bricks is not a multiple of the replica count 3"),
        ({"name": "gv0", "disperse": 3, "bricks": ["n1:/a", "n2:/a"]}, "not a multiple of the disperse count 3"),
        ({"name": "gv0", "replica": 3, "bricks": ["n1:/a", "n1:/b", "n2:/a"]}, "has two bricks on n1"),
        ({"name": "gv0", "replica": 3, "brick_dirs": ["relative"]}, "is not absolute"),
        ({"name": "gv0", "replica": 3, "bricks": ["n1:/a", "n2:/a", "ghost:/a"]}, "brick host 'ghost' is not in this play"),
        ({"name": "bad name", "replica": 3, "brick_dirs": ["/a"]}, "is not a valid GlusterFS volume name"),
        ({"name": "-dash", "replica": 3, "brick_dirs": ["/a"]}, "is not a valid GlusterFS volume name"),
        ({"name": "all", "replica": 3, "brick_dirs": ["/a"]}, "is not a valid GlusterFS volume name"),
        ({"name": "gv0", "replica": 3}, "has no bricks"),
        ({"name": "gv0", "replica": 3, "bricks": ["n1/a"]}, "is not host:/path"),
        ({"name": "gv0", "replica": 3, "bricks": ["n1:/a", "n2:/a", "n1:/a/"]}, "is listed twice"),
        ({"name": "gv0", "replica": 4, "arbiter": 1, "brick_dirs": ["/a"]}, "arbiter needs replica 3"),
    ],
)
def test_problems_name_volume_variable_and_fix(volume, fragment):
    problems = layout(volume)["problems"]
    assert any(fragment in p for p in problems), problems
    assert all("glusterfs_volumes[" in p and "Fix:" in p for p in problems)


def test_same_host_allowed_on_request():
    assert layout({"name": "gv0", "replica": 3, "bricks": ["n1:/a", "n1:/b", "n2:/a"]}, allow_replica_set_on_one_host=True)["problems"] == []


def test_arbiter_sets_have_three_bricks():
    assert layout({"name": "gv0", "replica": 3, "arbiter": 1, "brick_dirs": ["/a"]})["set_size"] == 3


def test_distribute_only_has_no_set_constraint():
    result = layout({"name": "gv0", "bricks": ["n1:/a", "n1:/b"]})
    assert (result["set_size"], result["problems"]) == (1, [])


def test_registered():
    assert FilterModule().filters()["gluster_volume_layout"] is gluster_volume_layout
