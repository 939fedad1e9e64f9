"""hosts_ready: the table of playbooks/ready.yml, on what it really read over SSH (fixtures/ansible/hosts-ready-read.json:
a ready host with a missing brick device, a host whose user has no sudo, an unreachable one) and a real lsblk."""

from __future__ import annotations

import copy
import json

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.hpclab.cluster.plugins.filter.hosts_ready import FilterModule, hosts_ready


@pytest.fixture
def read(fixture_text):
    return json.loads(fixture_text("ansible", "hosts-ready-read.json"))


@pytest.fixture
def ready_host(read, fixture_text):
    """rt1 as it was read, with its brick device present: the real lsblk answer for /dev/vda."""
    host = copy.deepcopy(read["rt1"])
    host["devices"][0].update(item={"device": "/dev/vda"}, rc=0, stdout=fixture_text("debian", "lsblk-json-vda.txt"), stderr="")
    return host


def test_registered():
    assert FilterModule().filters() == {"hosts_ready": hosts_ready}


def test_the_captured_read_gives_one_row_per_host_and_a_problem_each(read):
    judged = hosts_ready(read)
    assert judged["table"] == [
        "host        reached  sudo  release       memory    brick devices             models  macvlan range",
        "rt-gone     NO       -     -             -         -                         -       -",
        "rt1         yes      yes   Debian 12.15  23.5 GiB  /dev/nonexistent MISSING  -       -",
        "rt1-nosudo  yes      NO    Debian 12.15  ?         -                         -       -",
    ]
    assert judged["ready"] == []
    assert len(judged["problems"]) == 3, judged["problems"]
    gone, device, sudo = judged["problems"]
    assert gone.startswith("rt-gone: Ansible could not reach it (Data could not be sent to remote host") and "Fix:" in gone
    assert device.startswith("rt1: brick device /dev/nonexistent (glusterfs_brick_devices) is not a block device on it "
                             "(lsblk: /dev/nonexistent: not a block device). Fix:"), device
    assert sudo.startswith("rt1-nosudo: a command with sudo (become) failed: Missing sudo password. Fix:"), sudo


def test_a_host_with_sudo_debian_12_and_its_brick_device_is_ready(ready_host):
    judged = hosts_ready({"rt1": ready_host})
    assert judged == {
        "table": ["host  reached  sudo  release       memory    brick devices       models  macvlan range",
                  "rt1   yes      yes   Debian 12.15  23.5 GiB  /dev/vda 256.0 GiB  -       -"],
        "problems": [], "ready": ["rt1"]}


def test_model_and_serial_tell_the_disk(ready_host):
    block = json.loads(ready_host["devices"][0]["stdout"])
    block["blockdevices"][0].update(model="SanDisk 3.2Gen1", serial="0101a2b3")
    ready_host["devices"][0]["stdout"] = json.dumps(block)
    assert "/dev/vda 256.0 GiB SanDisk 3.2Gen1 0101a2b3" in hosts_ready({"rt1": ready_host})["table"][1]


@pytest.mark.parametrize("name,version", [("Debian", "11.9"), ("Debian", "13.2"), ("Ubuntu", "24.04")])
def test_an_unsupported_release_is_a_problem(ready_host, name, version):
    ready_host.update(distribution=name, distribution_version=version)
    judged = hosts_ready({"rt1": ready_host})
    assert judged["problems"] == [f"rt1: runs {name} {version}, which this collection does not support. Fix: install Debian 12 on it."]
    assert f"{name} {version} (NO)" in judged["table"][1]


def test_supported_releases_can_be_given(ready_host):
    ready_host.update(distribution_version="13.2")
    assert hosts_ready({"rt1": ready_host}, supported={"Debian": ["12", "13"]})["ready"] == ["rt1"]


def test_a_sudo_that_runs_but_not_as_root_is_a_problem(ready_host):
    ready_host["sudo"] = {**ready_host["sudo"], "stdout": "1000\n24683772", "stdout_lines": ["1000", "24683772"]}
    assert hosts_ready({"rt1": ready_host})["problems"][0].startswith("rt1: a command with sudo (become) failed: it did not run as root.")


