# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    """The input of the filters that read one community.docker.docker_host_info result, written once."""

    DOCUMENTATION = r"""
options:
  _input:
    description: The registered result of C(community.docker.docker_host_info).
    type: dict
    required: true
"""
