"""_lan: the macvlan range's answers, on what the slurm scenario's controller node really heard and read
(fixtures/lan: the ARP replies on its shim to a who-has for each address of 172.31.240.192/28 made by arp_request;
`ip -j -4 addr show` and `docker network inspect slurm` of the container hosts)."""

from __future__ import annotations

import pytest
from ansible_collections.hpclab.cluster.plugins.module_utils._lan import (
    MAX_PROBED, answered, arp_reply, arp_request, known_addresses, range_addresses, taken)

SHIM_MAC, SHIM_IP = "2a:c6:c2:fe:02:bd", "172.31.240.206"


@pytest.fixture
def frames(fixture_text):
    return [bytes.fromhex(line) for line in fixture_text("lan", "arp-frames-ctrl1.txt").splitlines() if line and not line.startswith("#")]


def test_a_range_is_every_one_of_its_addresses():
    """Its first and last too: the slurm scenario's slurmdbd container holds 172.31.240.192, cn2's shim .207."""
    addresses = range_addresses("172.31.240.192/28")
    assert addresses[0] == "172.31.240.192" and addresses[-1] == "172.31.240.207" and len(addresses) == 16
    assert range_addresses("10.0.0.4/31") == ["10.0.0.4", "10.0.0.5"]
    assert len(range_addresses("10.0.0.0/22")) == MAX_PROBED


@pytest.mark.parametrize("network", ["172.31.240.193/28", "10.0.0.0/8", "not-a-network"])
def test_a_bad_or_too_large_range_is_refused(network):
    with pytest.raises(ValueError):
        range_addresses(network)


def test_the_request_is_a_broadcast_who_has_that_the_lan_answered(frames):
    request = arp_request(SHIM_MAC, SHIM_IP, "172.31.240.200")
    assert len(request) == 42 and request[:6] == b"\xff" * 6 and request[12:14] == b"\x08\x06"
    assert request[20:22] == b"\x00\x01" and request[38:42] == bytes([172, 31, 240, 200])  # who-has .200
    # Each reply went back to the requester's MAC and address, as the request gave them.
    for frame in frames:
        assert frame[:6] == request[6:12] and frame[32:42] == request[22:32]


def test_the_replies_say_who_has_each_address(frames):
    replies = [arp_reply(frame) for frame in frames]
    assert sorted(replies) == [
        ("172.31.240.192", "02:42:ac:1f:f0:c0"), ("172.31.240.193", "02:42:ac:1f:f0:c1"),
        ("172.31.240.194", "02:42:ac:1f:f0:c2"), ("172.31.240.195", "02:42:ac:1f:f0:c3"),
        ("172.31.240.200", "02:42:ac:1f:f0:c8"),
        # cn2 answers for its shim's address from its shim and from its eth0 (Linux's arp_ignore 0): the same host.
        ("172.31.240.207", "02:42:ac:1f:f0:0c"), ("172.31.240.207", "d6:1b:ae:9b:34:a7"),
    ]


def test_a_request_or_another_frame_is_no_reply():
    assert arp_reply(arp_request(SHIM_MAC, SHIM_IP, "172.31.240.200")) is None
    assert arp_reply(b"\x00" * 60) is None and arp_reply(b"") is None


def test_answered_inside_the_range_only_with_every_mac(frames):
    replies = [arp_reply(frame) for frame in frames] + [("172.31.241.5", "02:00:00:00:00:01")]
    found = answered(replies, "172.31.240.192/28")
    assert [e["address"] for e in found] == ["172.31.240.192", "172.31.240.193", "172.31.240.194", "172.31.240.195",
                                             "172.31.240.200", "172.31.240.207"]
    assert found[-1]["lladdr"] == "02:42:ac:1f:f0:0c,d6:1b:ae:9b:34:a7"  # in the order heard


def test_a_hosts_addresses_and_its_containers_on_the_network(fixture_text):
    read = fixture_text("lan", "ip-j-4-addr-ctrl1.json").strip() + "\n" + fixture_text("lan", "docker-network-inspect-ctrl1.json")
    assert known_addresses(read) == {"127.0.0.1", "172.17.0.1", "172.31.240.206", "172.31.240.10",
                                     "172.31.240.193", "172.31.240.192", "172.31.240.200"}


def test_a_host_without_the_network_holds_its_own_addresses_only(fixture_text):
    own = fixture_text("lan", "ip-j-4-addr-cn2.json").strip() + "\n"
    assert known_addresses(own) == {"127.0.0.1", "172.17.0.1", "172.31.240.207", "172.31.240.12"}


def test_the_gateway_and_the_known_are_not_taken():
    found = [{"address": "172.31.240.1", "lladdr": "a"}, {"address": "172.31.240.200", "lladdr": "b"}, {"address": "172.31.240.205", "lladdr": "c"}]
    assert taken(found, {"172.31.240.200"}, "172.31.240.1") == [{"address": "172.31.240.205", "lladdr": "c"}]
