# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: munge_key_info
short_description: Check a base64 MUNGE key and fingerprint it, without revealing it
version_added: 0.1.0
description:
  - Decodes a base64 MUNGE key, checks that munged would accept its length (32 to 1024 bytes) and
    returns its SHA-256 fingerprint. Whitespace in the input is ignored.
  - Never raises on a bad key; the result says why it is bad, so a role can fail with its own message.
options:
  _input:
    description: The key, base64-encoded.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Check the supplied key
  ansible.builtin.assert:
    that: (munge_key | hpclab.cluster.munge_key_info).valid
# "c2hvcnQ=" | hpclab.cluster.munge_key_info
# => {"valid": false, "error": "decodes to 5 bytes; munged needs at least 32", "length": null, "sha256": null}
"""

RETURN = r"""
_value:
  description: Validity, reason, decoded length in bytes and SHA-256 hex fingerprint.
  type: dict
  contains:
    valid:
      description: Whether munged would accept the key.
      type: bool
    error:
      description: Why the key is not valid, or null.
      type: str
    length:
      description: Decoded length in bytes, or null.
      type: int
    sha256:
      description: SHA-256 of the decoded key, hex, or null.
      type: str
"""

# The collection's helpers are imported in the functions that use them: ansible-core imports every filter
# file in each worker process, and compiles these modules from source each time (test_filter_loading.py).


def munge_key_info(b64_text):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.hpclab.cluster.plugins.module_utils._munge import key_info
    return key_info(b64_text)


class FilterModule:
    """MUNGE key filters."""

    def filters(self):
        return {"munge_key_info": munge_key_info}
