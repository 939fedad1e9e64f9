# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: backup_problems
short_description: What is wrong with the backup role's input on one host, before any change
version_added: 0.4.0
description:
  - A backup that silently saves nothing is found on the day it is needed. The backup role checks its input, and
    what stat, C(test -w), C(systemd-analyze calendar) and the MariaDB client read on the host, with this filter
    before anything is installed. Types are left to the role's argument spec.
  - Returns a list of problems, each naming the host, the variable and the fix; an empty list means the role may
    go on. The password is never part of a message, nor the user information of a repository URL.
  - "Repository: (1) C(backup_repository) is set; (2) it is an absolute local path (or C(local:PATH)), or an
    C(sftp:) or C(rest:) location (the role passes no credentials for restic's other backends); (3) a local
    repository's parent directory exists and (4) the repository, or its parent when the repository does not
    exist yet, is a directory root may write (not on a read-only mount); (5) a local repository neither lies
    inside a backed-up path nor holds one."
  - "Password: (6) C(backup_password) is set and (7) has no blank at either end (restic strips them from the
    password file, not from the password it initialises the repository with)."
  - "Where the role writes: (19) C(backup_dump_dir) lies below C(/var/lib/hpclab/backup) and
    C(backup_password_file) below C(/etc/hpclab/backup), the directories this role owns (it makes the dumps' directory
    root-only and deletes the C(*.sql) files in it before each backup; it writes the password file, and the
    repository file C(restic.repository) beside it, for root only), and the password file is not named
    C(restic.repository); (20) C(backup_dump_dir) neither lies inside nor holds another saved path or
    C(backup_home_root)."
  - "What is saved: (8) every path of C(backup_paths), C(backup_extra_paths), C(backup_slurm_state_dir) (when
    set) and C(backup_dump_dir) is a canonical absolute path without blanks, quotes or glob characters; (9) it
    exists on the host (restic 0.14 skips a missing path and still succeeds); (10) C(backup_exclude) is a list
    of non-empty patterns; (11) C(backup_mariadb_exec) is a list of non-empty strings; (12) every name of
    C(backup_mariadb_databases) is a plain MariaDB identifier (letters, digits, C(_), C($)), at most once;
    (13) the MariaDB server reached through C(backup_mariadb_exec) answers and has each of them."
  - "Retention and schedule: (14) C(backup_retention) is a dict of the keys C(keep_last), C(keep_hourly),
    C(keep_daily), C(keep_weekly), C(keep_monthly), C(keep_yearly) (C(restic forget --keep-*)) with (15)
    positive whole numbers, (16) at least one of them; (17) C(backup_schedule) is a calendar event systemd
    accepts; (18) C(backup_randomized_delay) is a whole number of seconds, 0 or more."
  - In check mode a path, a repository parent or a database that does not exist yet is not a problem (an
    earlier play of the same run would create it); a probe that did not run (V(None)) is not one either.
options:
  _input:
    description: The role's variables by name (C(backup_*)), as the role passes them.
    type: dict
    required: true
  host:
    description: The host's inventory name (C(inventory_hostname)), for the messages.
    type: str
    required: true
  paths_found:
    description: Whether each path to save exists on the host (from C(ansible.builtin.stat)), by path.
    type: dict
    default: {}
  repository_stat:
    description: The C(stat) of a local repository (C(exists), C(isdir)); V(None) when not probed.
    type: dict
  parent_stat:
    description: The C(stat) of a local repository's parent directory; V(None) when not probed.
    type: dict
  writable:
    description: Whether root may write the repository (or its parent when it does not exist), from C(test -w); V(None) when not probed.
    type: bool
  schedule_probe:
    description: The registered result of C(systemd-analyze calendar SCHEDULE) (C(rc), C(stderr)); V(None) when not probed.
    type: dict
  database_probe:
    description:
      - The registered result of C(EXEC mariadb --batch --skip-column-names -e 'SHOW DATABASES') (C(rc), C(stdout_lines), C(stderr)).
      - V(None) when not probed.
    type: dict
  check_mode:
    description: Whether the run is in check mode (C(ansible_check_mode)).
    type: bool
    default: false
