# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cluster users' shared rule: which names and IDs a cluster user may never take, on any node.

Pure: the roles read each node's accounts with ``getent passwd`` and ``getent group`` before any change and pass
the text; slurm_cluster_problems, slurm_worker_problems and llm_gateway_problems turn the reasons into messages
that name the host, the variable and the fix; cluster_users_removed finds the accounts an earlier run made for
users no longer listed.

Why: ``ansible.builtin.user`` given a system account's name rewrites that account (issue 54: a cluster user
``munge`` moved the MUNGE daemon's account to UID 2050, its home to the shared volume, its shell to bash, and
munged failed at its next start on every node). A name is refused when the node has it as a system account or
group (ID below the minimum), when a role of this collection creates or runs a daemon under it (checked also on
a node that does not have it yet: the package that makes it may come later in the same run), and any UID or GID
below the minimum is refused.
"""

from __future__ import annotations

# Debian's first UID and GID for ordinary users (/etc/login.defs UID_MIN, GID_MIN; adduser.conf FIRST_UID).
MIN_UID = 1000

# The GECOS comment of every account the collection made for a cluster user: a later run finds those of users no
# longer listed by it (getent passwd's fifth field), and locks or removes them. Its full-name part (before the
# first comma), which Debian's chfn does not let users change (login.defs CHFN_RESTRICT rwh).
MANAGED_COMMENT = "hpclab cluster user"

# Accounts and groups that the collection's roles create, or run a daemon or own files under, with who needs them.
SERVICE_ACCOUNTS = {
    "root": "the superuser's",
    "nobody": "the unprivileged user's of NFS and daemons",
    "nogroup": "nobody's group",
    "munge": "MUNGE's daemon's (munge role)",
    "slurm": "Slurm's daemons' (slurm_master, slurm_worker)",
    "mysql": "MariaDB's, Slurm accounting's database (slurm_master)",
    "prometheus": "Prometheus', Alertmanager's and node_exporter's (monitoring)",
    "nginx": "the LLM gateway's web server's (llm_gateway)",
    "www-data": "nginx's workers' (llm_gateway)",
    "llm": "the model servers' and web UI's service user (llm_serving_user's default)",
    "docker": "Docker's group (docker_macvlan), whose members are root on the host",
}
# System accounts that Debian's packages, those of the collection's roles among them, create when installed: a
# node that does not have one yet may get it later in the same run (the node's getent read has the others).
DEBIAN_SYSTEM_ACCOUNTS = frozenset({
    "_apt", "_rpc", "sshd", "statd", "messagebus", "gluster", "systemd-network", "systemd-journal",
    "systemd-timesync", "systemd-resolve", "polkitd", "tss", "uuidd", "tcpdump",
})


def parse_getent(text, database):
    """``getent passwd`` or ``getent group`` output as {name: entry}.

    DATABASE ``passwd``: entry {uid, gid, comment, home, shell}; ``group``: {gid, members}. Blank lines are
    skipped; a line of another shape raises ValueError naming it.
    """
    fields = {"passwd": 7, "group": 4}
    if database not in fields:
        raise ValueError(f"unknown account database {database!r} (passwd or group)")
    entries = {}
    for line in str(text or "").splitlines():
        if not line.strip():
            continue
        parts = line.split(":")
        if len(parts) != fields[database] or not parts[0] or not all(p.isdigit() for p in parts[2:3 if database == "group" else 4]):
            raise ValueError(f"not a line of getent {database}: {line!r}")
        if database == "passwd":
            entries[parts[0]] = {"uid": int(parts[2]), "gid": int(parts[3]), "comment": parts[4], "home": parts[5], "shell": parts[6]}
        else:
            entries[parts[0]] = {"gid": int(parts[2]), "members": [m for m in parts[3].split(",") if m]}
    return entries


def is_managed(entry):
    """Whether a passwd ENTRY (parse_getent's) is an account the collection made for a cluster user."""
    return entry.get("comment", "").split(",")[0] == MANAGED_COMMENT


def user_account_problems(users, min_uid=MIN_UID, passwd=None, group=None, reserved=None, check_ids=True):
    """Why well-formed USERS ([{name, uid, gid}]) must not be created or changed as cluster users: a list of phrases.

    MIN_UID: the first ID a cluster user may take; CHECK_IDS false judges the names only, by it. PASSWD, GROUP: the node's getent text (None: not read, only the
    names and IDs are judged). RESERVED: more names to refuse, {name: whose}, besides SERVICE_ACCOUNTS.
    """
    names = dict(SERVICE_ACCOUNTS, **(reserved or {}))
    accounts = parse_getent(passwd, "passwd") if passwd is not None else {}
    groups = parse_getent(group, "group") if group is not None else {}
    by_uid = {}
    for name, entry in accounts.items():
        by_uid.setdefault(entry["uid"], name)
    reasons = []
    for user in users:
        name = user["name"]
        uid, gid = int(str(user["uid"])), int(str(user["gid"]))
        account, own_group = accounts.get(name), groups.get(name)
        if account is not None and account["uid"] < min_uid:
            reasons.append(f"{name} is a system account of this node (UID {account['uid']}, below {min_uid})")
        elif own_group is not None and own_group["gid"] < min_uid:
            reasons.append(f"{name} is a system group of this node (GID {own_group['gid']}, below {min_uid})")
        elif name in names:
            reasons.append(f"{name} is {names[name]} account, which the collection uses")
        elif name in DEBIAN_SYSTEM_ACCOUNTS:
            reasons.append(f"{name} is a system account that Debian's packages create")
        for key, number in (("uid", uid), ("gid", gid)):
            if check_ids and number < min_uid:
                reasons.append(f"{name}'s {key} {number} is below {min_uid}, in the system accounts' range")
        holder = by_uid.get(uid)
        if uid >= min_uid and holder not in (None, name):
            reasons.append(f"{name}'s uid {uid} is the account {holder}'s on this node")
    return reasons


def removed_users(users, passwd, min_uid=MIN_UID):
    """The accounts in PASSWD (getent text) that the collection made for a cluster user not in USERS, sorted.

    Only accounts with the collection's comment and a UID of at least MIN_UID: a system account is never one.
    """
    listed = {u.get("name") for u in users or [] if isinstance(u, dict)}
    return sorted(name for name, entry in parse_getent(passwd, "passwd").items()
                  if is_managed(entry) and entry["uid"] >= min_uid and name not in listed)


def cluster_user_problems(host, variable, users, min_uid=MIN_UID, accounts=None, min_uid_variable="hpclab_users_min_uid",
                          reserved=None):
    """The messages of the shared rule for one node: [] or one message naming HOST, VARIABLE, the users and the fix.

    USERS: well-formed users (the caller's own rules judge the shape first). ACCOUNTS: {passwd, group}, the node's
    getent text, or None where it was not read (names and IDs only). MIN_UID None: no ID is judged against a minimum
    (the node's accounts are judged against Debian's, MIN_UID).
    """
    check_ids = min_uid is not None
    min_uid = MIN_UID if min_uid is None else min_uid
    if isinstance(min_uid, bool) or not str(min_uid).isdigit() or not 1 <= int(str(min_uid)) <= 60000:
        return [f"{host}: {min_uid_variable} {min_uid!r} is not a UID from 1 to 60000. Fix: leave it at Debian's 1000, "
                "the first UID of an ordinary user, or set the node's UID_MIN."]
    min_uid = int(str(min_uid))
    accounts = accounts or {}
    try:
        reasons = user_account_problems(users, min_uid, accounts.get("passwd"), accounts.get("group"), reserved, check_ids)
    except ValueError as error:
        return [f"{host}: the read of this node's accounts cannot be judged: {error}. Fix: run the role on a node whose "
                "getent passwd and getent group print the account databases."]
    if not reasons:
        return []
    return [
        f"{host}: {variable} (default hpclab_cluster_users): {'; '.join(reasons)}. Fix: take these "
        f"users out of {variable}, or give each a name of its own and a UID and GID from {min_uid} "
        f"({min_uid_variable}) up that no account of the node has: a cluster user never takes over a system account or "
        "one the collection's services run as."
    ]
