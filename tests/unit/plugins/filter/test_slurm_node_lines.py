from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.slurm_node_lines import FilterModule

NODE_LINES = FilterModule().filters()["slurm_node_lines"]


def host(name, sockets=1, cores=4, threads=2, mem=32000, vcpus="product", prefix="ansible_", **extra):
    """Facts as hostvars[name] has them (prefix 'ansible_') or as ansible_facts has them (prefix '')."""
    facts = {
        "name": name,
        f"{prefix}processor_count": sockets,
        f"{prefix}processor_cores": cores,
        f"{prefix}processor_threads_per_core": threads,
        f"{prefix}memtotal_mb": mem,
    }
    if vcpus == "product":
        facts[f"{prefix}processor_vcpus"] = sockets * cores * threads
    elif vcpus is not None:
        facts[f"{prefix}processor_vcpus"] = vcpus
    facts.update(extra)
    return facts


N_LINE = "CPUs=8 Sockets=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=30400"


@pytest.mark.parametrize(
    "hosts,options,lines",
    [
        ([host("n01")], {}, [f"NodeName=n01 {N_LINE}"]),
        ([host("n02"), host("n01"), host("n03")], {}, [f"NodeName=n[01-03] {N_LINE}"]),
        (
            [host("n01"), host("n02", mem=64000), host("n03")],
            {},
            [f"NodeName=n[01,03] {N_LINE}", "NodeName=n02 CPUs=8 Sockets=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=60800"],
        ),
        (  # facts without the ansible_ prefix (hostvars[h].ansible_facts) and no vcpus
            [host("n01", prefix="", vcpus=None), host("n02")],
            {},
            [f"NodeName=n[01-02] {N_LINE}"],
        ),
        (  # name from inventory_hostname, as in hostvars
            [{k: v for k, v in host("n01", inventory_hostname="n01").items() if k != "name"}],
            {},
            [f"NodeName=n01 {N_LINE}"],
        ),
        (
            [
                host("gpu1", sockets=2, cores=16, threads=1, mem=257000, gpus={"type": "a100", "count": 4}),
                host("gpu2", sockets=2, cores=16, threads=1, mem=257000, gpus={"type": "a100", "count": 4}),
                host("n1"),
            ],
            {},
            [
                "NodeName=gpu[1-2] CPUs=32 Sockets=2 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=244150 Gres=gpu:a100:4",
                f"NodeName=n1 {N_LINE}",
            ],
        ),
        ([host("g1", gpus={"count": 2})], {}, [f"NodeName=g1 {N_LINE} Gres=gpu:2"]),
        ([host("g1", gpus={"type": "rtx", "count": 0})], {}, [f"NodeName=g1 {N_LINE}"]),
        ([host("g1", gpus=None)], {}, [f"NodeName=g1 {N_LINE}"]),
        (  # a GPU makes different hardware
            [host("n1"), host("n2", gpus={"type": "t4", "count": 1})],
            {},
            [f"NodeName=n1 {N_LINE}", f"NodeName=n2 {N_LINE} Gres=gpu:t4:1"],
        ),
        # RealMemory = floor(memtotal_mb * fraction), computed exactly (no float rounding up)
        ([host("n1", mem=1000)], {"memory_fraction": 0.95}, ["NodeName=n1 CPUs=8 Sockets=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=950"]),
        ([host("n1", mem=7821)], {}, ["NodeName=n1 CPUs=8 Sockets=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=7429"]),
        ([host("n1", mem=7821)], {"memory_fraction": 1}, ["NodeName=n1 CPUs=8 Sockets=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=7821"]),
        ([host("n1", mem=7821)], {"memory_fraction": "0.9"}, ["NodeName=n1 CPUs=8 Sockets=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=7038"]),
        (  # granularity lets machines a few MiB apart share a line
            [host("n1", mem=32078), host("n2", mem=32090)],
            {"memory_granularity_mb": 256},
            ["NodeName=n[1-2] CPUs=8 Sockets=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=30464"],
        ),
        (  # Raspberry Pi 4 facts: every core reported as a socket
            [host("pi1", sockets=4, cores=1, threads=1, mem=7821), host("pi2", sockets=4, cores=1, threads=1, mem=7821)],
            {},
            ["NodeName=pi[1-2] CPUs=4 Sockets=4 CoresPerSocket=1 ThreadsPerCore=1 RealMemory=7429"],
        ),
        ([host("n1", sockets="2", cores="4", threads="1", vcpus="8")], {}, ["NodeName=n1 CPUs=8 Sockets=2 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=30400"]),
        (  # sorted by first host in natural order
            [host("n10", mem=1000), host("n9"), host("m1", mem=2000)],
            {},
            [
                "NodeName=m1 CPUs=8 Sockets=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=1900",
                f"NodeName=n9 {N_LINE}",
                "NodeName=n10 CPUs=8 Sockets=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=950",
            ],
        ),
    ],
)
def test_node_lines(hosts, options, lines):
    assert NODE_LINES(hosts, **options) == lines


def test_same_result_whatever_the_order():
    hosts = [host(f"n{i:02d}", mem=32000 + 1000 * (i % 3)) for i in range(1, 13)]
    assert NODE_LINES(hosts) == NODE_LINES(list(reversed(hosts)))
    assert len(NODE_LINES(hosts)) == 3


