"""The docker_macvlan role's preflight: every input, one rule at a time."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.docker_macvlan_problems import FilterModule

PROBLEMS = FilterModule().filters()["docker_macvlan_problems"]

# A host's interface facts as Ansible gathers them (ansible_facts[NAME]).
ETH0 = {"device": "eth0", "ipv4": {"address": "192.168.1.10", "netmask": "255.255.255.0", "network": "192.168.1.0"}}
DOCKER0 = {"device": "docker0", "ipv4": {"address": "172.17.0.1", "netmask": "255.255.0.0", "network": "172.17.0.0"}}
WG0 = {"device": "wg0", "type": "tunnel", "ipv4": {"address": "10.8.0.1", "netmask": "255.255.255.255"}}
SHIM_UP = {"device": "hpclab-shim", "type": "ether", "ipv4": {"address": "192.168.1.206", "netmask": "255.255.255.255"}}
GOOD = {
    "host": "n1",
    "network": "slurm",
    "subnet": "192.168.1.0/24",
    "gateway": "192.168.1.1",
    "ip_range": "192.168.1.192/28",
    "parent": "eth0",
    "interfaces": {"lo": {}, "eth0": ETH0, "docker0": DOCKER0},
    "host_addresses": ["192.168.1.10", "192.168.1.11", "172.17.0.1"],
}


def check(containers=("ctl", "w1", "w2"), **kwargs):
    return PROBLEMS(list(containers), **{**GOOD, **kwargs})


def test_registered():
    assert set(FilterModule().filters()) == {"docker_macvlan_problems"}


@pytest.mark.parametrize(
    "containers,kwargs",
    [
        pytest.param(("ctl", "w1", "w2"), {}, id="settings-of-the-readme"),
        pytest.param((), {}, id="no-container"),
        pytest.param(("ctl", "ctl-slurmdbd", "ctl-mariadb", "node_1.lab"), {}, id="docker-names"),
        pytest.param(("ctl",), {"network": "hpclab.macvlan_1"}, id="network-name-with-dot-and-underscore"),
        pytest.param(("ctl",), {"pinned": {"ctl": "192.168.1.200"}}, id="pinned"),
        pytest.param(("ctl",), {"gateway": "192.168.1.254"}, id="gateway-at-the-end"),
        pytest.param(("ctl",), {"ip_range": "192.168.1.0/24"}, id="range-is-the-subnet"),
        pytest.param(("ctl",), {"subnet": "10.0.0.0/8", "gateway": "10.0.0.1", "ip_range": "10.1.0.0/16",
                                "interfaces": {"eth0": {"ipv4": {"address": "10.0.0.5", "netmask": "255.0.0.0"}}}},
                     id="large-subnet-counted-not-listed"),
        pytest.param(("ctl",), {"interfaces": {"eth0": {}}}, id="parent-without-an-address"),
        pytest.param(("ctl",), {"interfaces": {"eth0": {**ETH0, "ipv4": {"address": "10.9.9.9", "netmask": "255.0.0.0"},
                                                        "ipv4_secondaries": [{"address": "192.168.1.9", "netmask": "255.255.255.0"}]}}},
                     id="lan-address-is-a-secondary"),
        pytest.param(("ctl",), {"interfaces": {"eth0": ETH0, "br-1a2b3c": {"ipv4": {"address": "172.18.0.1", "netmask": "255.255.0.0"}}}},
                     id="other-bridge-elsewhere"),
        pytest.param(("ctl",), {"shim": True, "shim_ip": "192.168.1.206", "shim_ips": {"n1": "192.168.1.206"}}, id="shim"),
        pytest.param(("ctl",), {"shim": True, "shim_ip": "192.168.1.206", "shim_ips": {"n1": "192.168.1.206"},
                                "interfaces": {**GOOD["interfaces"], "hpclab-shim": SHIM_UP}}, id="shim-already-up"),
        pytest.param(("ctl",), {"shim": True, "shim_ip": "192.168.1.205", "shim_ips": {"n1": "192.168.1.205"},
                                "interfaces": {**GOOD["interfaces"], "hpclab-shim": SHIM_UP}}, id="shim-moves-inside-the-range"),
        pytest.param(("ctl",), {"ip_range": "192.168.1.224/28", "shim": True, "shim_ip": "192.168.1.230",
                                "shim_ips": {"n1": "192.168.1.230"}, "interfaces": {**GOOD["interfaces"], "hpclab-shim": SHIM_UP}},
                     id="shim-range-moved"),
        pytest.param(("ctl",), {"shim_interface": "eth0"}, id="shim-interface-unused-without-the-shim"),
        pytest.param(("ctl",), {"shim_interface": "abcdefghijklmno"}, id="shim-interface-15-characters"),
        pytest.param(("ctl",), {"image_archives": [{"name": "hpclab-node:bookworm", "path": "/var/lib/hpclab/images/node.tar"},
                                                   {"name": "registry.lab:5000/hpc/slurm@sha256:" + "a" * 64, "path": "/srv/s.tar"}]},
                     id="image-archives"),
    ],
)
def test_valid_input_has_no_problem(containers, kwargs):
    assert check(containers, **kwargs) == []


@pytest.mark.parametrize(
    "containers,kwargs,expected",
    [
        # rule 1: the network's name
        pytest.param(None, {"network": "my net"}, ["n1: docker_macvlan_network 'my net' is not a Docker name"], id="network-blank"),
        pytest.param(None, {"network": "-net"}, ["is not a Docker name"], id="network-leading-dash"),
        pytest.param(None, {"network": "n"}, ["is not a Docker name"], id="network-one-character"),
        pytest.param(None, {"network": "bridge"}, ["docker_macvlan_network 'bridge' is one of Docker's predefined networks"],
                     id="network-bridge"),
        pytest.param(None, {"network": "host"}, ["predefined"], id="network-host"),
        # rule 2: the subnet
        pytest.param(None, {"subnet": ""}, ["n1: docker_macvlan_subnet is not set"], id="subnet-empty"),
        pytest.param(None, {"subnet": None}, ["docker_macvlan_subnet is not set"], id="subnet-none"),
        pytest.param(None, {"subnet": "192.168.1.5/24"}, ["docker_macvlan_subnet '192.168.1.5/24' is not a CIDR", "the network is 192.168.1.0/24"],
                     id="subnet-host-bits"),
        pytest.param(None, {"subnet": "192.168.1.0/255.255.255.0"}, ["gives a netmask, write 192.168.1.0/24"], id="subnet-netmask"),
        pytest.param(None, {"subnet": "192.168.1.0"}, ["an address, not a network"], id="subnet-address"),
        pytest.param(None, {"subnet": "192.168.1.300/24"}, ["docker_macvlan_subnet '192.168.1.300/24' is not a CIDR"], id="subnet-octet"),
        pytest.param(None, {"subnet": "192.168.1.0/33"}, ["is not a CIDR"], id="subnet-prefix-too-long"),
        pytest.param(None, {"subnet": " 192.168.1.0/24"}, ["has blanks around it"], id="subnet-blank"),
        pytest.param(None, {"subnet": "fd00::/64"}, ["is an IPv6 network; the role makes IPv4 macvlan networks"], id="subnet-ipv6"),
        # rule 3: the gateway
        pytest.param(None, {"gateway": ""}, ["n1: docker_macvlan_gateway is not set"], id="gateway-empty"),
        pytest.param(None, {"gateway": "192.168.1.300"}, ["docker_macvlan_gateway '192.168.1.300' is not an IP address"], id="gateway-typo"),
        pytest.param(None, {"gateway": "192.168.2.1"}, ["docker_macvlan_gateway 192.168.2.1 is not inside docker_macvlan_subnet"],
                     id="gateway-outside"),
        pytest.param(None, {"gateway": "192.168.1.0"}, ["docker_macvlan_gateway 192.168.1.0 is the network address"], id="gateway-network"),
        pytest.param(None, {"gateway": "192.168.1.255"}, ["is the broadcast address"], id="gateway-broadcast"),
        pytest.param(None, {"gateway": "fd00::1"}, ["is an IPv6 address"], id="gateway-ipv6"),
        # rule 4: the range
        pytest.param(None, {"ip_range": ""}, ["docker_macvlan_ip_range is not set"], id="range-empty"),
        pytest.param(None, {"ip_range": "192.168.1.193/28"}, ["docker_macvlan_ip_range '192.168.1.193/28' is not a CIDR"],
                     id="range-host-bits"),
        pytest.param(None, {"ip_range": "10.0.0.0/28"}, ["docker_macvlan_ip_range 10.0.0.0/28 is not inside docker_macvlan_subnet 192.168.1.0/24"],
                     id="range-outside"),
        pytest.param(None, {"ip_range": "192.168.0.0/16"}, ["is not inside docker_macvlan_subnet"], id="range-larger-than-subnet"),
        # rule 5: Docker's bridges
        pytest.param(None, {"subnet": "172.17.0.0/24", "gateway": "172.17.0.254", "ip_range": "172.17.0.192/28",
                            "interfaces": {"eth0": {}, "docker0": DOCKER0}},
                     ["docker_macvlan_subnet 172.17.0.0/24 overlaps 172.17.0.0/16, the network of the Docker bridge docker0"],
                     id="subnet-overlaps-docker0"),
        pytest.param(None, {"interfaces": {"eth0": ETH0, "br-1a2b3c": {"ipv4": {"address": "192.168.0.1", "netmask": "255.255.0.0"}}}},
                     ["the Docker bridge br-1a2b3c"], id="subnet-inside-a-user-bridge"),
        # rules 6, 7: the parent interface
        pytest.param(None, {"parent": "eth9"}, ["n1: no interface 'eth9' to carry the macvlan network (variable docker_macvlan_parent",
                                                "the host has eth0"], id="parent-missing"),
        pytest.param(None, {"parent": ""}, ["no interface '' ", "empty means the interface of the default route"], id="no-default-route"),
        pytest.param(None, {"interfaces": {"eth0": {"ipv4": {"address": "10.0.0.5", "netmask": "255.255.255.0"}}}},
                     ["docker_macvlan_subnet 192.168.1.0/24 is not the LAN of the parent interface eth0", "10.0.0.5/24"],
                     id="subnet-not-the-parents-lan"),
        # rule 8: container names
        pytest.param(("ctl", "w1", "w1"), {}, ["n1: docker_macvlan_containers lists 'w1' more than once"], id="container-twice"),
        pytest.param(("ctl", "w 1"), {}, ["docker_macvlan_containers entry 'w 1' is not a Docker name"], id="container-blank"),
        pytest.param(("ctl", "w"), {}, ["entry 'w' is not a Docker name"], id="container-one-character"),
        # rule 9: pins name listed containers
        pytest.param(None, {"pinned": {"ghost": "192.168.1.194"}}, ["docker_macvlan_ips names 'ghost', which is not a container"],
                     id="pin-unknown-container"),
        pytest.param(None, {"pinned": ["192.168.1.194"]}, ["docker_macvlan_ips must be a dict"], id="pins-not-a-dict"),
        # rule 10: pinned and shim addresses
        pytest.param(None, {"pinned": {"w1": "192.168.1.10"}},
                     ["n1: docker_macvlan_ips: 'w1' has 192.168.1.10, outside docker_macvlan_ip_range 192.168.1.192/28"], id="pin-outside-range"),
        pytest.param(None, {"pinned": {"w1": "192.168.1.193", "w2": "192.168.1.193"}},
                     ["docker_macvlan_ips: 'w2' has 192.168.1.193, which docker_macvlan_ips 'w1' has too"], id="pin-twice"),
        pytest.param(None, {"pinned": {"w1": "192.168.1.194"}, "host_addresses": ["192.168.1.194"]},
                     ["'w1' has 192.168.1.194, the address of a host"], id="pin-host-address"),
        pytest.param(None, {"gateway": "192.168.1.193", "pinned": {"w1": "192.168.1.193"}}, ["'w1' has 192.168.1.193, the gateway"],
                     id="pin-gateway"),
        pytest.param(None, {"pinned": {"w1": "192.168.1.1934"}}, ["docker_macvlan_ips: 'w1' '192.168.1.1934' is not an IP address"],
                     id="pin-typo"),
        pytest.param(None, {"shim_ips": {"n1": "192.168.1.195", "n2": "192.168.1.195"}},
                     ["docker_macvlan_host_shim_ip: 'n2' has 192.168.1.195, which docker_macvlan_host_shim_ip 'n1' has too"], id="shim-ip-twice"),
        pytest.param(None, {"pinned": {"w1": "192.168.1.195"}, "shim_ips": {"n1": "192.168.1.195"}},
                     ["docker_macvlan_host_shim_ip: 'n1' has 192.168.1.195, which docker_macvlan_ips 'w1' has too"], id="shim-ip-pinned"),
        pytest.param(None, {"shim_ips": {"n2": "192.168.1.20"}}, ["docker_macvlan_host_shim_ip: 'n2' has 192.168.1.20, outside"],
                     id="shim-ip-outside-range"),
        # rule 11: a shim needs its address
        pytest.param(None, {"shim": True}, ["n1: docker_macvlan_host_shim is true but docker_macvlan_host_shim_ip is not set"],
                     id="shim-without-address"),
        # rule 12: the shim interface's name
        pytest.param(None, {"shim_interface": "hpclab-shim-toolong"}, ["docker_macvlan_host_shim_interface 'hpclab-shim-toolong' is not an interface name"],
                     id="shim-interface-16-characters"),
        pytest.param(None, {"shim_interface": "shim%i"}, ["is not an interface name"], id="shim-interface-systemd-specifier"),
        pytest.param(None, {"shim_interface": "a/b"}, ["is not an interface name"], id="shim-interface-slash"),
        pytest.param(None, {"shim_interface": ""}, ["is not an interface name"], id="shim-interface-empty"),
        # rule 13: the shim interface is not the host's
        pytest.param(None, {"shim": True, "shim_ip": "192.168.1.206", "shim_ips": {"n1": "192.168.1.206"}, "shim_interface": "eth0"},
                     ["n1: docker_macvlan_host_shim_interface 'eth0' is the parent interface: the shim's unit would delete it"],
                     id="shim-interface-is-the-parent"),
        pytest.param(None, {"shim": True, "shim_ip": "192.168.1.206", "shim_ips": {"n1": "192.168.1.206"}, "shim_interface": "docker0"},
                     ["docker_macvlan_host_shim_interface 'docker0' is an interface of the host (172.17.0.1/16), not a shim"],
                     id="shim-interface-is-docker0"),
        pytest.param(None, {"shim": True, "shim_ip": "192.168.1.206", "shim_ips": {"n1": "192.168.1.206"}, "shim_interface": "wg0",
                            "interfaces": {**GOOD["interfaces"], "wg0": WG0}},
                     ["'wg0' is an interface of the host (type tunnel), not a shim"], id="shim-interface-is-a-tunnel"),
        # rule 14: room in the range
        pytest.param(None, {"ip_range": "192.168.1.192/31"}, ["docker_macvlan_ip_range 192.168.1.192/31 has 2 usable addresses but 3 containers"],
                     id="range-too-small"),
        pytest.param(None, {"ip_range": "192.168.1.0/30", "host_addresses": []},
                     ["192.168.1.0/30 has 2 usable addresses but 3 containers"], id="range-holds-the-network-address-and-the-gateway"),
        # rule 15: image archives
        pytest.param(None, {"image_archives": [{"name": "Hpclab-Node:bookworm", "path": "/srv/n.tar"}]},
                     ["n1: docker_macvlan_image_archives[0]: name 'Hpclab-Node:bookworm' is not an image reference"], id="image-uppercase"),
        pytest.param(None, {"image_archives": [{"name": "debian:", "path": "/srv/n.tar"}]}, ["is not an image reference"], id="image-empty-tag"),
        pytest.param(None, {"image_archives": [{"path": "/srv/n.tar"}]}, ["name None is not set"], id="image-no-name"),
        pytest.param(None, {"image_archives": [{"name": "debian:bookworm", "path": "images/d.tar"}]},
                     ["docker_macvlan_image_archives[0]: path 'images/d.tar' is not an absolute path"], id="archive-relative"),
        pytest.param(None, {"image_archives": [{"name": "debian:bookworm", "path": "/srv/images/"}]}, ["is not canonical"], id="archive-trailing-slash"),
        pytest.param(None, {"image_archives": [{"name": "debian:bookworm", "path": "/a.tar"}, {"name": "debian:bookworm", "path": "/b.tar"}]},
                     ["docker_macvlan_image_archives[1]: name debian:bookworm is also the name of docker_macvlan_image_archives[0]"],
                     id="image-twice"),
        pytest.param(None, {"image_archives": ["debian.tar"]}, ["docker_macvlan_image_archives[0] is not a dict"], id="archive-not-a-dict"),
        pytest.param(None, {"image_archives": "debian.tar"}, ["docker_macvlan_image_archives 'debian.tar' is not a list"], id="archives-not-a-list"),
    ],
)
def test_one_problem(containers, kwargs, expected):
    found = check(("ctl", "w1", "w2") if containers is None else containers, **kwargs)
    assert len(found) == 1, found
    for part in expected:
        assert part in found[0], found
    assert found[0].startswith("n1: ") and ". Fix: " in found[0]


def test_several_problems_are_all_reported():
    found = check(("ctl", "ctl"), network="none", gateway="10.0.0.1", shim=True, image_archives=[{"name": "X", "path": "x"}])
    assert len(found) == 6, found
    assert all(p.startswith("n1: ") and ". Fix: " in p for p in found)


def test_address_rules_wait_for_a_usable_range():
    """A pin cannot be judged against a range that is not valid: only the range is reported."""
    found = check(ip_range="nope", pinned={"w1": "192.168.1.10"})
    assert len(found) == 1 and "docker_macvlan_ip_range 'nope'" in found[0], found


def test_not_a_list():
    with pytest.raises(AnsibleFilterError, match="must be the list docker_macvlan_containers"):
        PROBLEMS("ctl", host="n1")
