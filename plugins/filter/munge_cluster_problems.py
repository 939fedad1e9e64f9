# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: munge_cluster_problems
short_description: What is wrong with the MUNGE layer's input, host by host, before any change
version_added: 0.2.0
description:
  - Takes every host's MUNGE key as M(ansible.builtin.stat) saw it (with C(checksum_algorithm=sha256))
    and the munge role's settings, and returns a list of problems, each naming the hosts, the
    variable and the fix. An empty list means the role may go on.
  - "Rules: (1) every host of the play is in O(group); (2) a supplied O(key) is one munged accepts
    (base64 of 32 to 1024 bytes); (3) without O(key), O(generated_key_bytes) is 32..1024; (4) no host
    holds a key that differs from the cluster key (the supplied one, or the one the hosts share), and
    the hosts do not hold different keys with neither O(key) nor O(rotate), unless O(rotate);
    (5) O(packages), when given, is a list of Debian package names that holds C(munge), the package
    of munged and of the munge user."
  - munged has no configuration file and no option to check one (its options are command-line only,
    MUNGE 0.5.15 C(src/munged/conf.c)); the key is what it reads, and rules 2 to 4 check it.
  - A host that holds no key is never a problem, since nothing uses its key yet.
  - Rules 1 to 4 are decided by C(plan_cluster) in C(plugins/module_utils/_munge.py), shared with
    P(hpclab.cluster.munge_cluster_key#filter); rule 5 here.
  - The companion filter P(hpclab.cluster.munge_cluster_key#filter) returns the cluster key's fingerprint,
    the host to read it from and the hosts to write it to, from the same input.
extends_documentation_fragment:
  - hpclab.cluster.munge_cluster
options:
  packages:
    description: C(munge_packages) of the host that evaluates the filter; null (the default) skips rule 5.
    type: list
    elements: str
  host:
    description: The inventory name of the host that evaluates the filter, for the message of rule 5.
    type: str
"""

EXAMPLES = r"""
- name: Check the key group, the key settings and every host's key
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
  vars:
    __problems: >-
      {{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, ['key_stat', 'stat'])))
         | hpclab.cluster.munge_cluster_problems(key=munge_key, rotate=munge_rotate, group_hosts=groups['munge']) }}

# {"n1": {"exists": true, "checksum": "aa..", ...}, "n2": {"exists": true, "checksum": "bb..", ...}}
#   | hpclab.cluster.munge_cluster_problems(group_hosts=["n1", "n2"])
# => ["The hosts hold different MUNGE keys and munge_key is not set: n1 (sha256 aa..); n2 (sha256 bb..). ... Fix: ..."]
"""

RETURN = r"""
_value:
  description: One message per problem; empty when there is none.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

# The collection's helpers are imported in the functions that use them: ansible-core imports every filter
# file in each worker process, and compiles these modules from source each time (test_filter_loading.py).

# Debian's munge package ships munged, the munge user and the unit the role starts.
DAEMON_PACKAGES = ("munge",)


def _packages(packages, host):
    """Rule 5."""
    from ansible_collections.hpclab.cluster.plugins.plugin_utils._checks import package_problems
    if packages is None:
        return []
    reasons = package_problems(packages, DAEMON_PACKAGES)
    if not reasons:
        return []
    where = f"{host}: " if host else ""
    return [
        f"{where}munge_packages {'; '.join(reasons)}. Fix: list Debian package names (apt-cache policy NAME), "
        "keeping munge, e.g. munge_packages: [munge]."
    ]


def munge_cluster_problems(keys, key="", rotate=False, group_hosts=(), group="munge", generated_key_bytes=128,
                           packages=None, host=None):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.hpclab.cluster.plugins.module_utils._munge import plan_cluster
    try:
        problems = plan_cluster(keys, key, rotate, group_hosts, group, generated_key_bytes)["problems"]
    except TypeError as exc:
        raise AnsibleFilterError(f"munge_cluster_problems: {exc}") from None
    return problems + _packages(packages, host)


class FilterModule:
    """The MUNGE layer's whole-cluster checks."""

    def filters(self):
        return {"munge_cluster_problems": munge_cluster_problems}
