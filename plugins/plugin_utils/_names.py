# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure name and path rules shared by the docker_macvlan_problems and k3s_nfs_csi_problems filters.

Each function returns why a value is not valid, as a phrase to follow the value in a message, or
None when it is valid. This plugin util is PRIVATE to the collection: it may change without notice.
"""

from __future__ import annotations

import ipaddress
import re


# Docker's names of containers (and the pattern it documents for networks): moby daemon/names.
DOCKER_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]+\Z")
# Image references, as the distribution/reference grammar of Docker and containerd reads them.
_DOMAIN_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*(?::[0-9]+)?"
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_REPOSITORY = rf"(?:{_DOMAIN}/)?{_PATH_PART}(?:/{_PATH_PART})*"
REPOSITORY = re.compile(rf"^{_REPOSITORY}\Z")
REFERENCE = re.compile(rf"^(?P<name>{_REPOSITORY})(?::[\w][\w.-]{{0,127}})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{{32,}})?\Z")
REGISTRY = re.compile(rf"^{_DOMAIN}(?:/{_PATH_PART})*\Z")
REFERENCE_NAME_MAX = 255  # distribution/reference NameTotalLengthMax
# Written into a systemd unit's command lines: no '%' (a unit specifier), '$', quotes or blanks. The
# kernel takes at most 15 characters (IFNAMSIZ 16 with the NUL), never '/' or ':'.
INTERFACE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}\Z")
# RFC 1123 host names: dot-separated labels of letters, digits and '-', at most 63 characters each.
_HOST_LABEL = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\Z")


def docker_name_problem(value):
    """Why VALUE is not a Docker container or network name."""
    if not isinstance(value, str) or not DOCKER_NAME.match(value):
        return "is not a Docker name: at least 2 characters, letters, digits, '_', '.' and '-', starting with a letter or digit"
    return None


def image_reference_problem(value, tag=True):
    """Why VALUE is not an image reference (REPOSITORY[:TAG][@DIGEST]; the repository alone without TAG)."""
    if not isinstance(value, str) or not value:
        return "is not set"
    pattern = REFERENCE if tag else REPOSITORY
    match = pattern.match(value)
    if not match:
        if not tag and REFERENCE.match(value):
            return "has a tag or digest; give the repository alone (the chart sets the tag)"
        return (
            "is not an image reference: [REGISTRY[:PORT]/]PATH[:TAG], the path in lowercase letters, digits and "
            "'.', '_', '-' between them, e.g. docker.io/library/busybox:1.36"
        )
    name = match.group("name") if tag else value
    if len(name) > REFERENCE_NAME_MAX:
        return f"has a repository name of {len(name)} characters, more than {REFERENCE_NAME_MAX}"
    return None


def registry_problem(value):
    """Why VALUE is not a registry host with an optional port and path (what images' names start with)."""
    if not isinstance(value, str) or not REGISTRY.match(value):
        return "is not a registry: a host name with an optional :PORT and /PATH, no scheme, no trailing '/', e.g. registry.lab:5000"
    return None


def interface_name_problem(value):
    """Why VALUE is not a network interface name a systemd unit can hold."""
    if not isinstance(value, str) or not INTERFACE_NAME.match(value):
        return "is not an interface name: 1 to 15 letters, digits, '_', '.' and '-', starting with a letter or digit"
    return None


def host_problem(value):
    """Why VALUE is neither an IP address nor an RFC 1123 host name."""
    if not isinstance(value, str) or not value:
        return "is not set"
    try:
        ipaddress.ip_address(value)
        return None
    except ValueError:
        pass
    labels = value[:-1].split(".") if value.endswith(".") else value.split(".")
    if len(value) > 253 or not all(_HOST_LABEL.match(label) for label in labels) or labels[-1].isdigit():
        return "is neither an IP address nor a host name (letters, digits and '-' in dot-separated labels, no scheme, port or path)"
    return None