"""

EXAMPLES = r"""
# {"backup_repository": "/mnt/usb/restic", "backup_password": "...", ...}
#   | hpclab.cluster.backup_problems(host="node1", parent_stat={"exists": false})
# => ["node1: backup_repository '/mnt/usb/restic': its parent directory /mnt/usb does not exist on this host.
#     Fix: mount the backup disk there or create the directory, or give another backup_repository."]
- name: Check the role's input
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
    quiet: true
  vars:
    __problems: >-
      {{ {'backup_repository': backup_repository, 'backup_password': backup_password}
         | hpclab.cluster.backup_problems(host=inventory_hostname) }}
"""

RETURN = r"""
_value:
  description: One message per problem; empty when there is none.
  type: list
  elements: str
"""

import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

# The collection's helpers are imported in the functions that use them: ansible-core imports every filter
# file in each worker process, and compiles these modules from source each time (test_filter_loading.py).

# restic forget's --keep-N options in 0.14 (restic help forget), by the role's key.
RETENTION_KEYS = ("keep_last", "keep_hourly", "keep_daily", "keep_weekly", "keep_monthly", "keep_yearly")
# A database name the script may write unquoted into a file name and a mariadb-dump argument.
DATABASE = re.compile(r"^[A-Za-z0-9_$]{1,64}\Z")
# restic's location prefixes (restic docs, "Preparing a new repository"); the role handles the first three.
SUPPORTED = ("local:", "sftp:", "rest:")
OTHER_BACKENDS = ("s3:", "swift:", "b2:", "azure:", "gs:", "rclone:")
# user:password@ in a URL.
_USERINFO = re.compile(r"(//[^/@:]*):[^/@]*@")
# The directories this role owns, below which its own directories and files must lie: it makes them root-only and
# deletes files in them (the dumps' *.sql before each backup, a restore's staging copy after it). Other roles keep
# their files in /var/lib/hpclab and /etc/hpclab; a system or another service's directory (/tmp, /etc, /root,
# /var/lib/mysql, a home) must never become root-only 0700 or lose its *.sql files.
ROLE_DIRS = {
    "backup_dump_dir": "/var/lib/hpclab/backup",
    "backup_restore_staging_dir": "/var/lib/hpclab/backup",
    "backup_password_file": "/etc/hpclab/backup",
}
# What the role does with each of them, for the messages, and the default to keep.
_ROLE_USES = {
    "backup_dump_dir": ("it makes the directory root-only (0700) and deletes the *.sql files in it before each backup",
                        "/var/lib/hpclab/backup/dumps (mount a bigger disk there if the dumps need room)"),
    "backup_restore_staging_dir": ("it makes the directory root-only and removes each restore's copy from it",
                                   "/var/lib/hpclab/backup/restore"),
    "backup_password_file": ("it writes the password, and the repository file restic.repository beside it, for root only",
                             "/etc/hpclab/backup/restic.password"),
}
# Beside backup_password_file: the repository location, which may hold a REST server's password (RESTIC_REPOSITORY_FILE,
# restic 0.10 and later), so that the backup script does not.
REPOSITORY_FILE_NAME = "restic.repository"


def redact(location):
    """LOCATION with the password of a URL's user information replaced: rest:https://u:***@host/."""
    return _USERINFO.sub(r"\1:***@", str(location))


def local_path(repository):
    """The path of a local repository ('/srv/restic', 'local:/srv/restic'), or None for another backend."""
    if not isinstance(repository, str):
        return None
    if repository.startswith("local:"):
        return repository[len("local:"):]
    if repository.startswith(SUPPORTED + OTHER_BACKENDS):
        return None
    return repository


def _inside(path, root):
    """Whether PATH is ROOT or below it (both canonical absolute paths)."""
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


