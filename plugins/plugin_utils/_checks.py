# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure helpers shared by the roles' check filters (glusterfs_problems, nfs_ganesha_problems, munge_cluster_problems,
slurm_cluster_problems, slurm_worker_problems, ...).

This plugin util is PRIVATE to the collection: it may change without notice.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping

# Characters a path may hold where it is written into a daemon's configuration or an fstab line:
# no blanks, quotes, ';', braces or '#'.
PATH_CHARS = re.compile(r"^[A-Za-z0-9._@+=,:~/-]+\Z")


def to_int(value, default=None):
    """VALUE as an int; DEFAULT when it is None; None when it is a bool or not a number."""
    if value is None:
        return default
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def not_canonical(parts) -> bool:
    """Whether path PARTS (split on '/') hold an empty, '.' or '..' part."""
    return any(p in ("", ".", "..") for p in parts)


# --- added for the munge, slurm_master and slurm_worker check filters (issue 18) -------------------

# A path that is also one side of a Docker bind mount (HOST:CONTAINER[:OPTIONS]) or of a --device
# (HOST:CONTAINER:PERMISSIONS): PATH_CHARS without ':' and ','.
MOUNT_PATH_CHARS = re.compile(r"^[A-Za-z0-9._@+=~/-]+\Z")
# Debian package names (Debian Policy 5.6.1: lowercase letters, digits, '+', '-' and '.', at least
# two characters, starting with a letter or digit), with what the apt module adds: ':ARCH',
# '=VERSION' or '>=VERSION', and fnmatch wildcards.
DEBIAN_PACKAGE = re.compile(r"^[a-z0-9*][a-z0-9+.*-]+(?::[a-z0-9-]+)?(?:>?=[A-Za-z0-9.+~:*-]+)?\Z")
# POSIX user and group names as useradd/groupadd accept them (Debian's default NAME_REGEX), at most
# 32 characters (useradd: "user name too long").
USER_NAME = re.compile(r"^[a-z_][a-z0-9_-]*\Z")
USER_NAME_MAX = 32
# IDs that are never a cluster user's: root (0), nobody/nogroup (65534), and (uid_t)-1, which the
# kernel and useradd reserve.
ID_MAX = 4294967294
NOBODY_ID = 65534
# A GPU type in slurm.conf's Gres=gpu:TYPE:N and gres.conf's Type=: one word.
GPU_TYPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*\Z")


def path_problem(value, allow_root=False):
    """Why VALUE is not a canonical absolute path (a configuration file can hold it unquoted), or None."""
    return _path_problem(value, allow_root, PATH_CHARS,
                         "has a blank, a quote or another character that does not belong in a path here")


def mount_path_problem(value, allow_root=False):
    """Why VALUE is not a canonical absolute path that a bind mount can hold, or None."""
    return _path_problem(value, allow_root, MOUNT_PATH_CHARS,
                         "has a blank, a quote, ':', ',' or another character that a configuration file or a Docker bind mount cannot hold")


def _path_problem(value, allow_root, chars, chars_reason):
    if not isinstance(value, str) or not value.startswith("/"):
        return "is not an absolute path"
    if not chars.fullmatch(value):
        return chars_reason
    if value == "/":
        return None if allow_root else "is '/'"
    if not_canonical(value[1:].split("/")):
        return "is not canonical (a trailing or doubled '/', or a '.' or '..' part)"
    return None


def is_within(path, other) -> bool:
    """Whether canonical absolute PATH is OTHER or lies below it."""
    return path == other or path.startswith(other.rstrip("/") + "/")


def port_problem(value):
    """Why VALUE is not a TCP port 1..65535, or None."""
    number = to_int(value)
    if number is None or isinstance(value, float) or not 1 <= number <= 65535:
        return "is not a TCP port 1..65535"
    return None


def seconds_problem(value, minimum=1):
    """Why VALUE is not a whole number of seconds of at least MINIMUM, or None."""
    number = to_int(value)
    if number is None or isinstance(value, float) or number < minimum:
        return f"is not a whole number of seconds of at least {minimum}"
    return None


