# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: munge_random_key
short_description: A new random MUNGE key, base64-encoded, made in memory on the Ansible controller
version_added: 0.1.0
description:
  - Returns the base64 of the given number of bytes from the operating system's random source
    (C(os.urandom)), for M(hpclab.cluster.munge_key). Nothing is written to disk.
  - Every call returns a different key, so use it once (C(run_once) with C(no_log)) and hand the result
    to every host.
options:
  _input:
    description: Key length in bytes, 32 to 1024 (what munged accepts).
    type: int
    required: true
"""

EXAMPLES = r"""
- name: Generate the cluster key once
  ansible.builtin.set_fact:
    cluster_munge_key: "{{ 128 | hpclab.cluster.munge_random_key }}"
  run_once: true
  no_log: true
"""

RETURN = r"""
_value:
  description: The key, base64-encoded.
  type: str
"""

import base64
import os

from ansible.errors import AnsibleFilterError

# The collection's helpers are imported in the functions that use them: ansible-core imports every filter
# file in each worker process, and compiles these modules from source each time (test_filter_loading.py).


def munge_random_key(length) -> str:
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.hpclab.cluster.plugins.module_utils._munge import KEY_MAX_BYTES, KEY_MIN_BYTES
    try:
        count = int(length)
    except (TypeError, ValueError):
        raise AnsibleFilterError(f"munge_random_key: the length {length!r} is not a number of bytes") from None
    if not KEY_MIN_BYTES <= count <= KEY_MAX_BYTES:
        raise AnsibleFilterError(f"munge_random_key: {count} bytes; munged accepts {KEY_MIN_BYTES} to {KEY_MAX_BYTES}")
    return base64.b64encode(os.urandom(count)).decode("ascii")


class FilterModule:
    """Random MUNGE key filter."""

    def filters(self):
        return {"munge_random_key": munge_random_key}
