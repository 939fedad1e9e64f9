"""NFS-Ganesha on the controller's node exporting the cluster's GlusterFS volume, checked from a worker
with a real NFS client (libnfs-utils, the nfs_clients group) over NFSv4 and NFSv3: list, read, and writes
that really land on Gluster; bad input that fails before any change while the export stays served, and
an export Ganesha drops at its restart failing the run. The storage playbook alone is rerun: the rest of
the scenario's converge has its own tests (check mode of the whole converge in test_slurm_native.py)."""

from __future__ import annotations

import time
import uuid

import pytest
from helpers import case_key, get_host, gluster_xml, inventory_hosts, journal_on_failure, run_playbook, run_playbooks_side_by_side

testinfra_hosts = inventory_hosts("nfs_ganesha")
SERVER = testinfra_hosts[0]
OTHER_GLUSTER = [h for h in inventory_hosts("glusterfs") if h != SERVER][0]
CLIENT = inventory_hosts("nfs_clients")[0]
MOUNT = "/gfsv"
STORAGE_PLAYBOOK = "../../playbooks/storage.yml"
USER_DIR = "nfs-rw"  # owned by uid 1000 on the volume: root is squashed on this export


def url(path: str, version: int, **params) -> str:
    query = "&".join([f"version={version}"] + [f"{k}={v}" for k, v in params.items()])
    return f"nfs://{SERVER}/gv0/{path}?{query}"


def read_until(client, read: str, content: str, seconds: float, every: float = 0.5) -> tuple[str, float]:
    """Reads READ over NFS until it holds CONTENT or SECONDS pass: what was read last, and the seconds waited."""
    started = time.monotonic()
    seen = client.check_output("nfs-cat %s", read)
    while seen != content and time.monotonic() < started + seconds:
        time.sleep(every)
        seen = client.check_output("nfs-cat %s", read)
    return seen, time.monotonic() - started


@pytest.fixture(scope="module")
def client():
    return get_host(CLIENT)


@pytest.fixture(scope="module")
def gluster_other():
    node = get_host(OTHER_GLUSTER)
    node.check_output(f"install -d -o 1000 -g 1000 -m 0755 {MOUNT}/{USER_DIR}")
    return node


def test_ganesha_running(host):
    with journal_on_failure(host, "nfs-ganesha"):
        assert host.service("nfs-ganesha").is_running


def test_ganesha_enabled(host):
    assert host.service("nfs-ganesha").is_enabled


def test_access_limited_to_cluster_network(host):
    conf = host.file("/etc/ganesha/ganesha.conf").content_string
    assert "EXPORT_DEFAULTS {\n    Access_Type = None;" in conf
    clients = [line.strip() for line in conf.splitlines() if line.strip().startswith("Clients =")]
    assert clients and all("/" in line and "0.0.0.0/0" not in line for line in clients)


def test_cache_invalidation_on(host):
    assert "on" in host.check_output("gluster volume get gv0 features.cache-invalidation")


@pytest.mark.parametrize("version", [4, 3])
def test_export_lists(client, gluster_other, version):
    result = client.run("nfs-ls %s", url("", version))
    assert result.rc == 0, result.stderr
    assert USER_DIR in result.stdout


@pytest.mark.parametrize("version", [4, 3])
def test_read_file_written_through_gluster(client, gluster_other, version):
    content = f"through gluster {uuid.uuid4()}"
    gluster_other.check_output(f"echo '{content}' > {MOUNT}/from-gluster-v{version}.txt")
    # The writer's FUSE client may return before the data reaches the bricks (flush-behind), and Ganesha's
    # GlusterFS client keeps attributes for a second: a read right after the write may still see the new file
    # empty (clean-clone runs saw that over NFSv3, and, while Ganesha kept attributes 60 s, for 20 s over NFSv4).
    # The content must arrive, within seconds.
    seen = read_until(client, url(f"from-gluster-v{version}.txt", version), content, 20)[0]
    assert seen == content


@pytest.mark.parametrize("version", [4, 3])
def test_file_rewritten_through_gluster_after_a_read_over_nfs_is_read_with_its_new_content(client, gluster_other, version):
    # A job rewrites its results on a Slurm node (through the FUSE mount) that a pod read before over NFS. Ganesha
    # had the file's attributes; with its own default (Attr_Expiration_Time 60) it served the old size for a whole
    # minute, as the upcalls of features.cache-invalidation never reached it. The role sets 0: within seconds.
    name = f"rewritten-v{version}-{uuid.uuid4().hex[:8]}.txt"
    read = url(name, version)
    gluster_other.check_output(f"echo first > {MOUNT}/{name}")
    assert read_until(client, read, "first", 20)[0] == "first"
    content = f"rewritten through gluster {uuid.uuid4()}"
    gluster_other.check_output(f"echo '{content}' > {MOUNT}/{name}")
    seen, waited = read_until(client, read, content, 10, every=0.25)
    print(f"NFSv{version}: the rewritten file read {'with its new' if seen == content else 'still with its old'} content after {waited:.2f} s")
    assert seen == content, f"still {seen!r} over NFSv{version} {waited:.1f} s after the rewrite"