def package_problems(packages, required=()):
    """Why the list PACKAGES cannot be given to apt as it is, or misses one of REQUIRED: a list of phrases."""
    if isinstance(packages, (str, bytes)) or not isinstance(packages, (list, tuple)):
        return [f"is not a list of package names ({packages!r})"]
    reasons = [f"entry {name!r} is not a Debian package name" for name in packages
               if not isinstance(name, str) or not DEBIAN_PACKAGE.fullmatch(name)]
    names = {name.split("=")[0].split(">")[0].split(":")[0] for name in packages if isinstance(name, str)}
    reasons += [f"lacks {name}, the package of the daemon the role runs" for name in required if name not in names]
    return reasons


def gpus_shape_ok(gpus) -> bool:
    """Whether GPUS (a worker's slurm_worker_gpus) is empty or {count: N, type: ..., files: [N files]}."""
    if not gpus:
        return True
    if not isinstance(gpus, Mapping) or not str(gpus.get("count", "")).isdigit():
        return False
    files = gpus.get("files")
    return files is None or (isinstance(files, list) and len(files) == int(gpus["count"]))


def gpus_value_problems(gpus):
    """Why the values of a well-shaped slurm_worker_gpus cannot reach slurm.conf, gres.conf and docker: phrases."""
    if not gpus:
        return []
    reasons = []
    gpu_type = gpus.get("type")
    if gpu_type not in (None, "") and (not isinstance(gpu_type, str) or not GPU_TYPE.fullmatch(gpu_type)):
        reasons.append(f"type {gpu_type!r} is not one word of letters, digits, '_', '.', '+' and '-'")
    files = gpus.get("files") or []
    for path in files:
        reason = mount_path_problem(path)
        if reason or not path.startswith("/dev/"):
            reasons.append(f"file {path!r} {reason or 'is not under /dev'}")
    if len(set(map(str, files))) != len(files):
        reasons.append("a device file is listed twice")
    return reasons


# The web UIs' passwords (llm_gateway hands them out, llm_serving writes gradio's login file): their length.
WEB_PASSWORD_MIN = 16
WEB_PASSWORD_MAX = 200
# Letters, digits and -._+/=@%^: what a password given to the gateway's web logins or to the monitoring
# endpoints may hold (nothing a shell, gradio's login file or a YAML file reads specially).
SAFE_PASSWORD = re.compile(r"^[A-Za-z0-9._+/=@%^-]+\Z")
SAFE_PASSWORD_REASON = "has a character other than letters, digits and '-._+/=@%^'"


def web_password_reason(password, chars, chars_reason):
    """Why PASSWORD cannot be a web password (None when it can): too short, too long, or not all CHARS (a compiled
    fullmatch pattern), which CHARS_REASON says."""
    if not isinstance(password, str) or len(password) < WEB_PASSWORD_MIN:
        return f"is shorter than {WEB_PASSWORD_MIN} characters"
    if len(password) > WEB_PASSWORD_MAX:
        return f"is longer than {WEB_PASSWORD_MAX} characters"
    if not chars.fullmatch(password):
        return chars_reason
    return None


def users_well_formed(users) -> bool:
    """Whether USERS is a list of {name, uid, gid} with POSIX names, numeric IDs, no name or uid twice."""
    names = [u.get("name", "") if isinstance(u, Mapping) else "" for u in users]
    uids = [str(u.get("uid", "")) if isinstance(u, Mapping) else "" for u in users]
    gids = [str(u.get("gid", "")) if isinstance(u, Mapping) else "" for u in users]
    return (all(isinstance(n, str) and USER_NAME.fullmatch(n) for n in names) and all(i.isdigit() for i in uids + gids)
            and len(set(names)) == len(names) and len(set(uids)) == len(uids))


def user_value_problems(users, reserved_ids=()):
    """Why well-formed USERS cannot be created on every node as they are: a list of phrases.

    RESERVED_IDS: IDs the nodes already give to a system account (the slurm user).
    """
    reasons = []
    reserved = {int(i) for i in reserved_ids if to_int(i) is not None}
    for user in users:
        name = user["name"]
        if len(name) > USER_NAME_MAX:
            reasons.append(f"name {name!r} is longer than {USER_NAME_MAX} characters")
        for key in ("uid", "gid"):
            number = int(str(user[key]))
            if not 1 <= number <= ID_MAX or number == NOBODY_ID:
                reasons.append(f"{name}'s {key} {number} is root's, nobody's or out of range (1..{ID_MAX}, not {NOBODY_ID})")
            elif number in reserved:
                reasons.append(f"{name}'s {key} {number} is the slurm user's")
        groups = user.get("groups") or []
        if isinstance(groups, str) or not isinstance(groups, (list, tuple)):
            reasons.append(f"{name}'s groups {groups!r} is not a list of group names")
        else:
            reasons += [f"{name}'s group {g!r} is not a group name" for g in groups
                        if not isinstance(g, str) or not USER_NAME.fullmatch(g) or len(g) > USER_NAME_MAX]
    return reasons