@pytest.mark.parametrize(
    "hosts,options,reason",
    [
        ([], {}, "the list of hosts is empty"),
        ("n1", {}, "input must be a list"),
        ({"name": "n1"}, {}, "input must be a list"),
        (["n1"], {}, "each host must be a dict of facts, got 'n1'"),
        ([{"ansible_memtotal_mb": 1}], {}, "a host has no name"),
        ([host("n1"), host("n1")], {}, "host 'n1' is listed twice"),
        ([{k: v for k, v in host("n1").items() if k != "ansible_memtotal_mb"}], {}, "host 'n1' has no ansible_memtotal_mb"),
        ([{k: v for k, v in host("n1").items() if k != "ansible_processor_cores"}], {}, "host 'n1' has no ansible_processor_cores"),
        ([host("n1", cores=None, vcpus=None)], {}, "host 'n1' has no ansible_processor_cores"),
        ([host("n1", cores="four", vcpus=None)], {}, "host 'n1': ansible_processor_cores must be an integer, got 'four'"),
        ([host("n1", cores=True, vcpus=None)], {}, "must be an integer, got True"),
        ([host("n1", cores=0, vcpus=None)], {}, "must be at least 1, got 0"),
        ([host("n1", vcpus=6)], {}, "host 'n1': processor_vcpus 6 is not"),
        ([host("n1", mem=1)], {}, "host 'n1': RealMemory from memtotal_mb 1 would be 0"),
        ([host("n 1")], {}, "host name 'n 1' contains whitespace"),
        ([host("n[1-2]")], {}, "host name 'n\\[1-2\\]' contains"),
        ([host("DEFAULT")], {}, "DEFAULT is a reserved NodeName"),
        ([host("n1", gpus=2)], {}, "host 'n1': gpus must be a dict"),
        ([host("n1", gpus={"type": "a100"})], {}, "host 'n1': gpus.count must be an integer, got None"),
        ([host("n1", gpus={"type": "a 100", "count": 1})], {}, "gpus.type must be a word"),
        ([host("n1", gpus={"type": "a:100", "count": 1})], {}, "gpus.type must be a word"),
        ([host("n1")], {"memory_fraction": 0}, "memory_fraction must be a number above 0 and at most 1, got 0"),
        ([host("n1")], {"memory_fraction": 1.5}, "got 1.5"),
        ([host("n1")], {"memory_fraction": "lots"}, "got 'lots'"),
        ([host("n1")], {"memory_fraction": True}, "got True"),
        ([host("n1")], {"memory_granularity_mb": 0}, "memory_granularity_mb must be at least 1"),
    ],
)
def test_node_lines_rejects(hosts, options, reason):
    with pytest.raises(AnsibleFilterError, match=f"^slurm_node_lines: .*{reason}"):
        NODE_LINES(hosts, **options)


def test_gpus_from_the_slurm_worker_role_host_variable():
    from ansible_collections.hpclab.cluster.plugins.filter.slurm_node_lines import slurm_node_lines

    facts = {"inventory_hostname": "g1", "ansible_processor_count": 1, "ansible_processor_cores": 2,
             "ansible_processor_threads_per_core": 1, "ansible_memtotal_mb": 1000,
             "slurm_worker_gpus": {"type": "tesla", "count": 1, "files": ["/dev/null"]}}
    assert slurm_node_lines([facts])[0].endswith(" Gres=gpu:tesla:1")


def test_empty_slurm_worker_gpus_is_no_gpu():
    # {} is the role's default, and what playbooks/tasks/slurm_gpus.yml sets where serving takes every GPU.
    from ansible_collections.hpclab.cluster.plugins.filter.slurm_node_lines import slurm_node_lines

    facts = {"inventory_hostname": "gpu1", "ansible_processor_count": 1, "ansible_processor_cores": 2,
             "ansible_processor_threads_per_core": 1, "ansible_memtotal_mb": 1000, "slurm_worker_gpus": {}}
    assert "Gres=" not in slurm_node_lines([facts])[0]


def test_facts_not_injected_as_variables_are_read_from_ansible_facts():
    """hostvars[host] where INJECT_FACTS_AS_VARS is false: the hardware facts only under ansible_facts (the lab's
    ansible.cfg); the same line as with the facts injected, and an inventory setting still fills a missing one."""
    gathered = {"processor_count": 1, "processor_cores": 4, "processor_threads_per_core": 2, "processor_vcpus": 8,
                "memtotal_mb": 32000}
    assert NODE_LINES([{"inventory_hostname": "n01", "ansible_facts": gathered}]) == NODE_LINES([host("n01")])
    partial = {k: v for k, v in gathered.items() if k != "processor_count"}
    assert NODE_LINES([{"inventory_hostname": "n01", "ansible_facts": partial, "processor_count": 1}]) == NODE_LINES([host("n01")])
    with pytest.raises(AnsibleFilterError, match="host 'n01' has no ansible_processor_count"):
        NODE_LINES([{"inventory_hostname": "n01", "ansible_facts": partial}])


def test_gpus_given_by_host_replace_each_host_s_own_key():
    hosts = [{"name": n, "ansible_processor_count": 1, "ansible_processor_cores": 2,
              "ansible_processor_threads_per_core": 1, "ansible_memtotal_mb": 1000,
              "slurm_worker_gpus": {"count": 4}} for n in ("n1", "n2")]
    lines = NODE_LINES(hosts, gpus={"n2": {"count": 1, "type": "a100"}})
    assert [line.split()[0] for line in lines] == ["NodeName=n1", "NodeName=n2"], lines
    assert "Gres" not in lines[0] and "Gres=gpu:a100:1" in lines[1], lines


def test_gpus_that_are_not_a_dict_are_refused():
    hosts = [{"name": "n1", "ansible_processor_count": 1, "ansible_processor_cores": 2,
              "ansible_processor_threads_per_core": 1, "ansible_memtotal_mb": 1000}]
    with pytest.raises(AnsibleFilterError, match="gpus must be a dict"):
        NODE_LINES(hosts, gpus=["n1"])
