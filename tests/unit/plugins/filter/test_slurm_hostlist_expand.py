from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.slurm_hostlist_expand import FilterModule

EXPAND = FilterModule().filters()["slurm_hostlist_expand"]


@pytest.mark.parametrize(
    "value,names",
    [
        ("n[01-03,7]", ["n01", "n02", "n03", "n7"]),
        ("a[01-02],b[1-2]", ["a01", "a02", "b1", "b2"]),
        ("n[9-11]", ["n9", "n10", "n11"]),
        ("rack[1-2]-gpu", ["rack1-gpu", "rack2-gpu"]),
        ("login", ["login"]),
        (["login", "n[1-2]", "n2"], ["login", "n1", "n2"]),
        (("n[1-2]",), ["n1", "n2"]),
    ],
)
def test_expand(value, names):
    assert EXPAND(value) == names


@pytest.mark.parametrize(
    "value,reason",
    [
        ("n[3-1]", r"reversed range '3-1' in hostlist 'n\[3-1\]'"),
        ("n[1-2", r"unbalanced brackets in hostlist 'n\[1-2'"),
        ("", "hostlist '' is empty"),
        ([], "the list of hostlists is empty"),
        (["n1", ""], "hostlist '' is empty"),
        (None, "hostlist must be a string, got NoneType"),
        (7, "hostlist must be a string, got int 7"),
    ],
)
def test_expand_rejects(value, reason):
    with pytest.raises(AnsibleFilterError, match=f"slurm_hostlist_expand: {reason}"):
        EXPAND(value)
