# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: file_checksum
short_description: The SHA-256 of files on the Ansible controller, found as ansible.builtin.copy finds its src
version_added: 0.1.0
description:
  - For each term, the file on the controller that M(ansible.builtin.copy) would copy for the same O(ansible.builtin.copy#module:src)
    (a relative path is looked up in the role's and the playbook's C(files/) directories, as copy looks it up),
    and its SHA-256 as hex digits, the digest M(hpclab.cluster.host_state_info) reads of the copy on the node.
  - An empty string where no such file is found, so that a comparison with the node's copy finds it different
    and the copy task then fails naming the missing source.
  - Read in chunks, in the worker that templates it, with no module call (a C(stat) or an C(_info) module delegated
    to the controller costs a round of its own).
options:
  _terms:
    description: Paths of files on the controller, absolute or relative as copy's O(ansible.builtin.copy#module:src).
    type: list
    elements: path
    required: true
"""

EXAMPLES = r"""
- name: GGUF files from the controller, only where the node's copy differs (its checksum from the role's read)
  ansible.builtin.copy:
    src: "{{ item.gguf_src }}"
    dest: /var/lib/llm/models/{{ item.name }}.gguf
    mode: "0640"
  loop: "{{ models }}"
  when: node_read.paths['/var/lib/llm/models/' ~ item.name ~ '.gguf'].checksum | default('')
        != lookup('hpclab.cluster.file_checksum', item.gguf_src)
"""

RETURN = r"""
_raw:
  description: The SHA-256 of each term's file, as hex digits; an empty string where no file is found.
  type: list
  elements: str
"""

import os

from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase

from ansible_collections.hpclab.cluster.plugins.module_utils._digest import sha256_file


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        checksums = []
        for term in terms:
            try:
                found = self.find_file_in_search_path(variables, "files", term, ignore_missing=True)
            except AnsibleError:
                found = None
            try:
                checksums.append(sha256_file(found) if found and os.path.isfile(found) else "")
            except OSError as e:
                raise AnsibleError(f"cannot read {found}: {e}") from e
        return checksums