def placement_problem(variable, path, holds=(), inside=()):
    """Why PATH, the value of the role's VARIABLE (dump or staging directory, password file), is not a place this role
    may own, or None. HOLDS: (name, path) pairs, the saved paths, that PATH must not be nor hold (a saved '/' holds
    everything, which is fine); INSIDE: pairs, the home root and one another, that PATH must neither be, hold nor lie in."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import is_within, path_problem
    use, default = _ROLE_USES[variable]
    reason = path_problem(path)
    if reason:
        return f"{variable} {path!r} {reason}. Fix: keep the default {default}."
    owned = ROLE_DIRS[variable]
    if path == owned or not is_within(path, owned):
        return (f"{variable} {path} does not lie below {owned}, the directory this role owns ({use}). "
                f"Fix: keep the default {default}.")
    if variable == "backup_password_file" and path.rsplit("/", 1)[1] == REPOSITORY_FILE_NAME:
        return (f"{variable} {path} is named {REPOSITORY_FILE_NAME}, the file beside it that holds the repository's "
                f"location. Fix: keep the default {default}.")
    pairs = [(name, other, False) for name, other in holds] + [(name, other, True) for name, other in inside]
    for name, saved, both_ways in pairs:
        if not isinstance(saved, str) or not saved.startswith("/"):
            continue
        if is_within(saved, path) or both_ways and is_within(path, saved):
            return (f"{variable} {path} and {name} {saved} lie inside one another ({use}). "
                    f"Fix: keep the default {default}, or give {name} a path outside it.")
    return None


def listed_paths(settings):
    """(variable, path) of each path of backup_paths, backup_extra_paths and backup_slurm_state_dir, for the messages."""
    pairs = [(variable, path) for variable in ("backup_paths", "backup_extra_paths")
             for path in (settings.get(variable) if isinstance(settings.get(variable), list) else [])]
    return pairs + ([("backup_slurm_state_dir", settings["backup_slurm_state_dir"])] if settings.get("backup_slurm_state_dir") else [])


def saved_paths(settings):
    """Every path the backup script saves, in order: the paths, the extra paths, the state directory, the dumps."""
    paths = list(settings.get("backup_paths") or []) + list(settings.get("backup_extra_paths") or [])
    if settings.get("backup_slurm_state_dir"):
        paths.append(settings["backup_slurm_state_dir"])
    if settings.get("backup_mariadb_databases"):
        paths.append(settings.get("backup_dump_dir"))
    return paths


def backup_problems(settings, host, paths_found=None, repository_stat=None, parent_stat=None, writable=None,
                    schedule_probe=None, database_probe=None, check_mode=False):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import to_int
    if not isinstance(settings, Mapping):
        raise AnsibleFilterError(f"backup_problems: input must be a dict of the role's variables, got {type(settings).__name__}")
    problems = []

    def problem(text):
        problems.append(f"{host}: {text}")

    # What is saved, first: the repository checks compare with it.
    paths_found = paths_found or {}
    good_paths = []
    for variable in ("backup_paths", "backup_extra_paths"):
        value = settings.get(variable)
        if value is None:
            continue
        if not isinstance(value, list):
            problem(f"{variable} is not a list. Fix: give a list of absolute paths, e.g. ['/gfsv/home'].")
            continue
        for path in value:
            good_paths += _check_path(problem, variable, path, paths_found, check_mode)
    if not saved_paths(settings):
        problem("backup_paths, backup_extra_paths, backup_slurm_state_dir and backup_mariadb_databases are all empty: "
                "nothing would be saved. Fix: keep the default backup_paths.")
    state_dir = settings.get("backup_slurm_state_dir")
    if state_dir:
        good_paths += _check_path(problem, "backup_slurm_state_dir", state_dir, paths_found, check_mode)
    databases = settings.get("backup_mariadb_databases") or []
    # The script empties the dumps' directory and configure.yml makes it root-only also without databases.
    dump_dir = settings.get("backup_dump_dir")
    reason = placement_problem("backup_dump_dir", dump_dir, holds=listed_paths(settings),
                               inside=[("backup_home_root", settings.get("backup_home_root"))])
    if reason:
        problem(reason)
    elif databases:
        good_paths.append(dump_dir)
    if "backup_password_file" in settings:
        reason = placement_problem("backup_password_file", settings["backup_password_file"])
        if reason:
            problem(reason)

    _check_repository(problem, settings.get("backup_repository"), good_paths, repository_stat, parent_stat, writable, check_mode)

    password = settings.get("backup_password")
    if password is None or str(password) == "":
        problem("backup_password is empty. Fix: set it in a vaulted variable file (ansible-vault encrypt_string), "
                "and keep it outside the backups too: without it the repository cannot be read.")
    elif str(password) != str(password).strip():
        problem("backup_password begins or ends with a blank, which restic drops from the password file but not from "
                "the password the repository was initialised with. Fix: remove the blanks.")

    exclude = settings.get("backup_exclude") or []
    if not isinstance(exclude, list) or not all(isinstance(p, str) and p.strip() and "\n" not in p for p in exclude):
        problem("backup_exclude must be a list of non-empty restic patterns (restic help backup: --exclude). "
                "Fix: e.g. ['/gfsv/home/*/.cache'].")

    _check_databases(problem, settings.get("backup_mariadb_exec"), databases, database_probe, check_mode)
    _check_retention(problem, settings.get("backup_retention"))

    schedule = settings.get("backup_schedule")
    if not isinstance(schedule, str) or not schedule.strip() or "\n" in schedule:
        problem(f"backup_schedule {schedule!r} is not a systemd calendar event. Fix: keep the default '*-*-* 02:30:00', or e.g. 'daily'.")
    elif schedule_probe and schedule_probe.get("rc") not in (0, None) and "calendar" in str(schedule_probe.get("stderr", "")):
        problem(f"backup_schedule {schedule!r} is not a calendar event systemd accepts ({str(schedule_probe['stderr']).strip()}). "
                "Fix: write it as in man systemd.time, e.g. '*-*-* 02:30:00' or 'Mon..Sat 03:00'; check it with systemd-analyze calendar.")
    delay = settings.get("backup_randomized_delay")
    seconds = to_int(delay)
    if seconds is None or seconds < 0 or str(delay).strip() != str(seconds):
        problem(f"backup_randomized_delay {delay!r} is not a whole number of seconds, 0 or more. Fix: keep the default 300.")
    return problems


def _check_path(problem, variable, path, paths_found, check_mode):
    """Problems of one path to save; [path] when it is usable."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import path_problem
    reason = path_problem(path, allow_root=True)
    if reason:
        problem(f"{variable}: {path!r} {reason} (restic saves it, and a restore selects it by pattern). Fix: give a canonical absolute path.")
        return []
    if paths_found.get(path) is False and not check_mode:
        fix = (f"run the Slurm layer first (playbooks/slurm.yml), or set {variable}: '' to save none" if variable == "backup_slurm_state_dir"
               else f"create or mount it (the shared volume: playbooks/storage.yml), or remove it from {variable}")
        problem(f"{variable}: {path} does not exist on this host, and restic 0.14 would skip it and report success. Fix: {fix}.")
    return [path]


