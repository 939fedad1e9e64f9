"""node_hardware_facts: on this machine, the same CPU and memory facts as ansible.builtin.setup's hardware subset
(whose collector it calls), the platform subset's hostname, and nvidia-smi found or not."""

from __future__ import annotations

import json
import platform

import pytest

from ansible.module_utils.facts import ansible_collector, default_collectors
from ansible.module_utils.testing import patch_module_args

from ansible_collections.hpclab.cluster.plugins.modules import node_hardware_facts as m

SLURM_KEYS = ("processor_count", "processor_cores", "processor_threads_per_core", "processor_vcpus", "memtotal_mb")


def run(capsys):
    with patch_module_args({}), pytest.raises(SystemExit):
        m.main()
    return json.loads(capsys.readouterr().out)


def setup_facts(subset):
    """What ansible.builtin.setup gathers with gather_subset=SUBSET on this machine (its own collector code)."""
    with patch_module_args({}):
        module = m.AnsibleModule(argument_spec={})
    collector = ansible_collector.get_ansible_collector(
        all_collector_classes=default_collectors.collectors, gather_subset=subset, gather_timeout=10)
    return collector.collect(module=module)


def test_the_facts_slurm_nodes_are_made_from_equal_setups(capsys):
    facts = run(capsys)["ansible_facts"]
    hardware = setup_facts(["!all", "!min", "hardware"])
    assert {k: facts[k] for k in SLURM_KEYS} == {k: hardware[k] for k in SLURM_KEYS}
    assert facts["processor_vcpus"] == facts["processor_count"] * facts["processor_cores"] * facts["processor_threads_per_core"]
    assert "mounts" not in facts and "devices" not in facts


def test_the_hostname_is_the_platform_subsets(capsys):
    facts = run(capsys)["ansible_facts"]
    assert facts["hostname"] == setup_facts(["!all", "!min", "platform"])["hostname"]
    assert facts["nodename"] == platform.node()


def test_a_fully_qualified_node_name_gives_the_short_hostname(capsys, monkeypatch):
    monkeypatch.setattr(m.platform, "node", lambda: "pi1.lab.example.org")
    assert run(capsys)["ansible_facts"]["hostname"] == "pi1"


@pytest.mark.parametrize("path, expected", [("/usr/bin/nvidia-smi", "/usr/bin/nvidia-smi"), (None, "")])
def test_nvidia_smi_is_its_path_or_empty(capsys, monkeypatch, path, expected):
    monkeypatch.setattr(m.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: path if name == "nvidia-smi" else None)
    assert run(capsys)["ansible_facts"]["nvidia_smi"] == expected
