# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: backup_restore_problems
short_description: What keeps the backup role's restore entry point from restoring, before anything is written
version_added: 0.4.0
description:
  - The backup role's C(restore) entry point (C(playbooks/restore.yml)) writes a user's home or the accounting
    database back from a restic snapshot. It checks what it was asked with this filter before it asks the
    repository, and again with what C(restic snapshots --json) and C(restic ls --json) answered before it writes.
  - Returns a list of problems, each naming the host, the variable and the fix; an empty list means the restore may
    go on. The password is never part of a message.
  - "What was asked: (1) C(backup_restore_home) or C(backup_restore_accounting_db), at least one; (2) C(backup_repository)
    and C(backup_password) are set; (3) C(backup_restore_snapshot) is C(latest) or a snapshot ID (8 to 64 hex digits,
    as C(restic snapshots) shows it); (4) C(backup_restore_home) is a user name (as useradd takes it) and
    C(backup_home_root) a canonical absolute path; (5) C(backup_restore_target) is empty (in place) or a canonical
    absolute path; (6) the accounting database is asked only where C(backup_mariadb_databases) names one;
    (10) a home is restored on one host only (O(play_hosts)): several backup hosts that save the same shared home
    would each write it back from their own snapshot at once; (11) for a home in place,
    C(backup_restore_staging_dir) lies below C(/var/lib/hpclab/backup), the directory the role owns, holds no path
    of C(backup_paths) or C(backup_extra_paths), and neither holds nor lies in C(backup_home_root) or
    C(backup_dump_dir); (13) C(backup_restore_replace_newer) is asked only with a home restored in place (it replaces
    files in place changed since the snapshot; nothing else would use it)."
  - "What the repository holds (when O(snapshots) is given): (7) a snapshot matches C(backup_restore_snapshot);
    (8) it holds the home C(backup_home_root/USER) as a directory; (9) it holds the dump C(backup_dump_dir/DB.sql)
    of every database of C(backup_mariadb_databases); (12) a home to restore in place is not owned by root in the
    snapshot (the copy back runs as the home's owner, so that it cannot write outside what the user may write)."
  - "What the host holds (when O(target_read) is given, for a home restored below C(backup_restore_target)):
    (14) every directory on the way from C(/) to the target that exists is a directory, not a symbolic link, owned by
    root and writable by root only (no group or other write bit, sticky or not): restic writes the snapshot's files
    below the target as root, so whoever may change a directory on the way could point that write at any file of the
    system (C(/tmp/x), a user's home). A missing part is made by restic, as root, inside the last one that exists.
    (15) The target itself, where it exists, gives group and others no access at all (mode 0700 or less): the copy
    below it belongs to the user, who could otherwise reach it and swap one of its directories for a symbolic link
    while restic writes (the role makes a missing target 0700)."
options:
  _input:
    description: The role's variables by name (C(backup_restore_*), C(backup_home_root), C(backup_repository), C(backup_password),
      C(backup_mariadb_databases), C(backup_dump_dir)).
    type: dict
    required: true
  host:
    description: The host's inventory name, for the messages.
    type: str
    required: true
  snapshots:
    description: The snapshots that match C(backup_restore_snapshot), as C(restic snapshots --json) lists them; V(None) before the repository was asked.
    type: list
    elements: dict
  listed:
    description: The output of C(restic ls --json SNAPSHOT PATH) (JSON lines) for each path to restore, by path.
    type: dict
    default: {}
  play_hosts:
    description: Every host the restore runs on (C(ansible_play_hosts_all)); V(None) when not known.
    type: list
    elements: str
  target_read:
    description:
      - "The output of C(stat --printf '%F\\t%u\\t%a\\t%n\\n' -- PATHS) for C(/) and each directory down to
        C(backup_restore_target) (a missing path has no line); V(None) when not read."
    type: str
"""

EXAMPLES = r"""
# {"backup_restore_home": "alice", "backup_home_root": "/gfsv/home", ...}
#   | hpclab.cluster.backup_restore_problems(host="node1", snapshots=[{"id": "4f3c...", "time": "..."}],
#                                            listed={"/gfsv/home/alice": '{"struct_type":"snapshot",...}'})
# => ["node1: backup_restore_home 'alice': snapshot 4f3c2a1b (2024-05-02 02:31:07) holds no /gfsv/home/alice. ..."]
- name: Check what is asked
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
    quiet: true
  vars:
    __problems: "{{ {'backup_restore_home': 'alice', 'backup_home_root': '/gfsv/home'} | hpclab.cluster.backup_restore_problems(host=inventory_hostname) }}"
"""

RETURN = r"""
_value:
  description: One message per problem; empty when there is none.
  type: list
  elements: str
"""

import json
import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

# The collection's helpers are imported in the functions that use them: ansible-core imports every filter
# file in each worker process, and compiles these modules from source each time (test_filter_loading.py).

SNAPSHOT_ID = re.compile(r"^[0-9a-f]{8,64}\Z")


def listed_nodes(text):
    """{path: type} of the nodes in the JSON lines of `restic ls --json` (the snapshot line is left out)."""
    return {path: item.get("type") for path, item in _listed_items(text).items()}


def _listed_items(text):
    """{path: node} of the nodes in the JSON lines of `restic ls --json`."""
    nodes = {}
    for line in str(text or "").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise AnsibleFilterError(f"backup_restore_problems: a line of restic ls --json is not JSON: {line[:80]!r}") from exc
        if isinstance(item, Mapping) and item.get("struct_type") == "node" and "path" in item:
            nodes[item["path"]] = item
    return nodes


def home_path(settings):
    """backup_home_root/backup_restore_home."""
    return f"{str(settings.get('backup_home_root', '')).rstrip('/')}/{settings.get('backup_restore_home')}"


def dump_path(settings, database):
    """Where the backup script dumped DATABASE (backup_dump_dir/DATABASE.sql)."""
    return f"{str(settings.get('backup_dump_dir', '')).rstrip('/')}/{database}.sql"


def _target_way_problem(target, text):
    """Why the directories on the way to TARGET (stat's lines TYPE<TAB>UID<TAB>MODE<TAB>PATH) let someone else than
    root steer restic's writes below it, or None."""
    read = {}
    for line in str(text or "").splitlines():
        parts = line.split("\t", 3)
        if len(parts) != 4 or not parts[1].isdigit() or not re.fullmatch(r"[0-7]{1,4}", parts[2]):
            raise AnsibleFilterError(f"backup_restore_problems: a line of stat's output is not 'TYPE<TAB>UID<TAB>MODE<TAB>PATH': {line[:80]!r}")
        read[parts[3]] = (parts[0], int(parts[1]), int(parts[2], 8))
    if "/" not in read:
        return (f"backup_restore_target {target}: the directories on the way to it could not be read (stat printed nothing "
                "for /). Fix: check that stat (coreutils) runs on the host, and run the restore again.")
    # The read paths that TARGET lies in (or is), outermost first. A missing one has no line, nor has anything below it.
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import is_within
    for path in sorted((p for p in read if is_within(target, p)), key=lambda p: len(p.rstrip("/").split("/"))):
        kind, uid, mode = read[path]
        what = (f"a {kind}" if kind != "directory" else f"owned by uid {uid}" if uid != 0
                else f"writable by others than root (mode {mode:04o})" if mode & 0o022 else None)
        if what:
            return (f"backup_restore_target {target}: {path} on the way to it is {what}, and restic writes the snapshot's "
                    f"files below the target as root: whoever may change {path} could point those writes at any file of the "
                    "system. Fix: give a directory that only root may write, all the way from /, such as /root/restored "
                    "(no symbolic link on the way).")
    if target in read and read[target][2] & 0o077:
        mode = read[target][2]
        return (f"backup_restore_target {target} has mode {mode:04o}: the user whose home is restored below it owns the copy, "
                "and could reach it while restic writes as root and swap one of its directories for a symbolic link. "
                f"Fix: chmod 0700 {target}, or give a path that does not exist yet (the role makes it 0700), such as "
                "/root/restored.")
    return None


def backup_restore_problems(settings, host, snapshots=None, listed=None, play_hosts=None, target_read=None):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.hpclab.cluster.plugins.filter.backup_problems import listed_paths, placement_problem
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import USER_NAME, USER_NAME_MAX, path_problem
    if not isinstance(settings, Mapping):
        raise AnsibleFilterError(f"backup_restore_problems: input must be a dict of the role's variables, got {type(settings).__name__}")
    problems = []

    def problem(text):
        problems.append(f"{host}: {text}")

    user = settings.get("backup_restore_home") or ""
    database = bool(settings.get("backup_restore_accounting_db"))
    databases = settings.get("backup_mariadb_databases") or []
    if not user and not database:
        problem("nothing to restore: neither backup_restore_home nor backup_restore_accounting_db is set. Fix: give "
                "-e restore_home=USER and/or -e restore_accounting_db=true to playbooks/restore.yml.")
    if not str(settings.get("backup_repository") or "").strip():
        problem("backup_repository is empty. Fix: give the repository the backups went to (the inventory's backup_repository).")
    if not str(settings.get("backup_password") or ""):
        problem("backup_password is empty. Fix: give the repository's password (the inventory's vaulted backup_password).")

    snapshot = settings.get("backup_restore_snapshot")
    if snapshot != "latest" and not (isinstance(snapshot, str) and SNAPSHOT_ID.match(snapshot)):
        problem(f"backup_restore_snapshot {snapshot!r} is neither 'latest' nor a snapshot ID. Fix: give an ID as "
                "'restic snapshots' lists it (8 hex digits or the full 64), or leave it at 'latest'.")
    if user:
        if not isinstance(user, str) or not USER_NAME.match(user) or len(user) > USER_NAME_MAX:
            problem(f"backup_restore_home {user!r} is not a user name. Fix: give the user whose home to restore, e.g. 'alice'.")
        reason = path_problem(settings.get("backup_home_root"))
        if reason:
            problem(f"backup_home_root {settings.get('backup_home_root')!r} {reason}. Fix: keep the default (hpclab_shared_path/home).")
    target = settings.get("backup_restore_target") or ""
    if target:
        reason = path_problem(target)
        if reason:
            problem(f"backup_restore_target {target!r} {reason}. Fix: leave it empty to restore in place, or give a directory "
                    "such as /root/restored.")
    # As the tasks read it (| bool): the string "false" is false.
    if boolean(settings.get("backup_restore_replace_newer") or False, strict=False) and (not user or target):
        problem("backup_restore_replace_newer is true, but " + (
            f"backup_restore_target {target!r} writes the snapshot's files below that directory and nothing in place changes"
            if target else "no home is restored (backup_restore_home is empty)")
            + ". Fix: leave out -e restore_replace_newer=true; it is for a home restored in place (-e restore_home=USER "
            "without -e restore_target), where it replaces the files changed since the snapshot.")
    hosts = list(play_hosts or [])
    if user and len(hosts) > 1:
        problem(f"backup_restore_home {user!r} would be restored on {len(hosts)} hosts at once ({', '.join(map(str, hosts))}), "
                "each from its own snapshot into the same home. Fix: name the host whose backup to restore from with "
                "-e restore_host=HOST.")
    if user and not target:
        reason = placement_problem("backup_restore_staging_dir", settings.get("backup_restore_staging_dir"),
                                   holds=listed_paths(settings),
                                   inside=[("backup_home_root", settings.get("backup_home_root")),
                                           ("backup_dump_dir", settings.get("backup_dump_dir"))])
        if reason:
            problem(reason)
    if database and not databases:
        problem("backup_restore_accounting_db is true but backup_mariadb_databases is empty: no database was dumped. "
                "Fix: give the databases the backups dumped (default [slurm_acct_db]).")
    if problems or snapshots is None:
        return problems

    if not snapshots and snapshot == "latest":
        problem(f"backup_restore_snapshot latest: the repository holds no snapshot of {host} (tag hpclab). Fix: back up first "
                "(playbooks/backup.yml -e backup_run_now=true), or give a snapshot ID with -e restore_snapshot=ID "
                "('restic snapshots' lists them, README).")
        return problems
    if not snapshots:
        problem(f"backup_restore_snapshot {snapshot}: the repository holds no such snapshot. Fix: list them with "
                "'restic snapshots' (README) and give one with -e restore_snapshot=ID.")
        return problems
    chosen = sorted(snapshots, key=lambda s: str(s.get("time", "")))[-1]
    name = f"snapshot {str(chosen.get('id', ''))[:8]} ({str(chosen.get('time', ''))[:19].replace('T', ' ')})"
    listed = listed or {}
    if user:
        path = home_path(settings)
        node = _listed_items(listed.get(path)).get(path) or {}
        if node.get("type") != "dir":
            problem(f"backup_restore_home {user!r}: {name} holds no directory {path}. Fix: check the name, or give an older "
                    "snapshot with -e restore_snapshot=ID ('restic ls ID " + path + "' shows what one holds).")
        elif not target and node.get("uid") == 0:
            problem(f"backup_restore_home {user!r}: in {name} the home {path} is owned by root, and the copy back in place runs "
                    "as the home's owner. Fix: restore it below a directory with -e restore_target=/root/restored and move "
                    "the files by hand.")
    if user and target and target_read is not None:
        reason = _target_way_problem(target, target_read)
        if reason:
            problem(reason)
    if database:
        for db in databases:
            path = dump_path(settings, db)
            if listed_nodes(listed.get(path)).get(path) != "file":
                problem(f"backup_restore_accounting_db: {name} holds no dump {path} of the database {db}. Fix: give a snapshot "
                        "made while backup_mariadb_databases named it, with -e restore_snapshot=ID.")
    return problems


class FilterModule:
    """The backup role's checks before a restore."""

    def filters(self):
        return {"backup_restore_problems": backup_restore_problems}
