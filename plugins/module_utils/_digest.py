# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The SHA-256 of a file, read in blocks: the digest module host_state_info reads of a file on a node and lookup
file_checksum of one on the controller, one code, so that the two always compare equal for the same bytes.

This module util is PRIVATE to the collection: it may change without notice.
"""

from __future__ import annotations

import hashlib


def sha256_file(path: str, block: int = 1 << 20) -> str:
    """The SHA-256 of the file PATH as hex digits."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(block), b""):
            digest.update(chunk)
    return digest.hexdigest()
