# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: llm_gateway_home_plan
short_description: Which users' homes may receive their gateway key file, from one read of the paths involved
version_added: 0.4.0
description:
  - The llm_gateway role writes each user's key to C(HOME/.config/hpclab/llm.env) as root. A home belongs to its
    user, who could have made C(.config), C(.config/hpclab) or C(llm.env) a symbolic link to a file of the system, and
    root following it would hand that file to the user. So the role reads every path once (an lstat, which does
    not follow a final symbolic link; the home itself is read with a trailing C(/), which follows a home that the
    administrator made a link) and writes only where each path is absent or of the right type.
  - Input is that read, either as M(hpclab.cluster.host_state_info) returns it (its C(paths), each path with
    C(exists), C(isdir), C(isreg), C(islnk); it does not follow a final link either), or as the output of
    C(stat --printf='%F\t%n\n'), one line C(TYPE<TAB>PATH) per path that exists (a missing path has no line).
  - "Returns C(write): the users whose home is a directory and whose C(.config) and C(.config/hpclab) are absent or
    directories and whose C(llm.env) is absent or a regular file; C(missing): the users without a home directory;
    C(refused): the users with a link or another type on the way. Each list keeps the order of O(users)."
options:
  _input:
    description:
      - "The read of PATHS, where PATHS are, for each user in O(users), C(HOME_ROOT/NAME/), C(HOME_ROOT/NAME/.config),
        C(HOME_ROOT/NAME/.config/hpclab) and C(HOME_ROOT/NAME/.config/hpclab/llm.env): the C(paths) dictionary of
        M(hpclab.cluster.host_state_info), or the lines of C(stat --printf='%F\\t%n\\n' -- PATHS...)."
    type: raw
    required: true
  users:
    description: The user names, in order.
    type: list
    elements: str
    required: true
  home_root:
    description: The directory holding the homes (C(llm_gateway_home_root)).
    type: str
    required: true
"""

EXAMPLES = r"""
# ["directory\t/gfsv/home/alice/", "symbolic link\t/gfsv/home/bob/.config"]
#   | hpclab.cluster.llm_gateway_home_plan(users=["alice", "bob", "carol"], home_root="/gfsv/home")
# => {"write": ["alice"], "missing": ["carol"], "refused": ["bob"]}
- name: Where each user's key file may be written
  ansible.builtin.set_fact:
    __plan: >-
      {{ __read.paths | hpclab.cluster.llm_gateway_home_plan(users=['alice', 'bob'], home_root='/gfsv/home') }}
"""

RETURN = r"""
_value:
  description: C(write), C(missing), C(refused), each a list of user names.
  type: dict
"""

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

# The paths read for each user, after HOME_ROOT/NAME, and the stat types each may have when present. The home is read
# with a trailing '/', which makes stat follow a home that is a link (the administrator's choice, not the user's).
PATHS = (
    ("/", ("directory",)),
    ("/.config", ("directory",)),
    ("/.config/hpclab", ("directory",)),
    ("/.config/hpclab/llm.env", ("regular file", "regular empty file")),
)


def _kind(state) -> str:
    """host_state_info's read of a path as stat's %F names its type (only the types PATHS accepts matter)."""
    if not isinstance(state, Mapping):
        raise AnsibleFilterError(f"llm_gateway_home_plan: {state!r} is not a path as host_state_info reads it")
    return ("directory" if state.get("isdir") else "regular file" if state.get("isreg")
            else "symbolic link" if state.get("islnk") else "other")


def llm_gateway_home_plan(lines, users, home_root):
    """Filter entry point: see DOCUMENTATION."""
    if isinstance(lines, Mapping):
        found = {path: _kind(state) for path, state in lines.items() if not isinstance(state, Mapping) or state.get("exists")}
        return _plan(found, users, home_root)
    if isinstance(lines, str) or not isinstance(lines, (list, tuple)):
        raise AnsibleFilterError(
            f"llm_gateway_home_plan: input must be host_state_info's paths or the lines of stat's output, got {lines!r}")
    found = {}
    for line in lines:
        kind, sep, path = str(line).partition("\t")
        if not sep or not path:
            raise AnsibleFilterError(f"llm_gateway_home_plan: {line!r} is not TYPE<TAB>PATH (stat --printf='%F\\t%n\\n')")
        found[path] = kind
    return _plan(found, users, home_root)


def _plan(found, users, home_root):
    root = home_root.rstrip("/")
    plan = {"write": [], "missing": [], "refused": []}
    for name in users:
        home = f"{root}/{name}"
        if found.get(home + "/") != "directory":
            plan["missing"].append(name)
            continue
        ok = all(found.get(home + suffix, types[0]) in types for suffix, types in PATHS[1:])
        plan["write" if ok else "refused"].append(name)
    return plan


class FilterModule:
    """Where the llm_gateway role may write the users' key files."""

    def filters(self):
        return {"llm_gateway_home_plan": llm_gateway_home_plan}
