# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment:
    """What check_mode, diff_mode and idempotent mean, written once. A module that extends this
    fragment states its own support (and, in details, how) for each attribute; a read-only module
    extends READ_ONLY too, which states it once for all of them."""

    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check mode and return changed status prediction without modifying target.
  diff_mode:
    description: Returns details on what has changed (or possibly needs changing in check mode), when in diff mode.
  idempotent:
    description: When run twice in a row outside check mode, with the same arguments, the second invocation indicates no change.
"""

    # A module that only reads its host (host_state_info, node_hardware_facts).
    READ_ONLY = r"""
options: {}
attributes:
  check_mode:
    support: full
    details: Reads the same in check mode.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: Never changes anything.
"""
