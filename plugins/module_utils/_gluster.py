# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure helpers for GlusterFS volumes: parse ``gluster ... --xml`` output, validate, plan argv lists.

Nothing here runs a command. The planner returns full argv lists (``["gluster", "--mode=script",
..., "--xml"]``); an empty plan means the volume is converged.

Facts come from GlusterFS 10.3 (``gluster/glusterfs@v10.3``: ``cli/src/cli-xml-output.c``,
``cli/src/cli-cmd-parser.c``, ``xlators/mgmt/glusterd``) and from the XML captured in
``tests/unit/fixtures/gluster``.

This module util is PRIVATE to the collection: it may change without notice.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

GLUSTER = ["gluster", "--mode=script"]
XML = "--xml"

# The CLI's ``volume info`` <status>: glusterd_volinfo_t status values.
STATUS_NAMES = {0: "created", 1: "started", 2: "stopped"}
# <transport>: 0 tcp, 1 rdma, 2 tcp,rdma (GF_TRANSPORT_*).
TRANSPORT_NAMES = {0: "tcp", 1: "rdma", 2: "tcp,rdma"}
# GD_FRIEND_STATE_BEFRIENDED, printed as "Peer in Cluster" (glusterd-sm.c).
PEER_IN_CLUSTER = 3
# glusterd-errno.h EG_NOVOL: "Volume does not exist" (see volume_info_missing.xml).
EG_NOVOL = 30806

# cli_validate_volname (cli-cmd-parser.c): these words are CLI keywords, not volume names.
RESERVED_VOLUME_NAMES = frozenset(
    {
        "volume",
        "type",
        "help",
        "subvolumes",
        "option",
        "end-volume",
        "all",
        "volume_not_in_ring",
        "description",
        "force",
        "snap-max-hard-limit",
        "snap-max-soft-limit",
        "auto-delete",
        "activate-on-create",
    }
)
VOLUME_NAME_MAX = 256  # GD_VOLUME_NAME_MAX (rpc/rpc-lib/src/protocol-common.h)
_VOLUME_NAME_RE = re.compile(r"^[A-Za-z0-9_-]+$")
# The CLI refuses these brick hosts: "Please provide a valid hostname/ip other than localhost,
# 127.0.0.1 or loopback address (0.0.0.0 to 0.255.255.255)" (cli_cmd_bricks_parse).
_LOOPBACK_RE = re.compile(r"^(localhost(\.localdomain)?|127(\.\d{1,3}){3}|0(\.\d{1,3}){3})$", re.IGNORECASE)

_TRUE_WORDS = frozenset({"on", "true", "yes", "enable", "1"})
_FALSE_WORDS = frozenset({"off", "false", "no", "disable", "0"})
_DEFAULT_SUFFIX = " (DEFAULT)"

SAFETY_FLAGS = ("allow_bricks_on_root_filesystem", "allow_replica_set_on_one_host")


class GlusterError(ValueError):
    """A request the module refuses before running anything: invalid input or an unsafe change."""


class GlusterCliError(Exception):
    """The gluster CLI reported failure in its XML (opRet != 0), or printed no XML at all."""

    def __init__(self, op_ret: int | None, op_errno: int | None, op_errstr: str):
        self.op_ret = op_ret
        self.op_errno = op_errno
        self.op_errstr = op_errstr
        super().__init__(f"opRet={op_ret} opErrno={op_errno} opErrstr={op_errstr!r}")


# glusterd refuses a command while another one holds the cluster-wide lock of the volume (another admin, a
# monitoring collector's `volume status`, a peer's transaction): the same command succeeds a moment later.
# The messages, as the CLI prints them in plain and in XML mode (opErrstr), e.g. "volume start: gv0: failed:
# Another transaction is in progress. Please try again after some time." and "Locking failed on node2.
# Please check log file for details."
BUSY_MESSAGES = ("Another transaction is in progress", "Locking failed on", "Unable to acquire lock")
# Right after a peer probe, the new peer is connected to the node that probed it before the other peers have
# handshaken with it: a volume command then fails staging on one of them, e.g. "Staging failed on gluster2. Error:
# Host gluster3 not connected" (opErrstr of `volume create`, seen in the glusterfs scenario on a loaded machine), and
# succeeds a moment later. A peer that stays down keeps failing it, and the last try's message is reported.
SETTLING = re.compile(r"Staging failed on \S+\. Error: Host \S+ not connected")


def peers_settling(*texts: str) -> bool:
    """True when a volume command failed staging on a peer that has not handshaken with another one yet."""
    return any(SETTLING.search(text or "") for text in texts)


