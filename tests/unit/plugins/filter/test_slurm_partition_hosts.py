from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.slurm_partition_hosts import FilterModule

PARTITION_HOSTS = FilterModule().filters()["slurm_partition_hosts"]
GROUPS = {"all": ["ctl", "n1", "n2", "gpu1"], "slurm_worker": ["n1", "n2", "gpu1"], "gpus": ["gpu1"], "n1": ["gpu1"]}


@pytest.mark.parametrize(
    "partitions,expected",
    [
        ({"batch": ["slurm_worker"]}, {"batch": ["n1", "n2", "gpu1"]}),
        ({"batch": "slurm_worker", "gpu": "gpus"}, {"batch": ["n1", "n2", "gpu1"], "gpu": ["gpu1"]}),
        ({"debug": "n[1-2]"}, {"debug": ["n1", "n2"]}),
        ({"mixed": ["gpus", "n[2-3]", "gpu1"]}, {"mixed": ["gpu1", "n2", "n3"]}),
        # a group name wins over a host of the same name
        ({"odd": ["n1"]}, {"odd": ["gpu1"]}),
        ({"z": ["n2"], "a": ["n1", "n2"]}, {"z": ["n2"], "a": ["gpu1", "n2"]}),
        ({"empty": []}, {"empty": []}),
        ({}, {}),
    ],
)
def test_partition_hosts(partitions, expected):
    result = PARTITION_HOSTS(partitions, GROUPS)
    assert result == expected and list(result) == list(expected)


@pytest.mark.parametrize(
    "partitions,groups,reason",
    [
        (["batch"], GROUPS, "input must be a dict"),
        ({"batch": ["n1"]}, ["n1"], "groups must be a dict"),
        ({"batch": None}, GROUPS, "partition 'batch': hosts must be a list"),
        ({"batch": {"n1": 1}}, GROUPS, "partition 'batch': hosts must be a list"),
        ({"batch": [1]}, GROUPS, "partition 'batch': entry 1 is not a string"),
        ({"batch": ["n[2-1]"]}, GROUPS, "partition 'batch': reversed range"),
        ({"batch": ["a,,b"]}, GROUPS, "partition 'batch': empty host name"),
    ],
)
def test_bad_input(partitions, groups, reason):
    with pytest.raises(AnsibleFilterError, match=reason):
        PARTITION_HOSTS(partitions, groups)


def test_registered():
    assert "slurm_partition_hosts" in FilterModule().filters()
