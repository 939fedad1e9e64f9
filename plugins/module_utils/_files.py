# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""File helpers shared by the collection's modules: atomic writes and owner/group names.

This module util is PRIVATE to the collection: it may change without notice.
"""

from __future__ import annotations

import os
import tempfile


def write_atomically(path: str, content: bytes, uid: int, gid: int, mode: int) -> None:
    """Write CONTENT to PATH through a temporary file in PATH's own directory (0600 from birth), given
    UID, GID and MODE before it replaces PATH, so that no reader ever sees a partial or open file."""
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.chown(tmp, uid, gid)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def id_name(lookup, ident: int) -> str:
    """The name of a uid or gid (LOOKUP is pwd.getpwuid or grp.getgrgid), or the number when it has none."""
    try:
        return lookup(ident)[0]
    except KeyError:
        return str(ident)


def read_file(path: str) -> tuple[os.stat_result, bytes] | None:
    """PATH's stat and content, or None when it does not exist."""
    try:
        st = os.stat(path)
        with open(path, "rb") as handle:
            return st, handle.read()
    except FileNotFoundError:
        return None