def cli_busy(*texts: str) -> bool:
    """True when the gluster CLI's output says it lost a race for glusterd's lock, or staging met a peer that is not
    connected yet (retry later)."""
    return any(needle in (text or "") for text in texts for needle in BUSY_MESSAGES) or peers_settling(*texts)


# --------------------------------------------------------------------------------------------
# parse


def _text(element, tag: str, default: str = "") -> str:
    found = element.find(tag)
    if found is None or found.text is None:
        return default
    return found.text.strip()


def _int(element, tag: str, default: int | None = 0) -> int | None:
    value = _text(element, tag)
    try:
        return int(value)
    except ValueError:
        return default


def parse_xml(text: str):
    """Parse a ``gluster ... --xml`` output and return its ``<cliOutput>`` root.

    Raises ``GlusterCliError`` when ``<opRet>`` is not 0, whatever the exit status was: in XML mode
    several CLI callbacks exit 0 after writing a failure (``gf_cli_probe_cbk``, cli-rpc-ops.c).
    Output that is not XML (glusterd down: "Connection failed. Please check if gluster daemon is
    operational.", or a CLI built without libxml2) also raises, carrying the text.
    """
    stripped = (text or "").strip()
    if not stripped:
        raise GlusterCliError(None, None, "the gluster CLI printed nothing")
    try:
        root = ET.fromstring(stripped)
    except ET.ParseError:
        raise GlusterCliError(None, None, stripped[:500]) from None
    if root.tag != "cliOutput":
        raise GlusterCliError(None, None, f"unexpected XML root <{root.tag}>")
    op_ret = _int(root, "opRet", None)
    if op_ret != 0:
        errstr = _text(root, "opErrstr") or _text(root, "output") or "no error text"
        raise GlusterCliError(op_ret, _int(root, "opErrno", None), errstr)
    return root


def _brick(element) -> dict:
    # <brick uuid="..">host:/path<name>host:/path</name><hostUuid>..</hostUuid><isArbiter>0</isArbiter></brick>
    name = _text(element, "name") or (element.text or "").strip()
    host, _sep, path = name.rpartition(":")
    return {
        "name": name,
        "host": host,
        "path": path,
        "host_uuid": _text(element, "hostUuid") or element.get("uuid", ""),
        "is_arbiter": _text(element, "isArbiter") == "1",
    }


def _volume(element) -> dict:
    status = _int(element, "status", None)
    transport = _int(element, "transport", None)
    bricks = [_brick(b) for b in element.findall("bricks/brick")]
    options = {}
    for option in element.findall("options/option"):
        options[_text(option, "name")] = _text(option, "value")
    return {
        "name": _text(element, "name"),
        "id": _text(element, "id"),
        "status": STATUS_NAMES.get(status, _text(element, "statusStr").lower()),
        "type": _text(element, "typeStr"),
        "brick_count": _int(element, "brickCount"),
        "distribute": _int(element, "distCount"),
        "replica": _int(element, "replicaCount"),
        "arbiter": _int(element, "arbiterCount"),
        "disperse": _int(element, "disperseCount"),
        "redundancy": _int(element, "redundancyCount"),
        "transport": TRANSPORT_NAMES.get(transport, str(transport)),
        "bricks": [b["name"] for b in bricks],
        "brick_host_uuids": [b["host_uuid"] for b in bricks],
        "arbiter_bricks": [b["name"] for b in bricks if b["is_arbiter"]],
        "options": options,
    }


def parse_volume_info(text: str) -> dict:
    """``gluster volume info [NAME] --xml`` → ``{name: volume}``; ``{}`` when there are no volumes.

    Each volume has ``name, id, status`` (created/started/stopped), ``type`` (typeStr),
    ``brick_count, distribute, replica, arbiter, disperse, redundancy``, ``transport``
    (tcp/rdma/tcp,rdma), ``bricks`` (``host:/path`` in replica-set order), ``brick_host_uuids``
    (aligned with ``bricks``), ``arbiter_bricks`` and ``options`` (the reconfigured options only,
    full keys). A missing volume raises ``GlusterCliError`` with ``op_errno == EG_NOVOL``.
    """
    root = parse_xml(text)
    volumes = {}
    for element in root.findall("volInfo/volumes/volume"):
        volume = _volume(element)
        volumes[volume["name"]] = volume
    return volumes


