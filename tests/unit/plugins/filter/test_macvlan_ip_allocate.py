from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.macvlan_ip_allocate import FilterModule

ALLOCATE = FilterModule().filters()["macvlan_ip_allocate"]


@pytest.mark.parametrize(
    "names,options,result",
    [
        (["a", "b", "c"], {"ip_range": "10.0.0.0/29", "gateway": "10.0.0.1"}, {"a": "10.0.0.2", "b": "10.0.0.3", "c": "10.0.0.4"}),
        ([], {"ip_range": "10.0.0.0/29"}, {}),
        (  # an existing map keeps its addresses; the new name takes the lowest free one
            ["new", "a", "b"],
            {"ip_range": "10.0.0.0/29", "existing": {"a": "10.0.0.2", "b": "10.0.0.3"}},
            {"new": "10.0.0.1", "a": "10.0.0.2", "b": "10.0.0.3"},
        ),
        (  # names gone from the list free their addresses
            ["a", "c"],
            {"ip_range": "10.0.0.0/29", "existing": {"a": "10.0.0.1", "b": "10.0.0.2"}},
            {"a": "10.0.0.1", "c": "10.0.0.2"},
        ),
        (["a", "b"], {"ip_range": "10.0.0.0/29", "pinned": {"b": "10.0.0.1"}}, {"a": "10.0.0.2", "b": "10.0.0.1"}),
        (  # a pin is reserved even when its name is not listed
            ["a"],
            {"ip_range": "10.0.0.0/29", "pinned": {"later": "10.0.0.1"}},
            {"a": "10.0.0.2"},
        ),
        (  # a pin wins over a different existing address
            ["a", "b"],
            {"ip_range": "10.0.0.0/29", "pinned": {"a": "10.0.0.6"}, "existing": {"a": "10.0.0.1", "b": "10.0.0.2"}},
            {"a": "10.0.0.6", "b": "10.0.0.2"},
        ),
        (  # with a subnet, a sub-range's own first and last addresses are usable
            ["a", "b"],
            {"ip_range": "10.0.0.16/28", "subnet": "10.0.0.0/24"},
            {"a": "10.0.0.16", "b": "10.0.0.17"},
        ),
        (  # without one, the range's network and broadcast addresses are withheld
            ["a"] + [f"x{i}" for i in range(13)],
            {"ip_range": "10.0.0.16/28"},
            {"a": "10.0.0.17", **{f"x{i}": f"10.0.0.{18 + i}" for i in range(13)}},
        ),
        (
            ["a", "b", "c"],
            {"ip_range": "10.0.0.0/29", "gateway": "10.0.0.1", "exclude": ["10.0.0.2", "10.0.0.4/31"]},
            {"a": "10.0.0.3", "b": "10.0.0.6", "c": None},
        ),
        (["a", "b"], {"ip_range": "10.0.0.8/31"}, {"a": "10.0.0.8", "b": "10.0.0.9"}),
        (["a"], {"ip_range": "10.0.0.8/32"}, {"a": "10.0.0.8"}),
        (["a", "b"], {"ip_range": "fd00::/120", "gateway": "fd00::1"}, {"a": "fd00::2", "b": "fd00::3"}),
        (["a"], {"ip_range": "fd00::/64"}, {"a": "fd00::1"}),
    ],
)
def test_allocate(names, options, result):
    if None in result.values():
        with pytest.raises(AnsibleFilterError, match="is exhausted: 3 names need an address, 2 are free"):
            ALLOCATE(names, **options)
        return
    assert ALLOCATE(names, **options) == result
    assert list(ALLOCATE(names, **options)) == names


def test_stable_across_runs_and_never_renumbers():
    first = ALLOCATE(["a", "b", "c"], ip_range="192.168.1.192/27", gateway="192.168.1.193")
    assert first == ALLOCATE(["a", "b", "c"], ip_range="192.168.1.192/27", gateway="192.168.1.193")
    second = ALLOCATE(["z", "a", "d", "b", "c"], ip_range="192.168.1.192/27", gateway="192.168.1.193", existing=first)
    assert {name: second[name] for name in first} == first
    assert second["z"] == "192.168.1.197"
    assert second["d"] == "192.168.1.198"
    # fed back in, the result is a fixed point
    assert ALLOCATE(list(second), ip_range="192.168.1.192/27", gateway="192.168.1.193", existing=second) == second


