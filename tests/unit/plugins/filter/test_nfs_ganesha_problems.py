"""The nfs_ganesha role's preflight: every input that ends up in ganesha.conf, one rule at a time."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.nfs_ganesha_problems import FilterModule

PROBLEMS = FilterModule().filters()["nfs_ganesha_problems"]


def export(**overrides):
    return {"export_id": 1, "volume": "gv0", "volpath": "/", "pseudo": "/gv0", "access_type": "RW", "squash": "root_squash", **overrides}


def check(exports=None, **kwargs):
    kwargs = {"host": "nfs1", "group_hosts": ["nfs1"], "client_networks": ["192.168.1.0/24"], **kwargs}
    return PROBLEMS([export()] if exports is None else exports, **kwargs)


def test_registered():
    assert set(FilterModule().filters()) == {"nfs_ganesha_problems"}


@pytest.mark.parametrize(
    "exports,kwargs",
    [
        pytest.param(None, {}, id="role-defaults"),
        pytest.param([export(volpath="/sub/dir")], {}, id="volpath-subdirectory"),
        pytest.param([export(), export(export_id=2, pseudo="/gv0-ro", access_type="RO")], {}, id="two-exports"),
        pytest.param([export(), export(export_id=2, pseudo="/gv0/nested")], {}, id="nested-pseudo"),
        pytest.param([export(export_id=65535)], {}, id="largest-export-id"),
        pytest.param([export(export_id="7")], {}, id="export-id-as-string"),
        pytest.param([export(clients=["10.42.0.0/16", "fd00::/64"])], {"client_networks": []}, id="own-clients-ipv4-and-ipv6"),
        pytest.param(None, {"client_networks": ["10.0.0.7/32", "192.168.1.0/24"]}, id="single-host-as-32"),
        pytest.param([export(clients=["10.0.0.0/8", "2001:db8::/32"])], {}, id="widest-networks-ipv4-8-ipv6-32"),
        pytest.param([export(protocols=[4])], {"protocols": [3, 4]}, id="export-serves-a-subset"),
        pytest.param(None, {"protocols": [4]}, id="v4-only"),
        pytest.param(None, {"gluster_hosts": ["nfs1", "nfs2"]}, id="nfs-server-is-a-glusterfs-server"),
        pytest.param(None, {"gluster_hosts": None}, id="glusterfs-servers-not-given"),
        pytest.param(None, {"grace_period": 60}, id="grace-at-lease-time"),
        pytest.param(None, {"grace_period": 270}, id="grace-at-ganesha-limit"),
        pytest.param(None, {"recovery_root": "/srv/ganesha-recovery"}, id="other-recovery-root"),
        pytest.param(None, {"attr_expiration_time": -1}, id="attributes-kept-until-told"),
        pytest.param(None, {"attr_expiration_time": 2147483647}, id="attributes-kept-int32-max"),
        pytest.param(None, {"attr_expiration_time": "60"}, id="attributes-kept-60-as-string"),
        pytest.param(None, {"volume_options": {"features.cache-invalidation": "on", "performance.cache-size": 1024}},
                     id="volume-options"),
    ],
)
def test_valid_input_has_no_problem(exports, kwargs):
    assert check(exports, **kwargs) == []


def test_default_networks_are_checked_even_when_every_export_has_its_own():
    found = check([export(clients=["10.0.0.0/24"])], client_networks=["::/0", "bad"])
    assert len(found) == 1 and "nfs_ganesha_client_networks entry 'bad'" in found[0], found


@pytest.mark.parametrize(
    "exports,kwargs,expected",
    [
        # rule 1: the host is in its group
        pytest.param(None, {"group_hosts": ["nfs2"]}, ["nfs1: runs the nfs_ganesha role but is not in the inventory group 'nfs_ganesha'",
                                                       "(variable nfs_ganesha_group)"], id="host-not-in-group"),
        pytest.param(None, {"group_hosts": [], "group": "nfs"}, ["inventory group 'nfs'"], id="group-name-in-message"),
        # rule 2: something to serve
        pytest.param([], {}, ["nfs1: nfs_ganesha_exports is empty"], id="no-export"),
        # rule 3: export_id
        pytest.param([export(export_id=0)], {}, ["nfs1: nfs_ganesha_exports[0] (pseudo /gv0): export_id 0 is not an integer 1..65535"],
                     id="export-id-0"),
        pytest.param([export(export_id=65536)], {}, ["export_id 65536 is not an integer 1..65535"], id="export-id-too-big"),
        pytest.param([export(export_id="one")], {}, ["export_id 'one' is not an integer"], id="export-id-not-a-number"),
        pytest.param([export(export_id=True)], {}, ["export_id True is not an integer"], id="export-id-bool"),
        # rule 4: unique ids
        pytest.param([export(), export(pseudo="/other")], {},
                     ["nfs_ganesha_exports[1] (pseudo /other): export_id 1 is also the id of nfs_ganesha_exports[0]"], id="duplicate-export-id"),
        # rule 5: pseudo
        pytest.param([export(pseudo="gv0")], {}, ["pseudo 'gv0' is not an absolute path"], id="relative-pseudo"),
        pytest.param([export(pseudo="/")], {}, ["pseudo '/' is '/'"], id="pseudo-root"),
        pytest.param([export(pseudo="/gv0/")], {}, ["pseudo '/gv0/' is not canonical"], id="pseudo-trailing-slash"),
        pytest.param([export(pseudo="/a//b")], {}, ["pseudo '/a//b' is not canonical"], id="pseudo-double-slash"),
        pytest.param([export(pseudo="/a/../b")], {}, ["is not canonical"], id="pseudo-dotdot"),
        pytest.param([export(pseudo='/gv0";')], {}, ["has a character ganesha.conf cannot hold"], id="pseudo-quote"),
        pytest.param([export(pseudo="/my share")], {}, ["has a character ganesha.conf cannot hold"], id="pseudo-blank"),
        pytest.param([export(pseudo=None)], {}, ["pseudo None is not an absolute path"], id="pseudo-missing"),
        # rule 6: unique pseudo
        pytest.param([export(), export(export_id=2)], {},
                     ["nfs_ganesha_exports[1] (pseudo /gv0): pseudo /gv0 is also the pseudo of nfs_ganesha_exports[0]"], id="duplicate-pseudo"),
        # rule 7: volpath
        pytest.param([export(volpath="sub")], {}, ["volpath 'sub' is not an absolute path"], id="relative-volpath"),
        pytest.param([export(volpath="/sub/")], {}, ["volpath '/sub/' is not canonical"], id="volpath-trailing-slash"),
        pytest.param([export(volpath="/a b")], {}, ["volpath '/a b' has a character"], id="volpath-blank"),
        # rule 8: volume name
        pytest.param([export(volume="bad name")], {}, ["volume 'bad name' is not a GlusterFS volume name"], id="volume-blank"),
        pytest.param([export(volume="all")], {}, ["volume 'all' is not a GlusterFS volume name"], id="volume-reserved"),
        pytest.param([export(volume=None)], {}, ["volume None is not a GlusterFS volume name"], id="volume-missing"),
        # rule 9: networks
        pytest.param(None, {"client_networks": ["10.0.0.300/24"]},
                     ["nfs1: nfs_ganesha_client_networks entry '10.0.0.300/24' is not a network: Octet 300 (> 255)"],
                     id="octet-over-255"),
        pytest.param(None, {"client_networks": ["10.0.0.5/24"]},
                     ["entry '10.0.0.5/24' has host bits set. Fix: write the network '10.0.0.0/24', or '10.0.0.5/32'"],
                     id="host-bits-set"),
        pytest.param(None, {"client_networks": ["10.0.0.5"]}, ["entry '10.0.0.5' is an address, not a network. Fix: write '10.0.0.5/32'"],
                     id="bare-address"),
        pytest.param(None, {"client_networks": ["10.0.0.0/33"]}, ["entry '10.0.0.0/33' is not a network"], id="prefix-too-long"),
        pytest.param(None, {"client_networks": ["10.0.0.0/255.255.255.0"]}, ["gives a netmask, not a prefix length. Fix: write '10.0.0.0/24'"],
                     id="netmask"),
        pytest.param(None, {"client_networks": ["010.0.0.0/24"]}, ["is not a network: Leading zeros"], id="leading-zero"),
        pytest.param(None, {"client_networks": ["fd00::1/64"]}, ["has host bits set. Fix: write the network 'fd00::/64'"], id="ipv6-host-bits"),
        pytest.param(None, {"client_networks": ["fd00::/64%eth0"]}, ["has a scope"], id="ipv6-scope"),
        pytest.param(None, {"client_networks": ["cluster.example.org"]}, ["is not a network in CIDR notation"], id="host-name"),
        pytest.param(None, {"client_networks": [" 10.0.0.0/24"]}, ["entry ' 10.0.0.0/24' is not a network"], id="leading-blank"),
        pytest.param(None, {"client_networks": [24]}, ["entry 24 is not a network"], id="number"),
        pytest.param([export(clients=["10.0.0.300/24"])], {},
                     ["nfs_ganesha_exports[0] (pseudo /gv0): clients entry '10.0.0.300/24' is not a network"], id="export-clients"),
        # rule 10: open to nobody
        pytest.param(None, {"client_networks": []},
                     ["nfs_ganesha_exports[0] (pseudo /gv0) would be open to nobody (nfs_ganesha_client_networks is empty)"],
                     id="no-client-network"),
        pytest.param(None, {"client_networks": None}, ["would be open to nobody"], id="client-networks-none"),
        pytest.param([export(clients=[])], {}, ["would be open to nobody (nfs_ganesha_exports[0] (pseudo /gv0) clients is empty)"],
                     id="export-clients-empty"),
        # rule 11: open to the world
        pytest.param([export(clients=["0.0.0.0/0"])], {},
                     ["nfs_ganesha_exports[0] (pseudo /gv0) would be open to 0.0.0.0/0, every address"], id="open-to-the-world"),
        pytest.param(None, {"client_networks": ["::/0"]}, ["would be open to ::/0, every address (from nfs_ganesha_client_networks)"],
                     id="open-to-every-ipv6-address"),
        pytest.param(None, {"client_networks": ["10.0.0.0/7"]}, ["would be open to 10.0.0.0/7", "at least a /8"], id="ipv4-7"),
        pytest.param(None, {"client_networks": ["2001:db8::/31"]}, ["would be open to 2001:db8::/31", "IPv6 client network is at least a /32"],
                     id="ipv6-31"),
        # rule 18: a GlusterFS server, for FSAL GLUSTER's Hostname localhost
        pytest.param(None, {"gluster_hosts": ["n1", "n2"], "gluster_group": "storage"},
                     ["nfs1: runs NFS-Ganesha but is not a GlusterFS server (not in the inventory group 'storage')",
                      "Hostname localhost", "Fix: add the host to 'storage'"], id="not-a-glusterfs-server"),
        pytest.param(None, {"gluster_hosts": []}, ["not in the inventory group 'glusterfs'"], id="no-glusterfs-server"),
        # rule 12: protocols
        pytest.param(None, {"protocols": []}, ["nfs_ganesha_protocols is empty"], id="no-protocol"),
        # rule 13: an export's protocols
        pytest.param([export(protocols=[3])], {"protocols": [4]},
                     ["protocols [3] must be NFS versions that nfs_ganesha_protocols ([4]) serves"], id="export-protocol-not-served"),
        pytest.param([export(protocols=[])], {}, ["protocols [] must be NFS versions"], id="export-protocols-empty"),
        # rule 14: grace period
        pytest.param(None, {"grace_period": 10}, ["nfs_ganesha_grace_period 10 is outside 60..270"], id="grace-too-short"),
        pytest.param(None, {"grace_period": 300}, ["nfs_ganesha_grace_period 300 is outside 60..270"], id="grace-too-long"),
        pytest.param(None, {"grace_period": "long"}, ["nfs_ganesha_grace_period 'long'"], id="grace-not-a-number"),
        # rule 19: Attr_Expiration_Time, an int32 of Ganesha's from -1
        pytest.param(None, {"attr_expiration_time": -2}, ["nfs_ganesha_attr_expiration_time -2 is not a number of seconds from -1 to 2147483647"],
                     id="attributes-below-minus-one"),
        pytest.param(None, {"attr_expiration_time": 2147483648}, ["nfs_ganesha_attr_expiration_time 2147483648 is not"], id="attributes-past-int32"),
        pytest.param(None, {"attr_expiration_time": "a minute"}, ["nfs_ganesha_attr_expiration_time 'a minute' is not"], id="attributes-not-a-number"),
        # rule 15: recovery root
        pytest.param(None, {"recovery_root": "var/lib/nfs/ganesha"}, ["nfs_ganesha_recovery_root 'var/lib/nfs/ganesha' is not an absolute"],
                     id="recovery-root-relative"),
        pytest.param(None, {"recovery_root": "/"}, ["nfs_ganesha_recovery_root '/' is '/'"], id="recovery-root-slash"),
        pytest.param(None, {"recovery_root": "/var/lib/nfs ganesha;"}, ["has a character"], id="recovery-root-blank"),
        # rule 16: timeouts
        pytest.param(None, {"volume_wait_timeout": 0}, ["nfs_ganesha_volume_wait_timeout 0 is not a number of seconds of at least 1"],
                     id="volume-wait-0"),
        pytest.param(None, {"start_timeout": -5}, ["nfs_ganesha_start_timeout -5"], id="start-timeout-negative"),
        pytest.param(None, {"start_timeout": None}, ["nfs_ganesha_start_timeout None"], id="start-timeout-none"),
        # rule 17: volume options
        pytest.param(None, {"volume_options": {"features cache": "on"}}, ["nfs_ganesha_volume_options key 'features cache'"],
                     id="option-name-blank"),
        pytest.param(None, {"volume_options": {"features.cache-invalidation": None}}, ["has the value None, not a single value"],
                     id="option-value-none"),
        pytest.param(None, {"volume_options": {"features.cache-invalidation": ["on"]}}, ["has the value ['on']"], id="option-value-list"),
        pytest.param(None, {"volume_options": "on"}, ["nfs_ganesha_volume_options 'on' is not a dict"], id="options-not-a-dict"),
    ],
)
def test_one_problem(exports, kwargs, expected):
    found = check(exports, **kwargs)
    assert len(found) == 1, found
    for part in expected:
        assert part in found[0], found
    assert found[0].startswith("nfs1: ") and "Fix:" in found[0]


def test_several_problems_are_all_reported():
    found = check([export(export_id=0, pseudo="gv0", clients=["10.0.0.300/24"])], group_hosts=[], grace_period=1)
    assert len(found) == 5, found
    assert all(p.startswith("nfs1: ") and "Fix:" in p for p in found)


def test_a_bad_default_network_is_reported_once_for_many_exports():
    found = check([export(), export(export_id=2, pseudo="/two")], client_networks=["10.0.0.300/24"])
    assert len(found) == 1, found


def test_not_a_list():
    with pytest.raises(AnsibleFilterError, match="must be the list nfs_ganesha_exports"):
        PROBLEMS({"export_id": 1}, host="nfs1")


def test_two_halves_of_ipv4_are_refused_like_every_address():
    """0.0.0.0/1 and 128.0.0.0/1 together are every IPv4 address, here without root squash."""
    found = check([export(clients=["0.0.0.0/1", "128.0.0.0/1"], squash="no_root_squash")])
    assert len(found) == 2, found
    assert found[0].startswith(
        "nfs1: nfs_ganesha_exports[0] (pseudo /gv0) would be open to 0.0.0.0/1, 2,147,483,648 addresses (from "
        "nfs_ganesha_exports[0] (pseudo /gv0) clients); an IPv4 client network is at least a /8"
    ), found
    assert "would be open to 128.0.0.0/1" in found[1] and all("Fix:" in p for p in found)
