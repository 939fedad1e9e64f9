# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: nfs_ganesha_exports_missing
short_description: The exports of nfs_ganesha_exports that a running NFS-Ganesha does not serve
version_added: 0.2.0
description:
  - "NFS-Ganesha keeps running when it drops an export: one whose volume was not served when it started (after a
    power cut every node boots at once), or one removed over D-Bus. Its clients then get NFS4ERR_NOENT (v4) or
    MNT3ERR_ACCES (v3) while the unit is C(active). The nfs_ganesha role asks the daemon on every run
    (C(dbus-send ... org.ganesha.nfsd.exportmgr.ShowExports)) and restarts it where this filter names an export."
  - "An export is served when ShowExports lists its C(export_id) with its C(pseudo) path. An empty or failed answer
    (Ganesha not running, D-Bus not answering) serves nothing."
options:
  _input:
    description: The standard output of C(dbus-send --print-reply ... ShowExports).
    type: str
    required: true
  exports:
    description: C(nfs_ganesha_exports) (each with C(export_id) and C(pseudo)).
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Restart NFS-Ganesha where it does not serve every export
  ansible.builtin.systemd_service:
    name: nfs-ganesha
    state: restarted
  when: __served.stdout | default('') | hpclab.cluster.nfs_ganesha_exports_missing(nfs_ganesha_exports) | length > 0
"""

RETURN = r"""
_value:
  description: The exports (items of C(exports)) that ShowExports does not list; empty when every one is served.
  type: list
  elements: dict
"""

import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

# One export of ShowExports' reply: "uint16 ID" then, on the next line, "string "PSEUDO"".
_SERVED = re.compile(r'uint16 (\d+)\s+string "([^"]*)"')


def nfs_ganesha_exports_missing(showexports, exports):
    if not isinstance(exports, list) or not all(isinstance(e, Mapping) for e in exports):
        raise AnsibleFilterError(f"nfs_ganesha_exports_missing: exports must be a list of dicts, not {exports!r}")
    served = {(int(export_id), pseudo) for export_id, pseudo in _SERVED.findall(showexports or "")}
    return [export for export in exports if (int(export.get("export_id", -1)), export.get("pseudo")) not in served]


class FilterModule:
    def filters(self):
        return {"nfs_ganesha_exports_missing": nfs_ganesha_exports_missing}