@pytest.mark.parametrize("version", [4, 3])
def test_write_over_nfs_lands_on_gluster_with_content(client, gluster_other, version):
    name = f"upload-v{version}-{uuid.uuid4().hex[:8]}.txt"
    content = f"written over NFSv{version} {uuid.uuid4()}"
    client.check_output(f"echo '{content}' > /tmp/{name}")
    result = client.run("nfs-cp /tmp/%s %s", name, url(f"{USER_DIR}/{name}", version, uid=1000, gid=1000))
    assert result.rc == 0, result.stdout + result.stderr
    landed = gluster_other.file(f"{MOUNT}/{USER_DIR}/{name}")
    assert landed.content_string.strip() == content
    assert (landed.uid, landed.gid) == (1000, 1000)


def test_root_is_squashed(client, gluster_other):
    client.check_output("echo root > /tmp/root.txt")
    result = client.run("nfs-cp /tmp/root.txt %s", url("root-was-here.txt", 4))
    assert result.rc != 0
    assert not gluster_other.file(f"{MOUNT}/root-was-here.txt").exists


def export(**overrides):
    base = {"export_id": 1, "volume": "gv0", "pseudo": "/gv0", "access_type": "RW", "squash": "root_squash"}
    return dict(base, **overrides)


def ganesha_pid() -> str:
    return get_host(SERVER).check_output("systemctl show -p MainPID --value nfs-ganesha")


# Each message names the host and the variable; the filter nfs_ganesha_problems adds the fix.
BAD_INPUT = [
    pytest.param({"nfs_ganesha_client_networks": ["10.0.0.300/24"]},
                 f"{SERVER}: nfs_ganesha_client_networks entry '10.0.0.300/24' is not a network", id="client-network-typo"),
    pytest.param({"nfs_ganesha_exports": [export(clients=["10.0.0.5/24"])]},
                 f"{SERVER}: nfs_ganesha_exports[0] (pseudo /gv0): clients entry '10.0.0.5/24' has host bits set", id="client-host-bits"),
    pytest.param({"nfs_ganesha_exports": [export(clients=["0.0.0.0/0"])]},
                 f"{SERVER}: nfs_ganesha_exports[0] (pseudo /gv0) would be open to 0.0.0.0/0", id="open-to-the-world"),
    pytest.param({"nfs_ganesha_client_networks": []},
                 f"{SERVER}: nfs_ganesha_exports[0] (pseudo /gv0) would be open to nobody (nfs_ganesha_client_networks is empty)",
                 id="no-client-network"),
    pytest.param({"nfs_ganesha_exports": [export(), export(pseudo="/other")]},
                 f"{SERVER}: nfs_ganesha_exports[1] (pseudo /other): export_id 1 is also the id of nfs_ganesha_exports[0]",
                 id="duplicate-export-id"),
    pytest.param({"nfs_ganesha_exports": [export(pseudo="gv0")]},
                 f"{SERVER}: nfs_ganesha_exports[0] (pseudo gv0): pseudo 'gv0' is not an absolute path", id="relative-pseudo"),
    pytest.param({"nfs_ganesha_grace_period": 5}, f"{SERVER}: nfs_ganesha_grace_period 5 is outside 60..270", id="grace-period"),
]


@pytest.fixture(scope="module")
def bad_input_runs(client, gluster_other):
    """Every bad input's run, side by side, and what the export was before them. The storage playbook with
    --tags nfs_ganesha, as an admin changing only the exports runs it: of the GlusterFS play, which none of these
    inputs touch, only the read-only checks run (without the tag each case took as long as a no-change run of the
    whole volume)."""
    before = get_host(SERVER).file("/etc/ganesha/ganesha.conf").sha256sum, ganesha_pid()
    return before, run_playbooks_side_by_side(STORAGE_PLAYBOOK, [case.values[0] for case in BAD_INPUT], "--tags", "nfs_ganesha")


@pytest.mark.parametrize("extra_vars,message", BAD_INPUT)
def test_bad_input_fails_before_any_change_and_the_export_is_still_served(client, bad_input_runs, extra_vars, message):
    (conf_before, pid_before), runs = bad_input_runs
    run = runs[case_key(extra_vars)]
    assert run.rc != 0, run
    assert message in run.output and "Fix:" in run.output, run
    assert run.total_changed == 0, run
    assert get_host(SERVER).file("/etc/ganesha/ganesha.conf").sha256sum == conf_before
    assert ganesha_pid() == pid_before  # not restarted
    listing = client.run("nfs-ls %s", url("", 4))  # read as test_export_lists reads it
    assert listing.rc == 0, listing.stderr
    assert USER_DIR in listing.stdout