def _check_repository(problem, repository, saved, repository_stat, parent_stat, writable, check_mode):
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import path_problem
    if repository is None or str(repository).strip() == "":
        problem("backup_repository is empty, and backups need somewhere to go. Fix: set it to a restic repository on another "
                "disk or host: a local path such as /mnt/backup/restic (a mounted disk), sftp:user@host:/srv/restic or "
                "rest:https://host:8000/NAME.")
        return
    shown = redact(repository)
    if not isinstance(repository, str) or "\n" in repository:
        problem(f"backup_repository {shown!r} is not a restic location. Fix: give a local path, sftp: or rest: location.")
        return
    if repository.startswith(OTHER_BACKENDS):
        problem(f"backup_repository {shown!r} uses a restic backend for which this role passes no credentials. "
                "Fix: use a local path (a mounted disk), sftp:user@host:/path (root's SSH key) or rest:https://host/NAME.")
        return
    path = local_path(repository)
    if path is None:
        return
    reason = path_problem(path)
    if reason:
        problem(f"backup_repository {shown!r}: the local path {reason}. Fix: give an absolute path on a mounted backup disk, "
                "e.g. /mnt/backup/restic.")
        return
    for other in saved:
        if _inside(path, other) or _inside(other, path):
            problem(f"backup_repository {path} and the saved path {other} lie inside one another: the repository would be saved "
                    "into itself. Fix: put the repository on another disk or host.")
            return
    parent = path.rsplit("/", 1)[0] or "/"
    if repository_stat and repository_stat.get("exists"):
        if not repository_stat.get("isdir"):
            problem(f"backup_repository {path} exists on this host and is not a directory. Fix: give the repository's directory.")
        elif writable is False:
            problem(f"backup_repository {path} is not writable by root on this host (a read-only mount?). Fix: mount it "
                    "read-write, or give another backup_repository.")
        return
    if parent_stat is None or check_mode and not parent_stat.get("exists"):
        return
    if not parent_stat.get("exists"):
        problem(f"backup_repository {path!r}: its parent directory {parent} does not exist on this host. Fix: mount the backup "
                "disk there or create the directory, or give another backup_repository.")
    elif not parent_stat.get("isdir"):
        problem(f"backup_repository {path!r}: its parent {parent} is not a directory. Fix: give a path below a directory.")
    elif writable is False:
        problem(f"backup_repository {path!r}: its parent directory {parent} is not writable by root (a read-only mount?), so "
                "restic init cannot create the repository. Fix: mount it read-write, or give another backup_repository.")


