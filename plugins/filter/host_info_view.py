# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: host_info_view
short_description: What a role's own host_info call would return, taken from a wider read of the same run
version_added: 0.1.0
description:
  - Takes a result of M(hpclab.cluster.host_info) that read more than a role needs (playbooks/node_info.yml
    reads every installed package, several units and paths once per node and run) and returns what the
    role's own, narrower call would have returned, so that the role makes no remote call of its own.
  - Returns C(paths) and C(services) limited to those asked, and C(missing_packages), the asked packages
    that are not among C(installed_packages).
  - Returns an empty dict when the read does not cover the request - it was not made with
    C(all_packages), a path or unit was not read, or its checksums use another algorithm - so that the
    role knows it must read for itself.
options:
  _input:
    description: A host_info result made with C(all_packages=true); anything else (e.g. an undefined read
      defaulted to C({})) counts as not covering.
    type: dict
    required: true
  packages:
    description: The Debian packages the role installs.
    type: list
    elements: str
    default: []
  paths:
    description: The paths the role compares.
    type: list
    elements: str
    default: []
  services:
    description: The systemd units the role compares.
    type: list
    elements: str
    default: []
  checksum_algorithm:
    description: The checksum algorithm the role compares files with; empty when it compares none.
    type: str
    default: ""
"""

EXAMPLES = r"""
# The munge role: this run's node read when it covers the key, its directory and munged; else its own read.
__munge_preread: >-
  {{ hpclab_node_info | default({}) | hpclab.cluster.host_info_view(packages=munge_packages,
     paths=['/etc/munge', '/etc/munge/munge.key'], services=['munge'], checksum_algorithm='sha256') }}
__munge_host: "{{ __munge_preread if __munge_preread else __munge_read }}"
"""

RETURN = r"""
_value:
  description: C({paths, services, missing_packages}), or C({}) when the read does not cover the request.
  type: dict
"""

from collections.abc import Mapping


def host_info_view(read, packages=(), paths=(), services=(), checksum_algorithm=""):
    """Filter entry point: see DOCUMENTATION."""
    if not isinstance(read, Mapping) or not isinstance(read.get("installed_packages"), list):
        return {}
    read_paths = read.get("paths") or {}
    read_services = read.get("services") or {}
    if any(p not in read_paths for p in paths) or any(s not in read_services for s in services):
        return {}
    if checksum_algorithm and paths and read.get("checksum_algorithm") != checksum_algorithm:
        return {}
    installed = set(read["installed_packages"])
    return {
        "paths": {p: read_paths[p] for p in paths},
        "services": {s: read_services[s] for s in services},
        # As host_info itself: a NAME:ARCH request matches its NAME (dpkg-query prints multi-arch names bare).
        "missing_packages": [p for p in dict.fromkeys(packages) if p not in installed and p.split(":")[0] not in installed],
    }


class FilterModule:
    """Filters over host_info results."""

    def filters(self):
        return {"host_info_view": host_info_view}