# An apt proxy a Dockerfile's RUN line can carry inside single quotes: http(s)://[USER[:PASS]@]HOST[:PORT][/PATH].
APT_PROXY = re.compile(r"^https?://(?:[A-Za-z0-9._~%-]+(?::[A-Za-z0-9._~%-]*)?@)?[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~%/-]*)?\Z")


def container_problems(settings):
    """Why the container settings SETTINGS ({variable: value}) cannot build and run the daemons' containers.

    Dispatches on the variable's name: *_dir (host directories bind-mounted into a container: canonical,
    not '/', none inside another), *_slurm_uid (the slurm user of the image: 1..ID_MAX, not nobody; the
    cluster users' IDs are checked against it by user_value_problems), *_base_image (an image reference), *_network (a Docker
    network name), *_apt_proxy (auto, "" or an http(s) URL), *_addresses ({container: IPv4 address}, no
    address twice). Returns [(variable, reason)].
    """
    # Imported here, not at the top: _names imports this module.
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._names import docker_name_problem, image_reference_problem

    found = []
    dirs = {}
    for variable, value in settings.items():
        if isinstance(value, str) and any(c.isspace() for c in value):
            found.append((variable, f"{value!r} has a blank or a line break"))
        elif variable.endswith("_dir"):
            reason = mount_path_problem(value)
            if reason:
                found.append((variable, f"{value!r} {reason}"))
            else:
                dirs[variable] = value
        elif variable.endswith("_slurm_uid"):
            number = to_int(value)
            if number is None or isinstance(value, float) or not 1 <= number <= ID_MAX or number == NOBODY_ID:
                found.append((variable, f"{value!r} is not a UID 1..{ID_MAX} other than root's and nobody's ({NOBODY_ID})"))
        elif variable.endswith("_base_image"):
            reason = image_reference_problem(value)
            if reason:
                found.append((variable, f"{value!r} {reason}"))
        elif variable.endswith("_network"):
            reason = docker_name_problem(value)
            if reason:
                found.append((variable, f"{value!r} {reason}"))
        elif variable.endswith("_apt_proxy"):
            if value not in ("auto", "") and (not isinstance(value, str) or not APT_PROXY.fullmatch(value)):
                found.append((variable, f"{value!r} is neither auto, \"\" nor an http(s) URL such as http://10.0.0.1:3142"))
        elif variable.endswith("_addresses"):
            if not isinstance(value, Mapping):
                found.append((variable, f"{value!r} is not a dict of container name to address"))
                continue
            seen = {}
            for name, address in value.items():
                try:
                    ipaddress.IPv4Address(str(address))  # docker_container's ipv4_address
                except ValueError:
                    found.append((variable, f"{name}: {address!r} is not an IPv4 address"))
                    continue
                if docker_name_problem(name):
                    found.append((variable, f"{name!r} {docker_name_problem(name)}"))
                if str(address) in seen:
                    found.append((variable, f"{name} has {address}, which {seen[str(address)]} has too"))
                seen.setdefault(str(address), name)
        else:
            raise ValueError(f"unknown container setting {variable!r}")
    names = list(dirs)
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            if is_within(dirs[first], dirs[second]) or is_within(dirs[second], dirs[first]):
                found.append((first, f"{dirs[first]} and {second} {dirs[second]} are the same directory or one holds the other"))
    return found


def timeouts_problems(host, timeouts, fix):
    """One message naming every variable of TIMEOUTS ({variable: value}) that is not a whole number of seconds of at
    least 1, or none."""
    bad = [f"{variable} {value!r}" for variable, value in (timeouts or {}).items() if seconds_problem(value)]
    if not bad:
        return []
    return [f"{host}: {', '.join(bad)}: not a whole number of seconds of at least 1. Fix: {fix}."]
