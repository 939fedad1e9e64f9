#!/usr/bin/python
# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: gluster_volume
short_description: Create, grow, start, stop and delete a GlusterFS volume, reading state only through C(--xml)
version_added: 0.1.0
description:
  - Manages one GlusterFS volume from one node of the trusted storage pool (use C(run_once) or
    C(delegate_to) a storage node). Written for GlusterFS 10 (Debian bookworm 10.3).
  - Reads the volume, its effective options and the pool only through C(gluster ... --xml) and checks
    C(<opRet>) of every command, because the CLI can exit 0 after a failure in XML mode. Every command
    runs with C(--mode=script) and C(LANG=C), as an argv list, never through a shell.
  - Plans the commands first and runs nothing when the plan is empty, so a converged volume reports no
    change. Unsafe or unsupported changes (fewer bricks, another brick order, a lower replica count,
    another volume type or transport, two bricks of one replica set on one host, a new brick that is the
    same directory as, inside or above a brick of another volume) are refused before any command runs,
    with a message that says how to do them by hand.
  - Before it creates a volume or adds bricks, and only then, it reads every volume of the pool
    (C(gluster volume info --xml)) to refuse a brick directory that another volume already uses.
  - Brick hosts that are not yet in the pool are probed (C(gluster peer probe)), then the module waits
    up to O(peer_timeout) seconds until every brick host is connected and in state C(Peer in Cluster).
    A peer that stays down fails the task before any volume command runs; on a converged volume it
    only adds a warning, so a degraded cluster does not block other work. A volume command that fails
    staging on a peer not yet connected to another one (they handshake after the probe) is run again,
    also up to O(peer_timeout) seconds.
  - New volumes are created, their O(options) set, and only then started, so options such as
    C(client.ssl) and C(server.ssl) are in place before the first client connects.
author:
  - hpclab.cluster contributors (@hpclab)
extends_documentation_fragment:
  - hpclab.cluster.attributes
attributes:
  check_mode:
    support: full
    details:
      - Runs only the read commands (C(volume info), C(volume get), C(pool list)) and returns the commands a real run would run.
      - A volume that does not exist, asked for without O(bricks) (its options or state only, for a volume another task
        creates), is reported changed with a warning, since in check mode that task created nothing; a real run fails
        where it still does not exist.
  diff_mode:
    support: full
    details: Shows status, bricks, replica/arbiter/disperse/redundancy counts, transport and the managed options before and after.
  idempotent:
    support: full
    details: A second run with the same parameters plans no command and reports no change.