@pytest.mark.parametrize(
    "names,options,reason",
    [
        (["a", "b", "c"], {"ip_range": "10.0.0.0/30"}, "ip_range '10.0.0.0/30' is exhausted: 3 names need an address, 2 are free"),
        (
            ["a"],
            {"ip_range": "10.0.0.0/31", "pinned": {"x": "10.0.0.0", "y": "10.0.0.1"}},
            "ip_range '10.0.0.0/31' is exhausted: 1 names need an address, 0 are free",
        ),
        (
            ["a", "b"],
            {"ip_range": "10.0.0.0/29", "pinned": {"a": "10.0.0.2", "b": "10.0.0.2"}},
            "pinned address '10.0.0.2' of 'b' is also the address of 'a'",
        ),
        (
            ["a", "b"],
            {"ip_range": "10.0.0.0/29", "pinned": {"a": "10.0.0.2"}, "existing": {"b": "10.0.0.2"}},
            "existing address '10.0.0.2' of 'b' is also the address of 'a'",
        ),
        (
            ["a", "b"],
            {"ip_range": "10.0.0.0/29", "existing": {"a": "10.0.0.2", "b": "10.0.0.2"}},
            "existing address '10.0.0.2' of 'b' is also the address of 'a'",
        ),
        (["a"], {"ip_range": "10.0.0.0/29", "pinned": {"a": "10.0.0.9"}}, "pinned address '10.0.0.9' of 'a' is outside ip_range 10.0.0.0/29"),
        (["a"], {"ip_range": "10.0.0.0/29", "existing": {"a": "10.0.1.1"}}, "existing address '10.0.1.1' of 'a' is outside ip_range"),
        (["a"], {"ip_range": "10.0.0.0/29", "gateway": "10.0.0.1", "pinned": {"a": "10.0.0.1"}}, "pinned address '10.0.0.1' of 'a' is the gateway"),
        (
            ["a"],
            {"ip_range": "10.0.0.0/29", "exclude": ["10.0.0.5"], "pinned": {"a": "10.0.0.5"}},
            r"pinned address '10.0.0.5' of 'a' is excluded \(10.0.0.5/32\)",
        ),
        (["a"], {"ip_range": "10.0.0.0/29", "pinned": {"a": "10.0.0.7"}}, "pinned address '10.0.0.7' of 'a' is the network or broadcast address"),
        (["a"], {"ip_range": "10.0.0.0/29", "pinned": {"a": "not-an-ip"}}, "pinned address of 'a' 'not-an-ip' is not an IP address"),
        (["a"], {"ip_range": "10.0.0.0/29", "pinned": ["10.0.0.2"]}, "pinned must be a dict"),
        (
            ["a"],
            {"ip_range": "10.0.0.0/29", "pinned": {"a": "fd00::2"}},
            "pinned address of 'a' 'fd00::2' is IPv6 but ip_range '10.0.0.0/29' is IPv4",
        ),
        (["a", "b", "a"], {"ip_range": "10.0.0.0/29"}, r"names listed more than once: \['a'\]"),
        (["a", ""], {"ip_range": "10.0.0.0/29"}, "names must be non-empty strings, got ''"),
        (["a", 3], {"ip_range": "10.0.0.0/29"}, "names must be non-empty strings, got 3"),
        ("a", {"ip_range": "10.0.0.0/29"}, "input must be a list of names, got 'a'"),
        (["a"], {}, "ip_range is required"),
        (["a"], {"ip_range": "10.0.0.5/29"}, r"ip_range '10.0.0.5/29' is not a valid CIDR .*; did you mean 10.0.0.0/29\?"),
        (["a"], {"ip_range": "banana"}, "ip_range 'banana' is not a valid CIDR"),
        (["a"], {"ip_range": 5}, "ip_range must be a CIDR string, got 5"),
        (["a"], {"ip_range": "10.0.0.0/29", "subnet": "10.1.0.0/16"}, "ip_range '10.0.0.0/29' is not inside subnet '10.1.0.0/16'"),
        (["a"], {"ip_range": "10.0.0.0/29", "subnet": "fd00::/64"}, "subnet 'fd00::/64' is IPv6"),
        (["a"], {"ip_range": "10.0.0.0/29", "gateway": "10.0.0"}, "gateway '10.0.0' is not an IP address"),
        (["a"], {"ip_range": "10.0.0.0/29", "exclude": ["x"]}, "exclude entry 'x' is not an IP address or CIDR"),
        (["a"], {"ip_range": "10.0.0.0/29", "exclude": [7]}, "exclude entries must be address strings, got 7"),
    ],
)
def test_allocate_rejects(names, options, reason):
    with pytest.raises(AnsibleFilterError, match=f"^macvlan_ip_allocate: {reason}"):
        ALLOCATE(names, **options)


def test_existing_addresses_as_docker_reports_them_keep_their_address():
    from ansible_collections.hpclab.cluster.plugins.filter.macvlan_ip_allocate import macvlan_ip_allocate

    # docker network inspect: "IPv4Address": "10.0.0.3/24"
    got = macvlan_ip_allocate(["new", "b"], ip_range="10.0.0.0/29", existing={"b": "10.0.0.3/24"})
    assert got == {"new": "10.0.0.1", "b": "10.0.0.3"}