def _peers(root) -> list:
    peers = []
    for element in root.findall("peerStatus/peer"):
        hostname = _text(element, "hostname")
        hostnames = [h.text.strip() for h in element.findall("hostnames/hostname") if h.text]
        if hostname and hostname not in hostnames:
            hostnames.insert(0, hostname)
        state = _int(element, "state", None)
        peers.append(
            {
                "uuid": _text(element, "uuid"),
                "hostname": hostname,
                "hostnames": hostnames,
                "connected": _text(element, "connected") == "1",
                "state": state,
                "state_str": _text(element, "stateStr") or None,
                "local": False,
            }
        )
    return peers


def parse_volume_status(text: str) -> list:
    """``gluster volume status NAME --xml`` → the bricks that glusterd reports, each
    ``{"brick": "host:path", "peer": uuid, "online": bool}``. Daemons (self-heal, NFS) are left out;
    bricks of a disconnected peer are absent from the output altogether."""
    root = parse_xml(text)
    bricks = []
    for node in root.iter("node"):
        path = _text(node, "path")
        if not path.startswith("/"):
            continue
        bricks.append({"brick": f"{_text(node, 'hostname')}:{path}", "peer": _text(node, "peerid"), "online": _text(node, "status") == "1"})
    return bricks


def offline_bricks(volume: dict, status: list) -> list:
    """Bricks of ``volume`` not reported online in ``status`` (matched by peer uuid and path, so a
    peer known under another name still matches)."""
    online = {(b["peer"], canonical_path(b["brick"].rpartition(":")[2])) for b in status if b["online"]}
    uuids = volume.get("brick_host_uuids") or [None] * len(volume["bricks"])
    return [
        brick
        for brick, uuid in zip(volume["bricks"], uuids)
        if (uuid, canonical_path(brick.rpartition(":")[2])) not in online
    ]


def parse_peer_status(text: str) -> list:
    """``gluster peer status --xml`` → list of peers (this node is never listed).

    Each peer: ``uuid, hostname, hostnames`` (hostname first, then the other names), ``connected``
    (bool), ``state`` (int, 3 = Peer in Cluster), ``state_str``, ``local`` (False). A single-node
    pool gives ``[]`` (opRet 0, opErrstr "peer status: No peers present" or empty).
    """
    return _peers(parse_xml(text))


def parse_pool_list(text: str) -> list:
    """``gluster pool list --xml`` → the peers of ``parse_peer_status`` plus this node.

    pool list adds this node as ``hostname=localhost``, ``connected=1``, with no state elements; it
    is marked ``local: True`` and its ``state`` is None.
    """
    peers = _peers(parse_xml(text))
    for peer in peers:
        if peer["hostname"] == "localhost" and peer["state"] is None:
            peer["local"] = True
    return peers


def parse_volume_get(text: str) -> dict:
    """``gluster volume get NAME KEY|all --xml`` → ``{full key: effective value}``.

    The " (DEFAULT)" suffix of unset options is stripped. GlusterFS 10.3 lists some keys twice
    (``performance.cache-size`` belongs to io-cache and quick-read, defaults 32MB and 128MB); when
    the entries disagree the value is None ("not one value"), so a desired value is always set.
    """
    root = parse_xml(text)
    values: dict = {}
    for opt in root.findall("volGetopts/Opt"):
        key = _text(opt, "Option")
        # an empty default prints as " (DEFAULT)", so strip the suffix before any whitespace
        value = opt.findtext("Value") or ""
        if value.endswith(_DEFAULT_SUFFIX):
            value = value[: -len(_DEFAULT_SUFFIX)]
        value = value.strip()
        if key in values and values[key] != value:
            values[key] = None
        else:
            values.setdefault(key, value)
    return values


# --------------------------------------------------------------------------------------------
# validate


def validate_volume_name(name: str) -> str:
    """Apply the CLI's volume-name rules (cli_validate_volname); return the name or raise GlusterError."""
    if not isinstance(name, str) or not name:
        raise GlusterError("volume name must be a non-empty string")
    if name.startswith("-"):
        raise GlusterError(f"volume name {name!r} must not start with '-'")
    if name in RESERVED_VOLUME_NAMES:
        raise GlusterError(f"volume name {name!r} is a reserved word of the gluster CLI")
    if len(name) > VOLUME_NAME_MAX:
        raise GlusterError(f"volume name is {len(name)} characters long; GlusterFS allows at most {VOLUME_NAME_MAX}")
    if not _VOLUME_NAME_RE.match(name):
        raise GlusterError(f"volume name {name!r} may contain only letters, digits, '-' and '_'")
    return name


