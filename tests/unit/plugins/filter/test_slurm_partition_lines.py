from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.slurm_partition_lines import FilterModule

PARTITION_LINES = FilterModule().filters()["slurm_partition_lines"]


@pytest.mark.parametrize(
    "partitions,options,lines",
    [
        (
            {"batch": ["n01", "n02", "n03"], "gpu": ["gpu1", "gpu2"]},
            {},
            [
                "PartitionName=batch Nodes=n[01-03] Default=YES MaxTime=UNLIMITED State=UP",
                "PartitionName=gpu Nodes=gpu[1-2] Default=NO MaxTime=UNLIMITED State=UP",
            ],
        ),
        (
            {"debug": "n[01-02]", "long": ["n03"]},
            {"default": "long", "max_time": 60},
            [
                "PartitionName=debug Nodes=n[01-02] Default=NO MaxTime=60 State=UP",
                "PartitionName=long Nodes=n03 Default=YES MaxTime=60 State=UP",
            ],
        ),
        (  # dict order is kept, hosts are deduplicated and sorted
            {"z": ["n2", "n1", "n2"], "a": ["n1"]},
            {},
            [
                "PartitionName=z Nodes=n[1-2] Default=YES MaxTime=UNLIMITED State=UP",
                "PartitionName=a Nodes=n1 Default=NO MaxTime=UNLIMITED State=UP",
            ],
        ),
        ({"all": ["ALL"]}, {}, ["PartitionName=all Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP"]),
        ({"p": ["n1"]}, {"max_time": "7-00:00:00"}, ["PartitionName=p Nodes=n1 Default=YES MaxTime=7-00:00:00 State=UP"]),
        ({"p": ["n1"]}, {"max_time": "INFINITE"}, ["PartitionName=p Nodes=n1 Default=YES MaxTime=INFINITE State=UP"]),
        ({"p": ["n1"]}, {"max_time": "1-12"}, ["PartitionName=p Nodes=n1 Default=YES MaxTime=1-12 State=UP"]),
        ({"p": ["n1"]}, {"max_time": "02:00:00"}, ["PartitionName=p Nodes=n1 Default=YES MaxTime=02:00:00 State=UP"]),
        ({"p": ["n1"]}, {"max_time": 0}, ["PartitionName=p Nodes=n1 Default=YES MaxTime=0 State=UP"]),
    ],
)
def test_partition_lines(partitions, options, lines):
    assert PARTITION_LINES(partitions, **options) == lines


def test_exactly_one_default():
    lines = PARTITION_LINES({f"p{i}": [f"n{i}"] for i in range(5)}, default="p3")
    assert [line for line in lines if "Default=YES" in line] == [
        "PartitionName=p3 Nodes=n3 Default=YES MaxTime=UNLIMITED State=UP"
    ]


@pytest.mark.parametrize(
    "partitions,options,reason",
    [
        ({}, {}, "no partitions given"),
        (["batch"], {}, "input must be a dict of partition name to hosts, got list"),
        ({"batch": []}, {}, "partition 'batch' has no hosts"),
        ({"batch": None}, {}, "partition 'batch' has no hosts"),
        ({"batch": " "}, {}, "partition 'batch' has no hosts"),
        ({"batch": ["n[2-1]"]}, {}, "partition 'batch': reversed range '2-1'"),
        ({"batch": ["n 1"]}, {}, "partition 'batch': bad host name 'n 1'"),
        ({"default": ["n1"]}, {}, "partition name 'default' is reserved"),
        ({"my batch": ["n1"]}, {}, "partition name 'my batch' contains whitespace"),
        ({"": ["n1"]}, {}, "partition name '' must be a non-empty string"),
        ({1: ["n1"]}, {}, "partition name 1 must be a non-empty string"),
        ({"batch": ["n1"]}, {"default": "gpu"}, r"default partition 'gpu' is not one of \['batch'\]"),
        ({"batch": ["n1"]}, {"max_time": "a week"}, "max_time 'a week' is not a Slurm time"),
        ({"batch": ["n1"]}, {"max_time": "1-2-3"}, "max_time '1-2-3' is not a Slurm time"),
        ({"batch": ["n1"]}, {"max_time": -5}, "max_time -5 is negative"),
        ({"batch": ["n1"]}, {"max_time": True}, "max_time True is not a Slurm time"),
        ({"batch": ["n1"]}, {"max_time": 1.5}, "max_time 1.5 is not a Slurm time"),
    ],
)
def test_partition_lines_rejects(partitions, options, reason):
    with pytest.raises(AnsibleFilterError, match=f"^slurm_partition_lines: {reason}"):
        PARTITION_LINES(partitions, **options)