def _check_databases(problem, exec_prefix, databases, probe, check_mode):
    if not isinstance(exec_prefix, list) or not all(isinstance(a, str) and a for a in exec_prefix):
        problem(f"backup_mariadb_exec {exec_prefix!r} is not a list of words. Fix: [] for the host's own MariaDB client, or "
                "[docker, exec, -i, HOST-mariadb] where MariaDB runs in a container.")
        return
    if not isinstance(databases, list):
        problem("backup_mariadb_databases is not a list. Fix: e.g. [slurm_acct_db], or [] to dump no database.")
        return
    bad = [d for d in databases if not isinstance(d, str) or not DATABASE.match(d)]
    for name in bad:
        problem(f"backup_mariadb_databases: {name!r} is not a plain MariaDB database name (letters, digits, '_', '$'). "
                "Fix: give the name as SHOW DATABASES lists it.")
    twice = sorted({d for d in databases if isinstance(d, str) and databases.count(d) > 1})
    if twice:
        problem(f"backup_mariadb_databases names {', '.join(twice)} more than once. Fix: name each database once.")
    if not databases or bad or probe is None or probe.get("skipped"):
        return
    how = " ".join(exec_prefix + ["mariadb"])
    if probe.get("rc") != 0:
        if check_mode:
            return
        why = str(probe.get("stderr") or "").strip().splitlines()
        why = why[0] if why else f"{(exec_prefix or ['mariadb'])[0]} could not run: not installed?"
        problem(f"backup_mariadb_databases: no MariaDB server answered '{how}' (rc {probe.get('rc')}: {why}). "
                "Fix: pass backup_mariadb_exec [docker, exec, -i, HOST-mariadb] where MariaDB runs in a container (the slurm_master "
                "role's container mode), [] where it runs on the host, or set backup_mariadb_databases: [] to dump none.")
        return
    present = {line.strip() for line in probe.get("stdout_lines") or []}
    missing = [d for d in databases if d not in present]
    if missing and not check_mode:
        problem(f"backup_mariadb_databases: the MariaDB server reached with '{how}' has no database {', '.join(missing)} "
                f"(it has {', '.join(sorted(present)) or 'none'}). Fix: name databases it has, or [] to dump none.")


def _check_retention(problem, retention):
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import to_int
    if not isinstance(retention, Mapping):
        problem(f"backup_retention {retention!r} is not a dict. Fix: e.g. {{keep_daily: 7, keep_weekly: 4, keep_monthly: 6}}.")
        return
    unknown = sorted(str(k) for k in retention if k not in RETENTION_KEYS)
    if unknown:
        problem(f"backup_retention has unknown key(s) {', '.join(unknown)}. Fix: use only {', '.join(RETENTION_KEYS)} "
                "(restic forget --keep-*).")
    for key in RETENTION_KEYS:
        if key not in retention:
            continue
        value = retention[key]
        number = to_int(value)
        if number is None or number < 1 or str(value).strip() != str(number):
            problem(f"backup_retention.{key} {value!r} is not a positive whole number (restic 0.14 reads 0 as no rule and "
                    "a negative number as a rule that keeps nothing: --keep-daily -1 removes every snapshot). Fix: give a "
                    "number of snapshots of at least 1, or leave the key out.")
    if not unknown and not any(key in retention for key in RETENTION_KEYS):
        problem("backup_retention sets no rule: restic forget would remove nothing ('no policy was specified') and the "
                "repository would grow without end. Fix: keep the default {keep_daily: 7, keep_weekly: 4, keep_monthly: 6}.")


class FilterModule:
    """The backup role's checks of its input."""

    def filters(self):
        return {"backup_problems": backup_problems}