options:
  name:
    description:
      - Name of the volume. GlusterFS allows letters, digits, C(-) and C(_), at most 256 characters, not
        starting with C(-), and not a CLI keyword such as C(all), C(volume) or C(force).
    type: str
    required: true
  state:
    description:
      - V(started) creates the volume if needed and starts it.
      - V(present) creates the volume if needed (without starting it) and leaves a running or stopped volume as it is.
      - V(stopped) creates the volume if needed and stops it if it runs. A created, never started volume counts as stopped.
      - V(absent) stops the volume if it runs and deletes its definition, only with O(confirm_delete=true).
        The brick directories and the data in them are never removed.
    type: str
    choices: [present, started, stopped, absent]
    default: started
  bricks:
    description:
      - The bricks, each C(host:/absolute/path), in order. Consecutive groups of O(replica) (or
        O(disperse)) bricks form one replica (or disperse) set, so list them host-minor, for example
        C(n1:/b1 n2:/b1 n3:/b1 n1:/b2 n2:/b2 n3:/b2).
      - Paths are canonicalised like GlusterFS does (duplicate and trailing slashes removed) before
        they are compared, and an existing brick is recognised under any name its peer has in the pool.
      - For an existing volume the existing bricks must come first, in the volume's order; bricks after
        them are added in whole sets with C(gluster volume add-brick). Bricks are never removed or
        replaced by this module.
      - Use the host names the pool knows the peers by. GlusterFS refuses C(localhost) and loopback addresses.
      - Required to create a volume; when omitted for an existing volume the bricks are not managed.
    type: list
    elements: str
  replica:
    description:
      - Replica count (at least 2). Omit for a plain distribute or a disperse volume. For an existing
        volume, omitted means "whatever it has"; a different value is refused.
    type: int
  arbiter:
    description:
      - V(1) makes the last brick of each replica set an arbiter (metadata only). Needs O(replica=3);
        O(replica=2) with O(arbiter=1) is accepted and stored by GlusterFS 10 as C(replica 3 arbiter 1).
    type: int
    choices: [0, 1]
  disperse:
    description: Bricks per disperse (erasure-coded) set, at least 3. Cannot be combined with O(replica).
    type: int
  redundancy:
    description: Bricks per disperse set that may fail; less than half of O(disperse). Omitted, GlusterFS picks it.
    type: int
  transport:
    description: Transport of a new volume. The transport of an existing volume cannot be changed.
    type: str
    choices: [tcp, rdma, "tcp,rdma"]
    default: tcp
  options:
    description:
      - Volume options, applied with C(gluster volume set). They are compared with the EFFECTIVE values
        of C(gluster volume get NAME all), so setting an option to its default value changes nothing.
      - Boolean spellings are one value (V(on), V(off), V(true), V(false), V(yes), V(no), V(enable),
        V(disable), V(1), V(0) and YAML booleans), so an unquoted C(off) does not cause a change on every run.
      - A key without a dot is completed like GlusterFS does when it matches exactly one option after
        its first dot (C(write-behind) is C(performance.write-behind)); an ambiguous one is refused.
      - Options that are not listed are left as they are; this module never resets an option.
    type: dict
    default: {}
  allow_bricks_on_root_filesystem:
    description:
      - Let GlusterFS create bricks on the root filesystem of their host, which it refuses by default
        because a full brick then fills the system's root filesystem.
      - Setting this or O(allow_replica_set_on_one_host) appends GlusterFS's C(force) word to C(volume create)
        and C(volume add-brick). C(force) also skips GlusterFS's check that a brick directory is not
        already part of a volume (stale C(trusted.glusterfs.volume-id) attributes), so only set it on clean brick directories.
        The module itself still refuses a brick that is the same directory as, inside or above a brick of another
        volume of the pool.
    type: bool
    default: false
  allow_replica_set_on_one_host:
    description:
      - Allow two bricks of one replica or disperse set on the same host. Without it the module refuses
        such a layout before running anything, because losing that host loses the set.
      - Like O(allow_bricks_on_root_filesystem) this appends C(force), with the same side effects.
    type: bool
    default: false
  peer_timeout:
    description: Seconds to wait for every brick host to be connected and in state C(Peer in Cluster) before changing the volume.
    type: int
    default: 120
  peer_poll_interval:
    description: Seconds between two C(gluster pool list) reads while waiting for peers.
    type: float
    default: 1
  confirm_delete:
    description:
      - Required for O(state=absent) to delete an existing volume. Deleting removes the volume's definition
        from every peer; the brick directories and their data stay on the servers.
    type: bool
    default: false
  rebalance:
    description:
      - After bricks were added to a volume that is (or is being) started, run
        C(gluster volume rebalance NAME start) so existing files spread to the new sets. The rebalance
        runs in the background; watch it with C(gluster volume rebalance NAME status).
    type: bool
    default: true
notes:
  - "Run the module on one storage node only (C(run_once: true)); GlusterFS propagates the change to every peer."
  - Shrinking a volume, replacing a brick or changing the replica count are deliberate operations with
    data movement; the module refuses them and its message names the C(gluster volume remove-brick)
    (C(start), C(status), C(commit)) or C(replace-brick) commands to run by hand.
  - This module has no catch-all C(force) option. GlusterFS's C(force) word is only used when one of the
    two C(allow_*) options is set.
requirements:
  - The gluster CLI built with XML support (Debian C(glusterfs-cli)), and a running C(glusterd) on this node.
