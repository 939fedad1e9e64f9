from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.slurm_hostlist_compress import FilterModule

COMPRESS = FilterModule().filters()["slurm_hostlist_compress"]


@pytest.mark.parametrize(
    "names,hostlist",
    [
        (["n03", "n01", "n02", "gpu1", "n02"], "gpu1,n[01-03]"),
        (["a01", "a02", "a03", "a7", "b1", "b2"], "a[01-03,7],b[1-2]"),
        (["n9", "n10", "n11"], "n[9-11]"),
        (["n[1-3]", "n4"], "n[1-4]"),
        (["rack1-gpu", "rack2-gpu", "login"], "login,rack1-gpu,rack2-gpu"),
        (["solo"], "solo"),
    ],
)
def test_compress(names, hostlist):
    assert COMPRESS(names) == hostlist


@pytest.mark.parametrize(
    "names,reason",
    [
        ([], "host name list is empty"),
        ("n1,n2", "host names must be a list, got str 'n1,n2'"),
        (["n1", None], "host name must be a string, got NoneType None"),
        (["n 1"], "bad host name 'n 1'"),
        (["n[2-1]"], r"reversed range '2-1' in hostlist 'n\[2-1\]'"),
    ],
)
def test_compress_rejects(names, reason):
    with pytest.raises(AnsibleFilterError, match=f"slurm_hostlist_compress: {reason}"):
        COMPRESS(names)
