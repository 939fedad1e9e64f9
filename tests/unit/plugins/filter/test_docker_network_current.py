"""docker_network_current and docker_network_containers on a real docker_host_info read: the lab controller node1's
engine (container mode, Docker 20.10 from Debian bookworm), read by `ansible node1 -m community.docker.docker_host_info
-a "images=true containers=true containers_all=true networks=true verbose_output=true"`, with the macvlan network
slurm and slurmctld, slurmdbd and MariaDB on it; and the same network's inspect a moment later
(`community.docker.docker_network_info name=slurm`), which lists the containers as community.docker.docker_network's
result does."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.docker_network_containers import FilterModule as ContainersModule
from ansible_collections.hpclab.cluster.plugins.filter.docker_network_current import FilterModule as CurrentModule

FIXTURES = Path(__file__).parents[2] / "fixtures" / "docker"
READ = json.loads((FIXTURES / "host_info_networks.json").read_text())
INSPECT = json.loads((FIXTURES / "network_info_slurm.json").read_text())["network"]
current = CurrentModule().filters()["docker_network_current"]
containers = ContainersModule().filters()["docker_network_containers"]
OPTIONS = {"parent": "eth0", "macvlan_mode": "bridge"}
IPAM = [{"Subnet": "172.31.250.0/24", "Gateway": "172.31.250.1", "IPRange": "172.31.250.192/28"}]


def _slurm(read):
    return next(n for n in read["networks"] if n["Name"] == "slurm")


def _changed(change):
    """The read with the network slurm changed by the function given."""
    read = copy.deepcopy(READ)
    change(_slurm(read))
    return read


def test_the_network_as_the_role_creates_it_is_current():
    assert current(READ, "slurm", "macvlan", OPTIONS, IPAM) is True
    # Fewer settings asked, as docker_network compares only those it is given.
    assert current(READ, "slurm", "macvlan") is True
    assert current(READ, "slurm", "macvlan", {"parent": "eth0"}, [{"Subnet": "172.31.250.0/24", "Gateway": None}]) is True


def test_another_driver_option_or_address_setting_is_not_current():
    assert current(READ, "slurm", "bridge", OPTIONS, IPAM) is False
    assert current(READ, "slurm", "macvlan", {**OPTIONS, "parent": "eth1"}, IPAM) is False
    assert current(READ, "slurm", "macvlan", {**OPTIONS, "macvlan_mode": "private"}, IPAM) is False
    for key, value in (("Subnet", "172.31.251.0/24"), ("Gateway", "172.31.250.254"), ("IPRange", "172.31.250.208/28")):
        assert current(READ, "slurm", "macvlan", OPTIONS, [{**IPAM[0], key: value}]) is False, key


def test_a_network_changed_by_hand_is_not_current():
    # Options and IPAM as another tool may leave them: none at all, or another range.
    assert current(_changed(lambda n: n.update(Options=None)), "slurm", "macvlan", OPTIONS, IPAM) is False
    assert current(_changed(lambda n: n.update(IPAM={"Config": None})), "slurm", "macvlan", OPTIONS, IPAM) is False
    assert current(_changed(lambda n: n["IPAM"]["Config"][0].pop("IPRange")), "slurm", "macvlan", OPTIONS, IPAM) is False


def test_a_missing_network_is_not_current():
    assert current(READ, "hpclab", "macvlan", OPTIONS, IPAM) is False
    assert current({"networks": []}, "slurm", "macvlan") is False
    # A read without networks=true (as slurm_common's) knows no network.
    assert current({"images": [], "containers": []}, "slurm", "macvlan") is False


def test_the_containers_are_those_of_the_networks_inspect():
    expected = {c["Name"]: c["IPv4Address"] for c in INSPECT["Containers"].values()}
    assert expected == {"node1": "172.31.250.192/24", "node1-slurmdbd": "172.31.250.196/24", "node1-mariadb": "172.31.250.197/24"}
    assert containers(READ, "slurm") == expected


def test_a_stopped_container_is_not_on_the_network():
    read = copy.deepcopy(READ)
    node1 = next(c for c in read["containers"] if c["Names"] == ["/node1"])
    # As Docker reports a stopped container: its settings kept, no endpoint and no address.
    node1["State"] = "exited"
    node1["NetworkSettings"]["Networks"]["slurm"].update(EndpointID="", IPAddress="", IPPrefixLen=0)
    assert containers(read, "slurm") == {"node1-slurmdbd": "172.31.250.196/24", "node1-mariadb": "172.31.250.197/24"}


def test_no_containers_where_the_network_is_missing():
    assert containers(READ, "hpclab") == {}
    assert containers(READ, "bridge") == {}
    assert containers({"containers": READ["containers"]}, "slurm") == {}


def test_a_container_on_another_network_of_the_same_name_is_not_counted():
    # A network removed and created again has a new id: an endpoint of the old one is not on it.
    read = _changed(lambda n: n.update(Id="0" * 64))
    assert containers(read, "slurm") == {}


@pytest.mark.parametrize("bad", [None, [], "slurm"])
def test_anything_but_a_read_is_refused(bad):
    with pytest.raises(AnsibleFilterError, match="expects the result of docker_host_info"):
        current(bad, "slurm", "macvlan")
    with pytest.raises(AnsibleFilterError, match="expects the result of docker_host_info"):
        containers(bad, "slurm")