seealso:
  - name: GlusterFS volume setup
    description: Volume types, brick layout and the gluster CLI.
    link: https://docs.gluster.org/en/latest/Administrator-Guide/Setting-Up-Volumes/
"""

EXAMPLES = r"""
- name: A replica 3 volume across three nodes, started
  hpclab.cluster.gluster_volume:
    name: gv0
    bricks:
      - node1:/data/glusterfs/gv0/brick1/brick
      - node2:/data/glusterfs/gv0/brick1/brick
      - node3:/data/glusterfs/gv0/brick1/brick
    replica: 3
    options:
      performance.cache-size: 256MB
      nfs.disable: true
      write-behind: false
  run_once: true

- name: Two nodes with data and a small arbiter node
  hpclab.cluster.gluster_volume:
    name: gv1
    bricks: [node1:/data/gv1/brick, node2:/data/gv1/brick, arbiter1:/data/gv1/brick]
    replica: 3
    arbiter: 1
  run_once: true

- name: Grow gv0 by one replica set (2 x 3), then rebalance
  hpclab.cluster.gluster_volume:
    name: gv0
    bricks:
      - node1:/data/glusterfs/gv0/brick1/brick
      - node2:/data/glusterfs/gv0/brick1/brick
      - node3:/data/glusterfs/gv0/brick1/brick
      - node1:/data/glusterfs/gv0/brick2/brick
      - node2:/data/glusterfs/gv0/brick2/brick
      - node3:/data/glusterfs/gv0/brick2/brick
    replica: 3
  run_once: true

- name: A lab volume on the containers' root filesystem
  hpclab.cluster.gluster_volume:
    name: scratch
    bricks: [node1:/bricks/scratch, node2:/bricks/scratch, node3:/bricks/scratch]
    replica: 3
    allow_bricks_on_root_filesystem: true
  run_once: true

- name: Stop a volume (its bricks stay)
  hpclab.cluster.gluster_volume:
    name: scratch
    state: stopped
  run_once: true

- name: Delete the volume definition; the brick data stays on the nodes
  hpclab.cluster.gluster_volume:
    name: scratch
    state: absent
    confirm_delete: true
  run_once: true
"""

RETURN = r"""
volume:
  description:
    - The volume as read after the run (in check mode, as found before it); empty when there is none.
    - C(options) holds only the reconfigured options, with full keys.
  returned: always
  type: dict
  sample:
    name: gv0
    id: b63738f5-c6cd-4ace-a1f3-abdcadb91ba3
    type: Replicate
    status: started
    replica: 3
    arbiter: 0
    disperse: 0
    redundancy: 0
    distribute: 1
    transport: tcp
    bricks: [node1:/bricks/gv0, node2:/bricks/gv0, node3:/bricks/gv0]
    options: {nfs.disable: "on", performance.client-io-threads: "off"}
peers:
  description: The other members of the pool as last read, with C(connected) and C(state) (for example C(Peer in Cluster)).
  returned: always
  type: list
  elements: dict
  sample:
    - hostname: node2
      hostnames: [node2]
      uuid: 375f0c93-0d81-4d03-8b3f-341b43f9f658
      connected: true
      state: Peer in Cluster
commands:
  description: The gluster commands run, as argv lists (in check mode, the ones a real run would run). Empty when converged.
  returned: always
  type: list
  elements: list
  sample:
    - [gluster, --mode=script, volume, create, gv0, replica, "3", transport, tcp, node1:/b, node2:/b, node3:/b, --xml]
    - [gluster, --mode=script, volume, start, gv0, --xml]
