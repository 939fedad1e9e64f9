# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure helpers for the MUNGE key: validation, fingerprints and the write plan.

This module util is PRIVATE to the collection: it may change without notice.
"""

from __future__ import annotations

import base64
import binascii
import hashlib

# munged refuses keys outside these bounds (MUNGE 0.5.14+: MUNGE_KEY_LEN_MIN/MAX in src/common/munge_defs.h).
KEY_MIN_BYTES = 32
KEY_MAX_BYTES = 1024


class MungeKeyError(ValueError):
    """A supplied key that munged would not accept."""


def decode_key(b64_text: str) -> bytes:
    """Decode a base64 MUNGE key and check its length.

    Whitespace (line breaks from ``base64`` without ``-w0``, a trailing newline from a vault file) is
    ignored. Raises ``MungeKeyError`` with a reason a person can act on.
    """
    if not isinstance(b64_text, str):
        raise MungeKeyError(f"must be a base64 string, got {type(b64_text).__name__}")
    compact = "".join(b64_text.split())
    if not compact:
        raise MungeKeyError("is empty")
    try:
        raw = base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise MungeKeyError(f"is not valid base64 ({exc})") from None
    if len(raw) < KEY_MIN_BYTES:
        raise MungeKeyError(f"decodes to {len(raw)} bytes; munged needs at least {KEY_MIN_BYTES}")
    if len(raw) > KEY_MAX_BYTES:
        raise MungeKeyError(f"decodes to {len(raw)} bytes; munged accepts at most {KEY_MAX_BYTES}")
    return raw


def fingerprint(raw: bytes) -> str:
    """SHA-256 of the key bytes, hex: safe to print and compare, reveals nothing of the key."""
    return hashlib.sha256(raw).hexdigest()


def key_info(b64_text: str) -> dict:
    """What the role's preflight needs to know of a supplied key, without the key itself."""
    try:
        raw = decode_key(b64_text)
    except MungeKeyError as exc:
        return {"valid": False, "error": str(exc), "length": None, "sha256": None}
    return {"valid": True, "error": None, "length": len(raw), "sha256": fingerprint(raw)}


def plan_key(current: dict | None, desired_sha256: str, owner: str, group: str, mode: int, rotate: bool) -> dict:
    """Decide what to do with the key file.

    ``current`` is None when no file exists, else ``{"sha256", "owner", "group", "mode"}``.
    Returns ``{"write": bool, "attributes": bool, "refused": str | None}``: ``write`` replaces the
    content, ``attributes`` only fixes owner/group/mode, ``refused`` explains why a differing key is
    left alone (another daemon may still use it) unless ``rotate`` is set.
    """
    if current is None:
        return {"write": True, "attributes": False, "refused": None}
    if current["sha256"] != desired_sha256:
        if not rotate:
            return {
                "write": False,
                "attributes": False,
                "refused": (
                    f"existing key (sha256 {current['sha256'][:12]}) differs from the cluster key "
                    f"(sha256 {desired_sha256[:12]}); set rotate=true to replace it"
                ),
            }
        return {"write": True, "attributes": False, "refused": None}
    attributes = (current["owner"], current["group"], current["mode"]) != (owner, group, mode)
    return {"write": False, "attributes": attributes, "refused": None}
