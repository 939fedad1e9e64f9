# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure helpers shared by the roles' check filters (glusterfs_problems, nfs_ganesha_problems).

This plugin util is PRIVATE to the collection: it may change without notice.
"""

from __future__ import annotations

import re

# Characters a path may hold where it is written into a daemon's configuration or an fstab line:
# no blanks, quotes, ';', braces or '#'.
PATH_CHARS = re.compile(r"^[A-Za-z0-9._@+=,:~/-]+$")


def to_int(value, default=None):
    """VALUE as an int; DEFAULT when it is None; None when it is a bool or not a number."""
    if value is None:
        return default
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def not_canonical(parts) -> bool:
    """Whether path PARTS (split on '/') hold an empty, '.' or '..' part."""
    return any(p in ("", ".", "..") for p in parts)