@pytest.mark.parametrize("models,cell,problem", [
    (None, "-", None),
    ("", "yes", None),
    ("llm1: llm_serving_models[0] (big) needs 80 GiB of GPU memory, GPU 0 has 24 GiB. Fix: ...", "NO",
     "rt1: the LLM layer's checks failed: llm1: llm_serving_models[0] (big)"),
])
def test_the_llm_layers_checks_are_a_column(ready_host, models, cell, problem):
    ready_host["models"] = models
    judged = hosts_ready({"rt1": ready_host})
    assert judged["table"][1].split()[-2] == cell
    assert (judged["problems"][0].startswith(problem) if problem else judged["problems"] == [])


def test_not_a_dict_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match="expected a dict of hosts"):
        hosts_ready(["rt1"])


# --- rule 6: the macvlan range, on the slurm scenario's real reads (fixtures/lan: ctrl1 asked the LAN for every address
# of 172.31.240.192/28 through its shim; the three container hosts' own addresses and containers on the network).


@pytest.fixture
def lan_reads(ready_host, fixture_text):
    """The three container hosts as ready.yml reads them: ctrl1 probed the range."""
    from ansible_collections.hpclab.cluster.plugins.module_utils._lan import answered, arp_reply

    frames = [bytes.fromhex(line) for line in fixture_text("lan", "arp-frames-ctrl1.txt").splitlines() if line and not line.startswith("#")]
    reads = {}
    for name in ("ctrl1", "cn1", "cn2"):
        reads[name] = copy.deepcopy(ready_host) | {"devices": [], "lan": fixture_text("lan", f"ip-j-4-addr-{name}.json").strip()
                                                   + "\n" + fixture_text("lan", f"docker-network-inspect-{name}.json"),
                                                   "lan_probe": None}
    reads["ctrl1"]["lan_probe"] = {"network": "172.31.240.192/28", "gateway": "172.31.240.1", "result": {
        "changed": False, "probed": 16, "answered": answered([arp_reply(f) for f in frames], "172.31.240.192/28")}}
    return reads


def test_the_range_answered_only_by_the_clusters_own_containers_and_shims_is_free(lan_reads):
    judged = hosts_ready(lan_reads)
    assert judged["problems"] == [] and judged["ready"] == ["cn1", "cn2", "ctrl1"]
    cells = {line.split()[0]: line.split("  ")[-1].strip() for line in judged["table"][1:]}
    assert cells == {"cn1": "-", "cn2": "-", "ctrl1": "free (16 probed)"}, judged["table"]


def test_an_address_answered_by_a_machine_of_no_host_is_taken(lan_reads):
    """cn1 not read (as if it were no host of this inventory): its container at .194 is a stranger."""
    lan_reads["cn1"]["lan"] = None
    judged = hosts_ready(lan_reads)
    assert judged["ready"] == ["cn1", "cn2"]
    assert "TAKEN 172.31.240.194 (02:42:ac:1f:f0:c2)" in judged["table"][-1]
    (problem,) = judged["problems"]
    assert problem.startswith("ctrl1: in docker_macvlan_ip_range 172.31.240.192/28, 172.31.240.194 (02:42:ac:1f:f0:c2) "
                              "answered from a machine of the LAN that is none of this inventory's"), problem
    assert "Fix: take the range out of the LAN's DHCP pool" in problem


def test_a_shim_is_known_from_its_hosts_addresses(lan_reads):
    """cn2's shim (172.31.240.207) answers ctrl1's ARP, and cn2's container (.195): without cn2's read, both strangers."""
    lan_reads["cn2"]["lan"] = None
    (problem,) = hosts_ready(lan_reads)["problems"]
    assert "172.31.240.195 (02:42:ac:1f:f0:c3), 172.31.240.207 (" in problem


def test_a_probe_that_could_not_run_is_a_problem(lan_reads):
    lan_reads["ctrl1"]["lan_probe"]["result"] = {"failed": True, "msg": "could not ask the LAN through eth0: [Errno 1] Operation not permitted"}
    (problem,) = hosts_ready(lan_reads)["problems"]
    assert problem.startswith("ctrl1: could not probe docker_macvlan_ip_range 172.31.240.192/28 for addresses in use "
                              "(could not ask the LAN through eth0: [Errno 1] Operation not permitted)"), problem
    assert "NOT CHECKED" in hosts_ready(lan_reads)["table"][-1]


def test_a_lan_read_that_is_not_json_is_an_error(lan_reads):
    lan_reads["cn1"]["lan"] = "Cannot connect to the Docker daemon"
    with pytest.raises(AnsibleFilterError, match="lan read is not ip -j and docker's JSON"):
        hosts_ready(lan_reads)