def canonical_path(path: str) -> str:
    """Collapse duplicate slashes and drop a trailing one, as gf_canonicalize_path does for bricks."""
    collapsed = re.sub(r"/+", "/", path)
    return collapsed.rstrip("/") or "/"


def parse_brick(brick: str) -> tuple:
    """``host:/abs/path`` → ``(host, canonical path)``; raise GlusterError naming the bad brick.

    Split at the LAST colon, like cli_cmd_bricks_parse (strrchr), so paths cannot contain ':'.
    """
    if not isinstance(brick, str) or ":" not in brick:
        raise GlusterError(f"brick {brick!r} is not of the form host:/absolute/path")
    host, _sep, path = brick.rpartition(":")
    host = host.strip()
    if not host:
        raise GlusterError(f"brick {brick!r} has no host")
    if _LOOPBACK_RE.match(host):
        raise GlusterError(f"brick {brick!r}: GlusterFS refuses localhost and loopback addresses; use the node's name in the pool")
    if not path.startswith("/"):
        raise GlusterError(f"brick {brick!r}: the path must be absolute")
    path = canonical_path(path)
    if path == "/":
        raise GlusterError(f"brick {brick!r}: the root directory cannot be a brick")
    return host, path


def canonical_brick(brick: str) -> str:
    host, path = parse_brick(brick)
    return f"{host}:{path}"