# A run limited by --tags to one step checks first too: under --tags nfs_ganesha_configure the checks were skipped,
# the export open to the world was written and Ganesha restarted with it; under --tags nfs_ganesha_service alone the
# run failed ('__nfs_ganesha_conf_written' is undefined).
def test_bad_input_in_a_run_limited_by_tags_to_the_configure_step_fails_before_any_change(client):
    conf_before, pid_before = get_host(SERVER).file("/etc/ganesha/ganesha.conf").sha256sum, ganesha_pid()
    run = run_playbook(STORAGE_PLAYBOOK, "--tags", "nfs_ganesha_configure", extra_vars={"nfs_ganesha_exports": [export(clients=["0.0.0.0/0"])]})
    assert run.rc != 0, run
    assert f"{SERVER}: nfs_ganesha_exports[0] (pseudo /gv0) would be open to 0.0.0.0/0" in run.output and "Fix:" in run.output, run
    assert run.total_changed == 0, run
    assert get_host(SERVER).file("/etc/ganesha/ganesha.conf").sha256sum == conf_before
    assert ganesha_pid() == pid_before


def test_a_run_limited_by_tags_to_the_service_step_changes_nothing(client):
    pid_before = ganesha_pid()
    run = run_playbook(STORAGE_PLAYBOOK, "--tags", "nfs_ganesha_service")
    assert run.rc == 0, run
    assert run.total_changed == 0, run
    assert ganesha_pid() == pid_before
    assert client.run("nfs-ls %s", url("", 4)).rc == 0


# The role never starts or stops a volume: whether one runs is for the glusterfs role's glusterfs_volumes[].state,
# or an admin, to decide. An export of a stopped volume fails the run before any change, naming the export and the
# volume, and the volume stays stopped. Before, the role's options step (gluster_volume state=started) started the
# volume, and the run wrote the export and restarted Ganesha. A volume of the test's own, deleted after: gv0 holds
# the cluster's homes.
def test_an_export_of_a_stopped_volume_fails_before_any_change_and_the_volume_stays_stopped(client):
    server = get_host(SERVER)
    for name in inventory_hosts("glusterfs"):
        get_host(name).check_output("mkdir -p /bricks/gvstopped/brick1")
    bricks = " ".join(f"{h}:/bricks/gvstopped/brick1" for h in inventory_hosts("glusterfs"))
    gluster_xml(server, f"volume create gvstopped replica {len(inventory_hosts('glusterfs'))} {bricks} force")
    gluster_xml(server, "volume start gvstopped")
    gluster_xml(server, "volume stop gvstopped")
    conf_before, pid_before = server.file("/etc/ganesha/ganesha.conf").sha256sum, ganesha_pid()
    try:
        run = run_playbook(STORAGE_PLAYBOOK, "--tags", "nfs_ganesha", extra_vars={
            "nfs_ganesha_exports": [export(), export(export_id=2, volume="gvstopped", pseudo="/gvstopped")]})
        status = gluster_xml(server, "volume info gvstopped").findtext("volInfo/volumes/volume/statusStr")
    finally:
        server.run("gluster --mode=script volume stop gvstopped")
        server.run("gluster --mode=script volume delete gvstopped")
        for name in inventory_hosts("glusterfs"):
            get_host(name).run("rm -rf /bricks/gvstopped")
    assert run.rc != 0, run
    assert f"{SERVER}: nfs_ganesha_exports[1] (pseudo /gvstopped): volume gvstopped is stopped" in run.output, run
    assert "Fix:" in run.output, run
    assert run.total_changed == 0, run
    assert status == "Stopped"
    assert server.file("/etc/ganesha/ganesha.conf").sha256sum == conf_before
    assert ganesha_pid() == pid_before
    assert client.run("nfs-ls %s", url("", 4)).rc == 0


# Last: it restarts Ganesha. A volpath missing on the volume passes every input check (the filter cannot
# look into the volume); Ganesha then drops the export and keeps running, and the role's check after the
# restart must fail the run. The next plain run restores the export. Both runs --tags nfs_ganesha: the
# GlusterFS play has nothing to do with it.
def test_an_export_ganesha_drops_at_its_restart_fails_the_run(client, gluster_other):
    broken = run_playbook(STORAGE_PLAYBOOK, "--tags", "nfs_ganesha", extra_vars={"nfs_ganesha_exports": [export(volpath="/no-such-dir")]})
    try:
        assert broken.rc != 0, broken
        assert f"{SERVER}: after its (re)start NFS-Ganesha does not serve export 1 (pseudo /gv0, volume gv0, volpath /no-such-dir)" in broken.output, broken
        assert "Fix:" in broken.output, broken
        assert client.run("nfs-ls %s", url("", 4)).rc != 0  # what the check saw: the export is gone
    finally:
        restored = run_playbook(STORAGE_PLAYBOOK, "--tags", "nfs_ganesha")
    assert restored.rc == 0, restored
    listing = client.run("nfs-ls %s", url("", 4))
    assert listing.rc == 0, listing.stderr
    assert USER_DIR in listing.stdout
