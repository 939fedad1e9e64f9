# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    """The input of the filters munge_cluster_problems and munge_cluster_key, written once."""

    DOCUMENTATION = r"""
options:
  _input:
    description: "Host name to the C(stat) dict of its key file (keys C(exists), C(checksum) in sha256, C(pw_name), C(gr_name), C(mode))."
    type: dict
    required: true
  key:
    description: The supplied base64 key (C(munge_key)), or empty.
    type: str
    default: ""
  rotate:
    description: C(munge_rotate).
    type: bool
    default: false
  group_hosts:
    description: The hosts of the inventory group O(group).
    type: list
    elements: str
    default: []
  group:
    description: The inventory group's name (C(munge_group)), for the messages.
    type: str
    default: munge
  generated_key_bytes:
    description: C(munge_generated_key_bytes).
    type: int
    default: 128
"""