def normalise_value(value) -> str:
    """An option value as the CLI gets it: Python booleans (YAML ``on``/``off``) become on/off."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if value is None:
        return ""
    return str(value).strip()


def values_equal(desired, current) -> bool:
    """Compare option values; boolean spellings (on/off/true/false/yes/no/enable/disable/1/0) are one value."""
    if current is None:
        return False
    a = normalise_value(desired)
    b = normalise_value(current)
    if a == b:
        return True
    la, lb = a.lower(), b.lower()
    for words in (_TRUE_WORDS, _FALSE_WORDS):
        if la in words and lb in words:
            return True
    return False


def resolve_option_key(key: str, known_keys) -> str:
    """Return the full option key for ``key``.

    A key with a dot is taken as a full key (custom ``user.*`` keys are not listed by ``volume get``).
    A key without a dot must match exactly one listed key after its first dot, the rule glusterd
    itself applies (``option_complete`` in glusterd-volgen.c): ``write-behind`` →
    ``performance.write-behind`` (``performance.nfs.write-behind`` does not match).
    """
    if not isinstance(key, str) or not key.strip():
        raise GlusterError(f"option key {key!r} is empty")
    key = key.strip()
    known = list(dict.fromkeys(known_keys))
    if "." in key or key in known:
        return key
    matches = [k for k in known if k.partition(".")[2] == key]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise GlusterError(f"option {key!r} is not a volume option of this GlusterFS (see 'gluster volume get VOLUME all')")
    raise GlusterError(f"option {key!r} is ambiguous: it matches {', '.join(matches)}; use the full key")


def resolve_options(options: dict | None, effective: dict | None) -> dict:
    """Map the requested options to ``{full key: value string}``.

    Without ``effective`` (the volume does not exist yet) keys are kept as given; glusterd
    completes a unique short key itself when ``volume set`` runs (glusterd-op-sm.c ``key_fixed``).
    """
    resolved: dict = {}
    for key, value in (options or {}).items():
        full = resolve_option_key(key, effective) if effective is not None else str(key).strip()
        if full in resolved and not values_equal(value, resolved[full]):
            raise GlusterError(f"options {key!r} and another key both name {full} with different values")
        resolved[full] = normalise_value(value)
    return resolved


def set_size(replica: int | None, disperse: int | None) -> int:
    """Bricks per replica/disperse set: consecutive groups of this many bricks form one set."""
    if disperse:
        return disperse
    if replica and replica > 1:
        return replica
    return 1


def normalise_desired(desired: dict) -> dict:
    """Validate the requested volume and fill defaults. Raises GlusterError.

    ``replica 2 arbiter 1`` is stored by GlusterFS 10 as ``replica 3 arbiter 1`` (3 bricks per set,
    the third is the arbiter; gluster/glusterfs#4158), so it is normalised to that here.
    """
    d = dict(desired)
    validate_volume_name(d["name"])
    d.setdefault("state", "started")
    for key in ("replica", "arbiter", "disperse", "redundancy"):
        d.setdefault(key, None)
    d.setdefault("transport", "tcp")
    d.setdefault("rebalance", True)
    d.setdefault("confirm_delete", False)
    for flag in SAFETY_FLAGS:
        d.setdefault(flag, False)
    if d["state"] not in ("present", "started", "stopped", "absent"):
        raise GlusterError(f"state {d['state']!r} is not one of present, started, stopped, absent")
    if d["transport"] not in ("tcp", "rdma", "tcp,rdma"):
        raise GlusterError(f"transport {d['transport']!r} is not one of tcp, rdma, tcp,rdma")
    replica, arbiter, disperse, redundancy = d["replica"], d["arbiter"], d["disperse"], d["redundancy"]
    if replica is not None and replica < 2:
        raise GlusterError(f"replica {replica}: a replica count must be at least 2 (omit replica for a plain distribute volume)")
    if arbiter not in (None, 0, 1):
        raise GlusterError(f"arbiter {arbiter}: GlusterFS supports only arbiter 1")
    if arbiter == 1:
        if replica not in (2, 3):
            raise GlusterError("arbiter 1 needs replica 3 (or replica 2, which GlusterFS stores as replica 3 arbiter 1)")
        d["replica"] = replica = 3
    if disperse is not None and replica is not None:
        raise GlusterError("replica and disperse cannot be combined: GlusterFS has no replicated-dispersed volumes")
    if redundancy is not None and disperse is None:
        raise GlusterError("redundancy needs disperse")
    if disperse is not None:
        if disperse < 3:
            raise GlusterError(f"disperse {disperse}: a disperse set needs at least 3 bricks")
        if redundancy is not None and not (1 <= redundancy and 2 * redundancy < disperse):
            raise GlusterError(f"redundancy {redundancy} must be at least 1 and less than half of disperse {disperse}")
    if d.get("bricks") is not None:
        bricks = [canonical_brick(b) for b in d["bricks"]]
        seen = set()
        for brick in bricks:
            if brick in seen:
                raise GlusterError(f"brick {brick} is listed twice")
            seen.add(brick)
        d["bricks"] = bricks
    return d


# --------------------------------------------------------------------------------------------
# peers


def peer_names(peer: dict) -> set:
    return {n.lower() for n in [peer["hostname"], *peer["hostnames"]] if n}


def add_brick_names(peers: list, volume: dict | None) -> list:
    """Peers, each also answering to the host names the volume's bricks use for it.

    glusterd may list a peer under another name than the one its bricks were created with (seen in
    the lab: a peer probed as ``gluster2`` later listed only as ``gluster2.NETWORK`` after a reverse
    lookup on another node). The brick's peer uuid says who it is.
    """
    if not volume:
        return peers
    aliases: dict = {}
    for brick, uuid in zip(volume["bricks"], volume.get("brick_host_uuids") or []):
        if uuid:
            aliases.setdefault(uuid, []).append(brick.rpartition(":")[0])
    result = []
    for peer in peers:
        extra = [n for n in dict.fromkeys(aliases.get(peer["uuid"], [])) if n.lower() not in peer_names(peer)]
        result.append(dict(peer, hostnames=[*peer["hostnames"], *extra]) if extra else peer)
    return result


def peer_ready(peer: dict) -> bool:
    """In the pool and usable: state 3 "Peer in Cluster" and connected (the local node always is)."""
    return peer["local"] or (peer["connected"] and peer["state"] == PEER_IN_CLUSTER)


def find_peer(peers: list, host: str) -> dict | None:
    host = host.lower()
    for peer in peers:
        if not peer["local"] and host in peer_names(peer):
            return peer
    return None


def remote_hosts(bricks, local_names) -> list:
    """Brick hosts that are not this node, in first-seen order."""
    local = {n.lower() for n in local_names}
    hosts = []
    for brick in bricks or []:
        host = brick.rpartition(":")[0]
        if host.lower() not in local and host not in hosts:
            hosts.append(host)
    return hosts


def missing_peers(peers: list, hosts) -> list:
    """Hosts that no pool member answers to (by hostname or any other name): they need a probe."""
    return [h for h in hosts if find_peer(peers, h) is None]


def unready_peers(peers: list, hosts) -> list:
    """Hosts that are missing from the pool, disconnected, or not yet "Peer in Cluster"."""
    not_ready = []
    for host in hosts:
        peer = find_peer(peers, host)
        if peer is None or not peer_ready(peer):
            not_ready.append(host)
    return not_ready


def host_ids(peers: list, local_names=()) -> dict:
    """``{lower-case name: peer uuid}`` for every name of every pool member (this node included)."""
    ids = {}
    for peer in peers:
        if peer["local"]:
            for name in local_names:
                ids[name.lower()] = peer["uuid"]
        else:
            for name in peer_names(peer):
                ids[name] = peer["uuid"]
    return ids


def peer_facts(peers: list) -> list:
    return [
        {
            "hostname": p["hostname"],
            "hostnames": p["hostnames"],
            "uuid": p["uuid"],
            "connected": p["connected"],
            "state": p["state_str"],
        }
        for p in peers
        if not p["local"]
    ]


def probe_argv(host: str) -> list:
    return [*GLUSTER, "peer", "probe", host, XML]


# --------------------------------------------------------------------------------------------
# plan


def _volume_argv(*words: str) -> list:
    return [*GLUSTER, "volume", *words, XML]


def _identity(host: str, path: str, uuid: str | None, ids: dict) -> tuple:
    """Who a brick is: (peer uuid, path) when the pool knows the host or the brick's peer, else (host, path)."""
    known = ids.get(host.lower())
    if known is None and uuid and uuid in ids.values():
        known = uuid
    return (known or host.lower(), path)


def _current_identities(current: dict, ids: dict) -> list:
    uuids = current.get("brick_host_uuids") or [None] * len(current["bricks"])
    result = []
    for brick, uuid in zip(current["bricks"], uuids):
        host, _sep, path = brick.rpartition(":")
        result.append(_identity(host, canonical_path(path), uuid, ids))
    return result


def _desired_identities(bricks: list, ids: dict) -> list:
    result = []
    for brick in bricks:
        host, path = parse_brick(brick)
        result.append(_identity(host, path, None, ids))
    return result


def _check_sets(name: str, bricks: list, identities: list, size: int, allow_same_host: bool) -> None:
    if len(bricks) % size:
        raise GlusterError(
            f"volume {name}: {len(bricks)} bricks is not a multiple of the set size {size} "
            "(replica or disperse count); consecutive groups of that many bricks form the sets"
        )
    if size < 2 or allow_same_host:
        return
    for start in range(0, len(bricks), size):
        group = identities[start : start + size]
        hosts = [ident[0] for ident in group]
        if len(set(hosts)) != len(hosts):
            members = ", ".join(bricks[start : start + size])
            raise GlusterError(
                f"volume {name}: set {start // size + 1} ({members}) has two bricks on one host, so one "
                "host failure loses the set; reorder the bricks (consecutive groups form the sets) or set "
                "allow_replica_set_on_one_host=true"
            )


def _nested(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def brick_path_relation(path: str, other: str) -> str | None:
    """How brick directory PATH lies to brick directory OTHER on the same host: 'the same directory as', 'inside',
    'above', or None where they are apart. Shared with the filter glusterfs_problems (its rule 23)."""
    if path == other:
        return "the same directory as"
    if _nested(path, other):
        return "inside"
    if _nested(other, path):
        return "above"
    return None


def _refuse_shared_bricks(name: str, bricks: list, others: dict | None, ids: dict) -> None:
    """Refuse a new brick that is the same directory as, inside or above a brick of another volume on its peer.

    ``others`` is ``parse_volume_info`` of every volume (``gluster volume info --xml``), None when not read. glusterd
    refuses a brick whose directory or a parent carries a volume-id ("... is already part of a volume", without
    'force' only) but never one above another volume's brick; either way two volumes would share files.
    """
    if not others or not bricks:
        return
    wanted = list(zip(bricks, _desired_identities(bricks, ids)))
    for other in others.values():
        if other["name"] == name:
            continue
        for existing, (peer, path) in zip(other["bricks"], _current_identities(other, ids)):
            for brick, (new_peer, new_path) in wanted:
                if new_peer != peer:
                    continue
                relation = brick_path_relation(new_path, path)
                if relation is None:
                    continue
                raise GlusterError(
                    f"volume {name}: brick {brick} is {relation} brick {existing} of volume {other['name']}, so the two "
                    "volumes would share files (GlusterFS's 'force', added with allow_bricks_on_root_filesystem or "
                    "allow_replica_set_on_one_host, even skips its own 'already part of a volume' check); give the "
                    f"brick a directory of its own, outside every brick of {other['name']}"
                )


def _force(desired: dict) -> list:
    # GlusterFS's single 'force' word also skips the "already part of a volume" check; it is only
    # ever added because the user allowed one of the two named risks.
    return ["force"] if any(desired.get(flag) for flag in SAFETY_FLAGS) else []


def _type_words(replica: int | None, arbiter: int | None, disperse: int | None, redundancy: int | None) -> list:
    words = []
    if replica and replica > 1:
        words += ["replica", str(replica)]
        if arbiter:
            words += ["arbiter", "1"]
    if disperse:
        words += ["disperse", str(disperse)]
        if redundancy is not None:
            words += ["redundancy", str(redundancy)]
    return words


def _option_steps(name: str, wanted: dict, current_values: dict) -> list:
    return [_volume_argv("set", name, key, value) for key, value in wanted.items() if not values_equal(value, current_values.get(key))]


def _refuse_type_change(current: dict, d: dict) -> None:
    name = d["name"]
    if d["disperse"] is not None and current["disperse"] != d["disperse"]:
        raise GlusterError(
            f"volume {name} has disperse {current['disperse']}, not {d['disperse']}; changing the volume "
            "type is not supported: create a new volume and copy the data"
        )
    if d["redundancy"] is not None and current["redundancy"] != d["redundancy"]:
        raise GlusterError(f"volume {name} has redundancy {current['redundancy']}, not {d['redundancy']}; it cannot be changed")
    if d["replica"] is not None and current["replica"] != d["replica"]:
        if current["disperse"]:
            raise GlusterError(f"volume {name} is a disperse volume; it cannot become a replicated one")
        if d["replica"] < current["replica"]:
            raise GlusterError(
                f"volume {name} has replica {current['replica']}; this module never lowers the replica count. "
                f"By hand, remove one brick from each set: 'gluster volume remove-brick {name} replica "
                f"{d['replica']} BRICK... force' (no data migration is needed when reducing replicas)"
            )
        raise GlusterError(
            f"volume {name} has replica {current['replica']}; this module does not raise the replica count. "
            f"By hand: 'gluster volume add-brick {name} replica {d['replica']} BRICK...' with one new brick "
            "per set, then 'gluster volume heal " + name + " full'"
        )
    if d["arbiter"] is not None and current["arbiter"] != d["arbiter"]:
        raise GlusterError(
            f"volume {name} has arbiter {current['arbiter']}, not {d['arbiter']}; converting to or from an "
            "arbiter volume is not supported by this module"
        )
    if current["transport"] != d["transport"]:
        raise GlusterError(
            f"volume {name} uses transport {current['transport']}, not {d['transport']}; changing the "
            "transport of an existing volume is not supported"
        )


def _growth(current: dict, d: dict, ids: dict) -> list:
    """New bricks (in whole sets) appended after the existing ones, or a refusal."""
    name = d["name"]
    desired = d["bricks"]
    have = _current_identities(current, ids)
    want = _desired_identities(desired, ids)
    missing = [brick for brick, ident in zip(current["bricks"], have) if ident not in want]
    if missing:
        raise GlusterError(
            f"volume {name} has bricks that are not in 'bricks': {', '.join(missing)}; this module never "
            f"removes or replaces bricks. By hand: 'gluster volume remove-brick {name} BRICK... start', "
            f"watch 'gluster volume remove-brick {name} BRICK... status' until completed, then "
            f"'gluster volume remove-brick {name} BRICK... commit' (or 'gluster volume replace-brick "
            f"{name} OLD NEW commit force' to replace one)"
        )
    if want[: len(have)] != have:
        raise GlusterError(
            f"volume {name}: the existing bricks must come first in 'bricks', in the volume's order "
            f"({', '.join(current['bricks'])}), because the order defines the replica sets"
        )
    new = desired[len(have) :]
    size = set_size(current["replica"], current["disperse"])
    _check_sets(name, new, want[len(have) :], size, d["allow_replica_set_on_one_host"])
    return new


def plan_volume(current: dict | None, desired: dict, effective: dict | None = None, ids: dict | None = None,
                others: dict | None = None) -> list:
    """Plan the gluster commands that take ``current`` to ``desired``; ``[]`` means converged.

    ``current`` is one volume of ``parse_volume_info`` or None. ``desired`` holds the module's
    parameters (``name, state, bricks, replica, arbiter, disperse, redundancy, transport, options,
    allow_bricks_on_root_filesystem, allow_replica_set_on_one_host, confirm_delete, rebalance``).
    ``effective`` is ``parse_volume_get(... all)`` of the existing volume (falls back to its
    reconfigured options). ``ids`` maps host names to peer uuids (``host_ids``) so that a brick named
    by another name of the same peer is recognised. ``others`` is ``parse_volume_info`` of all volumes: when given, a
    brick to create or add that is the same directory as, inside or above a brick of another volume on the same peer
    is refused. Raises GlusterError to refuse, before anything runs.
    """
    d = normalise_desired(desired)
    ids = ids or {}
    name, state = d["name"], d["state"]

    if state == "absent":
        if current is None:
            return []
        if not d["confirm_delete"]:
            raise GlusterError(
                f"volume {name} exists and state=absent would delete its definition; set confirm_delete=true "
                "to do so (brick directories and their data are left on the servers)"
            )
        steps = []
        if current["status"] == "started":
            steps.append(_volume_argv("stop", name))
        steps.append(_volume_argv("delete", name))
        return steps

    if current is None:
        if not d.get("bricks"):
            raise GlusterError(f"volume {name} does not exist; 'bricks' is needed to create it")
        size = set_size(d["replica"], d["disperse"])
        _check_sets(name, d["bricks"], _desired_identities(d["bricks"], ids), size, d["allow_replica_set_on_one_host"])
        _refuse_shared_bricks(name, d["bricks"], others, ids)
        steps = [
            _volume_argv(
                "create",
                name,
                *_type_words(d["replica"], d["arbiter"], d["disperse"], d["redundancy"]),
                "transport",
                d["transport"],
                *d["bricks"],
                *_force(d),
            )
        ]
        steps += _option_steps(name, resolve_options(d.get("options"), None), {})
        if state == "started":
            steps.append(_volume_argv("start", name))
        return steps

    _refuse_type_change(current, d)
    values = effective if effective is not None else current["options"]
    wanted = resolve_options(d.get("options"), values if effective is not None else None)
    steps = _option_steps(name, wanted, values)
    new = _growth(current, d, ids) if d.get("bricks") is not None else []
    _refuse_shared_bricks(name, new, others, ids)
    will_run = state == "started" or (state == "present" and current["status"] == "started")
    if new:
        steps.append(
            _volume_argv(
                "add-brick",
                name,
                *_type_words(current["replica"], current["arbiter"], None, None),
                *new,
                *_force(d),
            )
        )
    if state == "started" and current["status"] != "started":
        steps.append(_volume_argv("start", name))
    if new and d["rebalance"] and will_run:
        steps.append(_volume_argv("rebalance", name, "start"))
    if state == "stopped" and current["status"] == "started":
        steps.append(_volume_argv("stop", name))
    return steps


# --------------------------------------------------------------------------------------------
# report


def volume_facts(volume: dict | None) -> dict:
    """What the module returns as ``volume``: ``{}`` when there is none."""
    if not volume:
        return {}
    keys = ("name", "id", "type", "status", "replica", "arbiter", "disperse", "redundancy", "distribute", "transport", "bricks", "options")
    return {key: volume[key] for key in keys}


def diff_view(volume: dict | None, option_keys, effective: dict | None = None) -> dict:
    """The managed subset of a volume for diff mode: status, bricks, type counts, managed options."""
    if not volume:
        return {}
    values = effective if effective is not None else volume["options"]
    return {
        "status": volume["status"],
        "bricks": list(volume["bricks"]),
        "replica": volume["replica"],
        "arbiter": volume["arbiter"],
        "disperse": volume["disperse"],
        "redundancy": volume["redundancy"],
        "transport": volume["transport"],
        "options": {key: values.get(key) for key in option_keys},
    }


def predicted_view(before: dict, desired: dict, wanted_options: dict) -> dict:
    """The diff-mode ``after`` of a plan that ``plan_volume`` accepted and that succeeds."""
    d = normalise_desired(desired)
    if d["state"] == "absent":
        return {}
    if not before:
        disperse = d["disperse"] or 0
        return {
            "status": "started" if d["state"] == "started" else "created",
            "bricks": list(d["bricks"] or []),
            "replica": d["replica"] or 1,
            "arbiter": d["arbiter"] or 0,
            "disperse": disperse,
            # without redundancy GlusterFS picks one at create time
            "redundancy": d["redundancy"] if disperse else 0,
            "transport": d["transport"],
            "options": dict(wanted_options),
        }
    after = dict(before)
    after["options"] = dict(before["options"])
    for key, value in wanted_options.items():
        if not values_equal(value, after["options"].get(key)):
            after["options"][key] = value
    if d.get("bricks") is not None:
        # the existing bricks keep the names the volume stores; plan_volume accepted the rest as new sets
        after["bricks"] = list(before["bricks"]) + list(d["bricks"][len(before["bricks"]) :])
    if d["state"] == "started":
        after["status"] = "started"
    elif d["state"] == "stopped" and before["status"] == "started":
        after["status"] = "stopped"
    return after
