"""The glusterfs role's preflight: volumes, mount, shared directories and brick devices, one rule at a time."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.glusterfs_problems import FilterModule

PROBLEMS = FilterModule().filters()["glusterfs_problems"]
HOSTS = ["n1", "n2", "n3"]
SHARED = [{"path": "home", "owner": "root", "group": "root", "mode": "0755"},
          {"path": "munge", "owner": "root", "group": "root", "mode": "0700"}]
DEVICE = {"device": "/dev/sdb", "fstype": "xfs", "mount": "/bricks/gv0"}
# A host of glusterfs_clients outside glusterfs: it mounts the volume without a brick.
CLIENT = {"host": "c1", "client_hosts": ["c1"], "play_hosts": HOSTS + ["c1"]}


def volume(**overrides):
    return {"name": "gv0", "replica": 3, "brick_dirs": ["/bricks/gv0/brick1"], "options": {}, **overrides}


def check(volumes=None, **kwargs):
    kwargs = {"host": "n1", "group_hosts": HOSTS, "play_hosts": HOSTS, "mount_volume": "gv0", "mount_path": "/gfsv",
              "mount_options": "defaults,_netdev", "shared_dirs": SHARED, **kwargs}
    return PROBLEMS([volume()] if volumes is None else volumes, **kwargs)


def test_registered():
    assert set(FilterModule().filters()) == {"glusterfs_problems"}


@pytest.mark.parametrize(
    "volumes,kwargs",
    [
        pytest.param(None, {}, id="role-defaults"),
        pytest.param([volume(replica=3, arbiter=1)], {}, id="replica-3-arbiter-1"),
        pytest.param([volume(replica=2, arbiter=1)], {}, id="replica-2-arbiter-1-is-stored-as-replica-3-arbiter-1"),
        pytest.param([volume(replica=2, allow_split_brain_risk=True, brick_dirs=["/b"])], {"group_hosts": ["n1", "n2"],
                                                                                           "play_hosts": ["n1", "n2"]},
                     id="replica-2-risk-accepted"),
        pytest.param([volume(replica=None, disperse=3, redundancy=1)], {}, id="disperse-3-redundancy-1"),
        pytest.param([volume(replica=None, brick_dirs=["/b1"])], {}, id="plain-distribute"),
        pytest.param([volume(options={"network.ping-timeout": 20, "performance.cache-size": "64MB", "write-behind": False})], {},
                     id="options"),
        pytest.param([volume(), volume(name="scratch", brick_dirs=["/bricks/scratch/b1"])], {}, id="two-volumes"),
        pytest.param([volume(), volume(name="gv1", brick_dirs=["/bricks/gv0/brick10"])], {}, id="two-volumes-sibling-name-prefix"),
        pytest.param([volume(replica=None, bricks=["n1:/bricks/a"]), volume(name="gv1", replica=None, bricks=["n2:/bricks/a"])], {},
                     id="two-volumes-same-path-on-different-hosts"),
        pytest.param(None, {"mount_path": "/srv/shared", "mount_options": "defaults,_netdev,noatime"}, id="other-mount"),
        pytest.param(None, {"shared_dirs": [{"path": "projects/a", "owner": "1000", "group": "hpc-users", "mode": "2770"}]},
                     id="nested-shared-dir-setgid"),
        pytest.param(None, {"shared_dirs": [{"path": "home"}]}, id="shared-dir-defaults"),
        pytest.param(None, {"brick_devices": [DEVICE], "block_devices": ["/dev/sdb"], "device_filesystems": {"/dev/sdb": "xfs"}},
                     id="device-with-filesystem"),
        pytest.param(None, {"brick_devices": [DEVICE], "block_devices": ["/dev/sdb"], "device_filesystems": {"/dev/sdb": ""},
                            "format_brick_devices": True}, id="empty-device-formatting-allowed"),
        pytest.param(None, {"brick_devices": [{"device": "/dev/disk/by-id/usb-stick", "mount": "/bricks/gv0"}],
                            "block_devices": ["/dev/disk/by-id/usb-stick"]}, id="device-by-id"),
        pytest.param(None, {"peer_timeout": "30"}, id="peer-timeout-string"),
        # a client of the brick hosts
        pytest.param(None, dict(CLIENT), id="client-role-defaults"),
        pytest.param(None, dict(CLIENT, client_packages=["glusterfs-client", "attr"]), id="client-more-packages"),
        pytest.param(None, dict(CLIENT, client_packages=["glusterfs-client=10.3-5"]), id="client-package-pinned"),
        pytest.param(None, dict(CLIENT, host="n1", client_hosts=HOSTS + ["c1"], client_packages=["glusterfs-server"]),
                     id="host-in-both-groups-is-a-brick-host"),
        # the client's own glusterfs_volumes (the role's default where group_vars/glusterfs sets the brick hosts') are not
        # its to check: the brick hosts check theirs, and the mount is checked against theirs
        pytest.param([volume(replica=2, brick_dirs=["/b"])], dict(CLIENT, mount_volume="shared",
                                                                  pool_volumes=[volume(name="shared")]), id="client-pool-volumes"),
        pytest.param(None, dict(CLIENT, brick_devices=[]), id="client-no-brick-devices"),
    ],
)
def test_valid_input_has_no_problem(volumes, kwargs):
    assert check(volumes, **kwargs) == []


@pytest.mark.parametrize(
    "volumes,kwargs,expected",
    [
        # rule 1: the host is in its group
        pytest.param(None, {"host": "n9", "play_hosts": HOSTS + ["n9"]},
                     ["n9: runs the glusterfs role but is not in the inventory group 'glusterfs' (variable glusterfs_group)",
                      "nor in 'glusterfs_clients' (variable glusterfs_client_group)"], id="host-not-in-group"),
        # rule 2: at least one volume (the mounted one is missing then too)
        pytest.param([], {"mount_volume": ""}, ["n1: glusterfs_volumes is empty"], id="no-volume"),
        # rule 3: dicts
        pytest.param(["gv0"], {"mount_volume": ""}, ["glusterfs_volumes[0] is not a dict"], id="volume-not-a-dict"),
        # rule 4: unique names
        pytest.param([volume(), volume(brick_dirs=["/bricks/gv0/brick2"])], {},
                     ["glusterfs_volumes[gv0]: the name gv0 is given twice"], id="duplicate-volume-name"),
        # rule 5: the layout filter's findings come through, with the host
        pytest.param([volume(bricks=["n1:bricks/relative", "n2:/b", "n3:/b"])], {},
                     ["n1: glusterfs_volumes[gv0]: brick path 'bricks/relative' on n1 is not absolute"],
                     id="layout-relative-brick"),
        pytest.param([volume(bricks=["n1:/b", "n2:/b", "ghost:/b"])], {}, ["brick host 'ghost' is not in this play"], id="layout-brick-host"),
        pytest.param([volume(name="bad name!")], {"mount_volume": "bad name!"}, ["is not a valid GlusterFS volume name"], id="layout-volume-name"),
        # rule 6: the volume type
        pytest.param([volume(replica=1)], {}, ["glusterfs_volumes[gv0].replica 1: a replica count is at least 2"], id="replica-1"),
        pytest.param([volume(disperse=3)], {}, ["sets both replica and disperse"], id="replica-and-disperse"),
        pytest.param([volume(redundancy=1)], {}, ["glusterfs_volumes[gv0].redundancy needs disperse"], id="redundancy-without-disperse"),
        pytest.param([volume(replica=None, disperse=2, brick_dirs=["/b1"])], {"group_hosts": ["n1", "n2"], "play_hosts": ["n1", "n2"]},
                     ["glusterfs_volumes[gv0].disperse 2: a disperse set has at least 3 bricks"], id="disperse-2"),
        pytest.param([volume(replica=None, disperse=3, redundancy=2)], {},
                     ["glusterfs_volumes[gv0].redundancy 2 must be at least 1 and less than half of disperse 3"], id="redundancy-too-high"),
        pytest.param([volume(replica=None, disperse=3, redundancy=0)], {}, ["redundancy 0 must be at least 1"], id="redundancy-0"),
        # rule 7: replica 2 without an arbiter
        pytest.param([volume(replica=2, brick_dirs=["/b"])], {"group_hosts": ["n1", "n2"], "play_hosts": ["n1", "n2"]},
                     ["n1: glusterfs_volumes[gv0]: replica 2 without an arbiter is prone to split-brain",
                      "gluster/glusterfs#796", "Fix: add a third host to the group and set replica: 3, arbiter: 1",
                      "'replica 3 arbiter 1'", "gluster volume add-brick VOLUME replica 3 arbiter 1",
                      "set allow_split_brain_risk: true on glusterfs_volumes[gv0]"], id="replica-2"),
        pytest.param([volume(replica=2, arbiter=0, brick_dirs=["/b"])], {"group_hosts": ["n1", "n2"], "play_hosts": ["n1", "n2"]},
                     ["replica 2 without an arbiter"], id="replica-2-arbiter-0"),
        pytest.param([volume(replica=2, allow_split_brain_risk=False, bricks=["n1:/a", "n2:/a", "n1:/b", "n2:/b"])], {},
                     ["replica 2 without an arbiter"], id="distributed-replica-2-risk-false"),
        # rule 8: volume options
        pytest.param([volume(options={"network ping": 1})], {}, ["glusterfs_volumes[gv0].options key 'network ping' is not a GlusterFS option name"],
                     id="option-name"),
        pytest.param([volume(options={"network.ping-timeout": None})], {}, ["options network.ping-timeout has the value None"], id="option-none"),
        pytest.param([volume(options={"auth.allow": ["a", "b"]})], {}, ["options auth.allow has the value ['a', 'b']"], id="option-list"),
        pytest.param([volume(options="x")], {}, ["glusterfs_volumes[gv0].options 'x' is not a dict"], id="options-not-a-dict"),
        # rule 9: the mounted volume is managed
        pytest.param(None, {"mount_volume": "gv1"}, ["glusterfs_mount_volume 'gv1' is not one of glusterfs_volumes (gv0)"], id="mount-volume"),
        # rule 10: the mount path
        pytest.param(None, {"mount_path": "gfsv"}, ["glusterfs_mount_path 'gfsv' is not an absolute path"], id="mount-path-relative"),
        pytest.param(None, {"mount_path": "/"}, ["glusterfs_mount_path '/' is '/'"], id="mount-path-root"),
        pytest.param(None, {"mount_path": "/gfsv/"}, ["glusterfs_mount_path '/gfsv/' is not canonical"], id="mount-path-trailing-slash"),
        pytest.param(None, {"mount_path": "/my share"}, ["glusterfs_mount_path '/my share' has a blank"], id="mount-path-blank"),
        # rule 11: bricks and the mount do not overlap
        pytest.param([volume(brick_dirs=["/gfsv/brick"])], {}, ["glusterfs_volumes[gv0]: brick /gfsv/brick and glusterfs_mount_path /gfsv overlap"],
                     id="brick-inside-mount"),
        pytest.param(None, {"mount_path": "/bricks/gv0/brick1/mnt"}, ["brick /bricks/gv0/brick1 and glusterfs_mount_path /bricks/gv0/brick1/mnt overlap"],
                     id="mount-inside-brick"),
        pytest.param([volume(brick_dirs=["/"])], {}, ["glusterfs_volumes[gv0]: a brick is the root directory"], id="brick-root"),
        # rule 23: no brick directory shared with another volume on one host (the same, inside or above)
        pytest.param([volume(), volume(name="gv1")], {},
                     ["n1: glusterfs_volumes[gv1]: brick directory /bricks/gv0/brick1 is the same directory as brick directory "
                      "/bricks/gv0/brick1 of glusterfs_volumes[gv0] on n1, n2, n3 (variable glusterfs_volumes)",
                      "'force'", "Fix: give each volume brick directories of its own"], id="brick-dir-of-another-volume"),
        pytest.param([volume(), volume(name="gv2", brick_dirs=["/bricks/gv0/brick1/sub"])], {},
                     ["glusterfs_volumes[gv2]: brick directory /bricks/gv0/brick1/sub is inside brick directory /bricks/gv0/brick1 "
                      "of glusterfs_volumes[gv0]"], id="brick-dir-inside-another-volumes"),
        pytest.param([volume(), volume(name="gv3", bricks=["n1:/bricks/x", "n2:/bricks/gv0", "n3:/bricks/x"])], {},
                     ["glusterfs_volumes[gv3]: brick directory /bricks/gv0 is above brick directory /bricks/gv0/brick1 of "
                      "glusterfs_volumes[gv0] on n2 "], id="brick-dir-above-another-volumes-on-one-host"),
        pytest.param([volume(), volume(name="gv1", brick_dirs=["/bricks/gv0//brick1/"])], {},
                     ["glusterfs_volumes[gv1]: brick directory /bricks/gv0/brick1 is the same directory"], id="brick-dir-shared-uncanonical"),
        pytest.param(None, dict(CLIENT, pool_volumes=[volume(), volume(name="gv1")]),
                     ["c1: glusterfs_volumes[gv1]: brick directory /bricks/gv0/brick1 is the same directory"], id="client-pool-shared-brick-dir"),
        # rule 12: mount options
        pytest.param(None, {"mount_options": "defaults, _netdev"}, ["glusterfs_mount_options 'defaults, _netdev' is not a comma-separated list"],
                     id="mount-options-blank"),
        pytest.param(None, {"mount_options": "defaults,,_netdev"}, ["is not a comma-separated list"], id="mount-options-empty-item"),
        pytest.param(None, {"mount_options": ""}, ["glusterfs_mount_options '' is not a comma-separated list"], id="mount-options-empty"),
        pytest.param(None, {"mount_options": "defaults,backup-volfile-servers=n2:n3"}, ["sets the backup volfile servers, which the role adds"],
                     id="mount-options-backup-servers"),
        # rule 13: shared directory paths
        pytest.param(None, {"shared_dirs": [{"path": "/home"}]}, ["glusterfs_shared_dirs[0] (/home): path '/home' is absolute"], id="shared-dir-absolute"),
        pytest.param(None, {"shared_dirs": [{"path": "../etc"}]}, ["path '../etc' is not canonical"], id="shared-dir-dotdot"),
        pytest.param(None, {"shared_dirs": [{"path": ""}]}, ["path '' is empty"], id="shared-dir-empty"),
        pytest.param(None, {"shared_dirs": ["home"]}, ["glusterfs_shared_dirs[0] is not a dict"], id="shared-dir-not-a-dict"),
        # rule 14: shared directory modes
        pytest.param(None, {"shared_dirs": [{"path": "scratch", "mode": "1777"}]}, ["mode 1777 lets every user write there"], id="world-writable"),
        pytest.param(None, {"shared_dirs": [{"path": "scratch", "mode": "0777"}]}, ["mode 0777 lets every user write there"], id="world-writable-0777"),
        pytest.param(None, {"shared_dirs": [{"path": "home", "mode": 493}]}, ["mode 493 is not an octal string. Fix: quote it"], id="mode-int"),
        pytest.param(None, {"shared_dirs": [{"path": "home", "mode": "u=rwx"}]}, ["mode 'u=rwx' is not an octal string"], id="mode-symbolic"),
        pytest.param(None, {"shared_dirs": [{"path": "home", "mode": "0855"}]}, ["mode '0855' is not an octal string"], id="mode-not-octal"),
        # rule 15: owners and groups
        pytest.param(None, {"shared_dirs": [{"path": "home", "owner": "Bad User"}]}, ["owner 'Bad User' is not a user or group name or id"],
                     id="owner-blank"),
        pytest.param(None, {"shared_dirs": [{"path": "home", "group": None}]}, ["group None is not a user or group name or id"], id="group-none"),
        # rule 16: brick device and mount paths
        pytest.param(None, {"brick_devices": [{"device": "sdb", "mount": "/bricks/gv0"}], "block_devices": ["sdb"]},
                     ["glusterfs_brick_devices[0] (sdb): device 'sdb' is not a block device path"], id="device-relative"),
        pytest.param(None, {"brick_devices": [{"device": "/srv/disk.img", "mount": "/bricks/gv0"}], "block_devices": ["/srv/disk.img"]},
                     ["device '/srv/disk.img' is not a block device path"], id="device-outside-dev"),
        pytest.param(None, {"brick_devices": [DEVICE, dict(DEVICE, mount="/bricks/other")], "block_devices": ["/dev/sdb"]},
                     ["glusterfs_brick_devices[1] (/dev/sdb): device /dev/sdb is listed twice"], id="device-twice"),
        pytest.param(None, {"brick_devices": [dict(DEVICE, mount="bricks")], "block_devices": ["/dev/sdb"]},
                     ["mount 'bricks' is not an absolute path"], id="device-mount-relative"),
        pytest.param(None, {"brick_devices": [dict(DEVICE, mount="/")], "block_devices": ["/dev/sdb"]}, ["mount '/' is '/'"], id="device-mount-root"),
        pytest.param(None, {"brick_devices": [DEVICE, dict(DEVICE, device="/dev/sdc")], "block_devices": ["/dev/sdb", "/dev/sdc"]},
                     ["glusterfs_brick_devices[1] (/dev/sdc): mount point /bricks/gv0 is used twice"], id="device-mount-twice"),
        # rule 17: a block device on this host
        pytest.param(None, {"brick_devices": [DEVICE], "block_devices": []},
                     ["glusterfs_brick_devices[0] (/dev/sdb): /dev/sdb is not a block device on this host"], id="device-missing"),
        # rule 18: formatting only on request
        pytest.param(None, {"brick_devices": [DEVICE], "block_devices": ["/dev/sdb"], "device_filesystems": {"/dev/sdb": ""}},
                     ["n1: glusterfs_brick_devices[0] (/dev/sdb): /dev/sdb has no filesystem", "set glusterfs_format_brick_devices: true"],
                     id="empty-device-not-formatted"),
        # rule 19: peer timeout
        pytest.param(None, {"peer_timeout": 0}, ["glusterfs_peer_timeout 0 is not a number of seconds of at least 1"], id="peer-timeout-0"),
        pytest.param(None, {"peer_timeout": "soon"}, ["glusterfs_peer_timeout 'soon'"], id="peer-timeout-word"),
        # rule 9 on a client: against the volumes of the brick hosts
        pytest.param(None, dict(CLIENT, mount_volume="nosuch"),
                     ["c1: glusterfs_mount_volume 'nosuch' is not one of glusterfs_volumes (gv0) as the brick hosts (group 'glusterfs')"],
                     id="client-mount-volume"),
        pytest.param(None, dict(CLIENT, pool_volumes=[volume(name="shared")]),
                     ["c1: glusterfs_mount_volume 'gv0' is not one of glusterfs_volumes (shared)",
                      "where the clients (group 'glusterfs_clients') see them too"], id="client-mount-volume-not-the-pools"),
        # rules 3 to 8 and 11 on a client: the brick hosts' volumes, so that bad volumes fail every host of the play
        pytest.param([volume()], dict(CLIENT, group_hosts=["n1", "n2"], pool_volumes=[volume(replica=2, brick_dirs=["/b"])]),
                     ["c1: glusterfs_volumes[gv0]: replica 2 without an arbiter"], id="client-pool-replica-2"),
        pytest.param(None, dict(CLIENT, play_hosts=["n1", "n2", "c1"]), ["c1: glusterfs_volumes[gv0]: brick host 'n3' is not in this play"],
                     id="client-without-a-brick-host-in-the-play"),
        pytest.param(None, dict(CLIENT, pool_volumes=[volume(brick_dirs=["/gfsv/b"])]),
                     ["c1: glusterfs_volumes[gv0]: brick /gfsv/b and glusterfs_mount_path /gfsv overlap"], id="client-pool-brick-in-mount"),
        # rule 20: a client has brick hosts to mount from, which define a volume
        pytest.param(None, dict(CLIENT, group_hosts=[], play_hosts=["c1"]),
                     ["c1: is a client (inventory group 'glusterfs_clients', variable glusterfs_client_group) but the group "
                      "'glusterfs' (variable glusterfs_group) has no host"], id="client-without-brick-hosts"),
        pytest.param(None, dict(CLIENT, pool_volumes=[]),
                     ["c1: is a client but the brick hosts (group 'glusterfs') define no volume: glusterfs_volumes is empty"],
                     id="client-without-volume"),
        pytest.param([], dict(CLIENT), ["define no volume"], id="client-without-volume-own-list"),
        # rule 21: a client's packages
        pytest.param(None, dict(CLIENT, client_packages="glusterfs-client"),
                     ["c1: glusterfs_client_packages 'glusterfs-client' is not a list of package names"], id="client-packages-string"),
        pytest.param(None, dict(CLIENT, client_packages=["glusterfs-client", "Bad Name"]),
                     ["entry 'Bad Name' is not a Debian package name", "Fix: keep the default [glusterfs-client]"],
                     id="client-packages-bad-name"),
        pytest.param(None, dict(CLIENT, client_packages=["glusterfs-common"]),
                     ["glusterfs_client_packages ['glusterfs-common'] lacks glusterfs-client, which holds mount.glusterfs"],
                     id="client-packages-without-client"),
        pytest.param(None, dict(CLIENT, client_packages=["glusterfs-client", "glusterfs-server"]),
                     ["holds glusterfs-server, which installs glusterd", "never runs glusterd"], id="client-packages-with-server"),
        pytest.param(None, dict(CLIENT, client_packages=["glusterfs-*"]), ["holds glusterfs-*, which installs glusterd"],
                     id="client-packages-wildcard-with-server"),
        pytest.param(None, dict(CLIENT, client_packages=[]), ["glusterfs_client_packages [] lacks glusterfs-client"],
                     id="client-packages-empty"),
        # rule 22: a client holds no brick
        pytest.param(None, dict(CLIENT, brick_devices=[DEVICE], block_devices=["/dev/sdb"]),
                     ["c1: sets glusterfs_brick_devices but is a client (in 'glusterfs_clients', not in 'glusterfs')",
                      "Fix: add the host to 'glusterfs' to carry bricks"], id="client-with-brick-devices"),
        # rules 10, 12 and 14 hold on a client as on a brick host: it mounts the same volume the same way
        pytest.param(None, dict(CLIENT, mount_path="gfsv"), ["c1: glusterfs_mount_path 'gfsv' is not an absolute path"],
                     id="client-mount-path"),
        pytest.param(None, dict(CLIENT, mount_options="defaults,backup-volfile-servers=n2"),
                     ["c1: glusterfs_mount_options 'defaults,backup-volfile-servers=n2' sets the backup volfile servers"],
                     id="client-mount-options"),
        pytest.param(None, dict(CLIENT, shared_dirs=[{"path": "scratch", "mode": "1777"}]), ["c1: glusterfs_shared_dirs[0]"],
                     id="client-shared-dir"),
    ],
)
def test_one_problem(volumes, kwargs, expected):
    found = check(volumes, **kwargs)
    assert len(found) == 1, found
    for part in expected:
        assert part in found[0], found
    assert found[0].startswith(f"{kwargs.get('host', 'n1')}: ") and "Fix:" in found[0]


def test_several_problems_are_all_reported():
    found = check([volume(replica=2, brick_dirs=["/b"])], group_hosts=["n1", "n2"], play_hosts=["n1", "n2"], mount_path="gfsv",
                  peer_timeout=0)
    assert len(found) == 3, found
    assert all(p.startswith("n1: ") and "Fix:" in p for p in found)


def test_client_problems_are_all_reported():
    found = check(None, host="c1", client_hosts=["c1"], group_hosts=[], play_hosts=["c1"], client_packages=["glusterfs-server"],
                  brick_devices=[DEVICE])
    assert len(found) == 3, found
    assert all(p.startswith("c1: ") and "Fix:" in p for p in found)


def test_not_a_list():
    with pytest.raises(AnsibleFilterError, match="must be the list glusterfs_volumes"):
        PROBLEMS({"name": "gv0"}, host="n1")


def test_a_volume_on_and_one_inside_another_volumes_brick_each_clash_once():
    """gv1 on gv0's brick directory and gv2 inside it: each clash is one problem, none passes."""
    found = check([volume(), volume(name="gv1"), volume(name="gv2", brick_dirs=["/bricks/gv0/brick1/sub"])])
    assert len(found) == 3, found
    assert [p.split(":")[1].strip() for p in found] == ["glusterfs_volumes[gv1]", "glusterfs_volumes[gv2]", "glusterfs_volumes[gv2]"]