"""

import socket
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpclab.cluster.plugins.module_utils._gluster import (
    EG_NOVOL,
    GLUSTER,
    XML,
    GlusterCliError,
    GlusterError,
    add_brick_names,
    cli_busy,
    diff_view,
    find_peer,
    host_ids,
    missing_peers,
    normalise_desired,
    offline_bricks,
    parse_pool_list,
    parse_volume_get,
    parse_volume_info,
    parse_volume_status,
    parse_xml,
    peer_facts,
    peers_settling,
    plan_volume,
    predicted_view,
    probe_argv,
    remote_hosts,
    resolve_options,
    unready_peers,
    volume_facts,
)
from ansible_collections.hpclab.cluster.plugins.module_utils._runner import CommandRunner, failure_message

# glusterd's messages are parsed nowhere, but errors quoted to the user should be in one language.
ENVIRON = {"LANG": "C", "LC_ALL": "C"}

DESIRED_KEYS = (
    "name",
    "state",
    "bricks",
    "replica",
    "arbiter",
    "disperse",
    "redundancy",
    "transport",
    "options",
    "allow_bricks_on_root_filesystem",
    "allow_replica_set_on_one_host",
    "confirm_delete",
    "rebalance",
)

# Hints for the refusals GlusterFS makes without 'force' (messages of GlusterFS 10.3, see the fixtures).
# Tries of a command glusterd refused because another transaction held its lock (or staging met a peer not yet
# connected), and the pause between them.
BUSY_TRIES = 15
BUSY_DELAY = 2.0

HINTS = (
    ("root partition", "set allow_bricks_on_root_filesystem=true to accept a brick on the root filesystem"),
    ("same server", "reorder the bricks or set allow_replica_set_on_one_host=true"),
    ("already part of a volume", "the brick directory carries another volume's attributes; clean it by hand (this module never forces reuse)"),
)


def local_host_names() -> set:
    """Names by which this node may appear in a brick: hostname, short name, FQDN, its addresses, localhost."""
    names = {"localhost"}
    try:
        hostname = socket.gethostname()
        names.update({hostname, hostname.split(".")[0], socket.getfqdn()})
        names.update(socket.gethostbyname_ex(hostname)[2])
    except OSError:
        pass
    return {n for n in names if n}


class Gluster:
    """Runs gluster argv lists and turns every failure (rc or opRet) into one fail_json."""

    def __init__(self, module: AnsibleModule, volume: str, result: dict):
        self.module = module
        self.volume = volume
        self.result = result
        self.runner = CommandRunner(module, environ=ENVIRON, opt_dirs=["/usr/sbin"])

    def call(self, argv: list) -> tuple:
        """Return (stdout, failure message or None, GlusterCliError or None). A command that lost the race for
        glusterd's lock to another one (cli_busy) is run again, up to BUSY_TRIES times, BUSY_DELAY s apart; one that
        failed staging on a peer not yet connected to another (peers_settling, right after a probe) is run again for
        as long as peer_timeout allows, as the wait for the peers themselves is. The answer decides, not the exit
        status: in XML mode the CLI exits 0 on such a failure and reports it only in opRet and opErrstr."""
        deadline = time.monotonic() + float(self.module.params.get("peer_timeout") or 0)
        attempt = 0
        while True:
            attempt += 1
            rc, out, err = self.runner.run(argv)
            if not cli_busy(out, err):
                break
            if attempt >= BUSY_TRIES and not (peers_settling(out, err) and time.monotonic() < deadline):
                break
            time.sleep(BUSY_DELAY)
        try:
            parse_xml(out)
        except GlusterCliError as exc:
            return out, self._message(argv, rc, exc, err), exc
        if rc != 0:
            return out, failure_message(argv, rc, "", err, f"volume {self.volume}"), None
        return out, None, None

    def _message(self, argv: list, rc: int, exc: GlusterCliError, err: str) -> str:
        msg = f"volume {self.volume}: {' '.join(argv)} failed: rc={rc}, opRet={exc.op_ret}, opErrno={exc.op_errno}, opErrstr: {exc.op_errstr}"
        if err and err.strip():
            msg += f"; stderr: {err.strip()}"
        for needle, hint in HINTS:
            if needle in exc.op_errstr:
                msg += f" ({hint})"
        return msg

    def read(self, argv: list) -> str:
        out, failure, _exc = self.call(argv)
        if failure:
            self.module.fail_json(msg=failure, **self.result)
        return out

    def change(self, argv: list) -> None:
        _out, failure, _exc = self.call(argv)
        self.result["commands"].append(argv)
        if failure:
            self.module.fail_json(msg=failure, failed_command=argv, **self.result)

    def volume_info(self) -> dict | None:
        argv = [*GLUSTER, "volume", "info", self.volume, XML]
        out, failure, exc = self.call(argv)
        if exc is not None and exc.op_errno == EG_NOVOL:
            return None
        if failure:
            self.module.fail_json(msg=failure, **self.result)
        return parse_volume_info(out).get(self.volume)

    def all_volumes(self) -> dict:
        """Every volume of the pool (``gluster volume info`` without a name), to keep new bricks off theirs."""
        return parse_volume_info(self.read([*GLUSTER, "volume", "info", XML]))

    def pool(self) -> list:
        return parse_pool_list(self.read([*GLUSTER, "pool", "list", XML]))

    def effective_options(self) -> dict:
        return parse_volume_get(self.read([*GLUSTER, "volume", "get", self.volume, "all", XML]))


def describe(pool: list, hosts: list) -> str:
    parts = []
    for host in hosts:
        peer = find_peer(pool, host)
        if peer is None:
            parts.append(f"{host} (not in the pool)")
        else:
            state = peer["state_str"] or f"state {peer['state']}"
            parts.append(f"{host} ({state}, {'connected' if peer['connected'] else 'disconnected'})")
    return ", ".join(parts)


def wait_for_peers(gluster: Gluster, hosts: list, timeout: float, interval: float, volume: dict | None) -> tuple:
    """Poll the pool until every host is ready or the timeout passes; return (pool, hosts still down)."""
    deadline = time.monotonic() + timeout
    while True:
        pool = add_brick_names(gluster.pool(), volume)
        down = unready_peers(pool, hosts)
        if not down or time.monotonic() >= deadline:
            return pool, down
        time.sleep(interval)


def wait_for_bricks(gluster: Gluster, volume: dict, timeout: float, interval: float) -> list:
    """Poll `volume status` until every brick is online or the timeout passes; return those still offline."""
    deadline = time.monotonic() + timeout
    while True:
        offline = offline_bricks(volume, parse_volume_status(gluster.read([*GLUSTER, "volume", "status", volume["name"], XML])))
        if not offline or time.monotonic() >= deadline:
            return offline
        time.sleep(interval)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "state": {"type": "str", "default": "started", "choices": ["present", "started", "stopped", "absent"]},
            "bricks": {"type": "list", "elements": "str"},
            "replica": {"type": "int"},
            "arbiter": {"type": "int", "choices": [0, 1]},
            "disperse": {"type": "int"},
            "redundancy": {"type": "int"},
            "transport": {"type": "str", "default": "tcp", "choices": ["tcp", "rdma", "tcp,rdma"]},
            "options": {"type": "dict", "default": {}},
            "allow_bricks_on_root_filesystem": {"type": "bool", "default": False},
            "allow_replica_set_on_one_host": {"type": "bool", "default": False},
            "peer_timeout": {"type": "int", "default": 120},
            "peer_poll_interval": {"type": "float", "default": 1},
            "confirm_delete": {"type": "bool", "default": False},
            "rebalance": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    params = module.params
    name = params["name"]
    desired = {key: params[key] for key in DESIRED_KEYS}
    result = {"changed": False, "commands": [], "volume": {}, "peers": []}
    try:
        normalised = normalise_desired(desired)
    except GlusterError as exc:
        module.fail_json(msg=str(exc), **result)
    state = normalised["state"]
    if params["peer_timeout"] < 0 or params["peer_poll_interval"] <= 0:
        module.fail_json(msg="peer_timeout must be 0 or more and peer_poll_interval more than 0 seconds", **result)

    gluster = Gluster(module, name, result)
    current = gluster.volume_info()
    if current is None and state != "absent" and not normalised.get("bricks") and module.check_mode:
        # Options and a state for a volume that another play creates (nfs_ganesha after glusterfs): in check mode that
        # play created nothing either. Check mode does not fail on it; a real run does where no play creates it.
        module.warn(
            f"volume {name} does not exist: a real run sets its options and state once an earlier task has created it "
            "(with its bricks, e.g. the glusterfs role), and fails if none has"
        )
        result["changed"] = True
        module.exit_json(**result)
    effective = None
    if current is not None and state != "absent" and params["options"]:
        effective = gluster.effective_options()
    pool = add_brick_names(gluster.pool(), current)
    result["volume"] = volume_facts(current)
    result["peers"] = peer_facts(pool)

    local_uuid = next((p["uuid"] for p in pool if p["local"]), None)
    local_names = local_host_names()
    if current is not None and local_uuid:
        # a brick whose peer uuid is this node's names this node, whatever name it was given
        local_names |= {b.rpartition(":")[0] for b, u in zip(current["bricks"], current["brick_host_uuids"]) if u == local_uuid}
    try:
        ids = host_ids(pool, local_names)
        plan = plan_volume(current, desired, effective, ids)
        if any(argv[3] in ("create", "add-brick") for argv in plan):
            # Read every volume only when bricks are to be created or added, so a converged run does not pay for it.
            plan = plan_volume(current, desired, effective, ids, gluster.all_volumes())
        wanted = resolve_options(params["options"], effective) if state != "absent" else {}
    except GlusterError as exc:
        module.fail_json(msg=str(exc), **result)

    wanted_hosts = remote_hosts(normalised["bricks"], local_names) if state != "absent" else []
    needed = wanted_hosts + [h for h in remote_hosts(current["bricks"] if current else [], local_names) if h not in wanted_hosts]
    probes = [probe_argv(host) for host in missing_peers(pool, wanted_hosts)]
    commands = probes + plan
    result["changed"] = bool(commands)
    if module._diff:
        before = diff_view(current, wanted.keys(), effective)
        result["diff"] = {"before": before, "after": predicted_view(before, desired, wanted), "before_header": name, "after_header": name}

    if not commands:
        down = unready_peers(pool, needed)
        if down:
            module.warn(
                f"volume {name} is converged, but these peers are not ready: {describe(pool, down)}; "
                "check glusterd on them (systemctl status glusterd)"
            )
        module.exit_json(**result)

    if module.check_mode:
        probed = {argv[4] for argv in probes}
        down = [h for h in unready_peers(pool, needed) if h not in probed]
        if down:
            module.warn(
                f"volume {name}: peers not ready: {describe(pool, down)}; a real run would wait up to "
                f"{params['peer_timeout']} s for them and fail without changing the volume if they stay down"
            )
        result["commands"] = commands
        module.exit_json(**result)

    for argv in probes:
        gluster.change(argv)
    if probes or unready_peers(pool, needed):
        pool, down = wait_for_peers(gluster, needed, params["peer_timeout"], params["peer_poll_interval"], current)
        result["peers"] = peer_facts(pool)
        if down:
            module.fail_json(
                msg=(
                    f"volume {name}: after {params['peer_timeout']} s these peers are still not connected in state "
                    f"'Peer in Cluster': {describe(pool, down)}. Check that glusterd runs on them "
                    "(systemctl status glusterd) and that TCP port 24007 is reachable; no volume command was run"
                ),
                **result,
            )
    for argv in plan:
        gluster.change(argv)

    after = gluster.volume_info() if state != "absent" else None
    result["volume"] = volume_facts(after)
    # A client that mounts right after `volume start` or `add-brick` can find bricks not yet up and
    # give up: wait (bounded) until glusterd reports every brick online.
    if after and after["status"] == "started" and any(argv[3] in ("start", "add-brick") for argv in plan):
        offline = wait_for_bricks(gluster, after, params["peer_timeout"], params["peer_poll_interval"])
        if offline:
            module.fail_json(
                msg=f"volume {name}: after {params['peer_timeout']} s these bricks are still not online: {', '.join(offline)}. "
                "Check the brick processes and logs on those hosts (gluster volume status, /var/log/glusterfs/bricks/)",
                **result,
            )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
