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
from collections.abc import Mapping

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


KEY_OWNER = "munge"
KEY_MODE = "0400"


def _key_in_place(stat: dict, sha256: str) -> bool:
    """A stat result (ansible.builtin.stat's ``stat``) of the key file that already holds the cluster key."""
    return (
        bool(stat.get("exists"))
        and stat.get("checksum") == sha256
        and (stat.get("pw_name"), stat.get("gr_name"), stat.get("mode")) == (KEY_OWNER, KEY_OWNER, KEY_MODE)
    )


def plan_cluster(keys: dict, key: str = "", rotate: bool = False, group_hosts=(), group: str = "munge",
                 generated_key_bytes=128) -> dict:
    """The cluster key and what each host needs, from every host's key as ``ansible.builtin.stat`` saw it.

    ``keys``: {host: stat dict (exists, checksum sha256, pw_name, gr_name, mode)} for the hosts of the
    play. ``key``: the supplied base64 key or "". Returns ``{"problems": [str], "sha256": str,
    "source": str, "write": [host]}``: ``sha256`` the cluster key's fingerprint ("" when a new key is
    to be generated), ``source`` the first host that holds it ("" when none does), ``write`` the hosts
    whose key is missing, different or has the wrong owner or mode. Each problem names the hosts, the
    variable and the fix.
    """
    if not isinstance(keys, Mapping) or not all(isinstance(s, Mapping) for s in keys.values()):
        raise TypeError(f"the input must map each host to its key file's stat result, got {keys!r}")
    key = key or ""
    rotate = bool(rotate)
    group_hosts = list(group_hosts or [])
    problems = []
    outside = [h for h in keys if h not in group_hosts]
    if outside:
        problems.append(
            f"{', '.join(outside)} run(s) the munge role but is not in the inventory group '{group}' (variable "
            f"munge_group). Fix: add the host to that group, or set munge_group to the group that lists every "
            f"host sharing the key."
        )
    existing = {h: s["checksum"] for h, s in keys.items() if s.get("exists") and s.get("checksum")}
    distinct = sorted(set(existing.values()), key=list(existing.values()).index)
    sha256 = ""
    supplied_ok = True
    if key:
        info = key_info(key)
        supplied_ok = info["valid"]
        if not supplied_ok:
            problems.append(
                f"munge_key {info['error']}. Fix: set munge_key to the base64 of {KEY_MIN_BYTES} to {KEY_MAX_BYTES} "
                "random bytes, e.g. `head -c 128 /dev/urandom | base64 -w0 | ansible-vault encrypt_string "
                "--stdin-name munge_key`, or leave it empty so that the role generates one."
            )
        sha256 = info["sha256"] or ""
    else:
        try:
            size = int(generated_key_bytes)
        except (TypeError, ValueError):
            size = -1
        if not KEY_MIN_BYTES <= size <= KEY_MAX_BYTES:
            problems.append(
                f"munge_generated_key_bytes is {generated_key_bytes}; munged accepts {KEY_MIN_BYTES} to "
                f"{KEY_MAX_BYTES} bytes. Fix: use 128."
            )
        if len(distinct) == 1:
            sha256 = distinct[0]
        elif len(distinct) > 1 and rotate:
            sha256 = distinct[0]
    mismatched = {h: s for h, s in existing.items() if s != sha256} if sha256 else existing
    if supplied_ok and not rotate and mismatched and (sha256 or len(distinct) > 1):
        holders = "; ".join(
            f"{', '.join(h for h, s in mismatched.items() if s == fp)} (sha256 {fp[:12]})"
            for fp in sorted(set(mismatched.values()), key=list(mismatched.values()).index)
        )
        if sha256:
            head = f"Hosts {', '.join(mismatched)} hold a MUNGE key that differs from the cluster key (sha256 {sha256[:12]}): "
            fix = "Fix: set munge_rotate=true to replace it (then restart every Slurm daemon); or set munge_key to the key those hosts already share."
        else:
            head = "The hosts hold different MUNGE keys and munge_key is not set: "
            fix = (
                "Fix: set munge_rotate=true to replace it (then restart every Slurm daemon), together with munge_key "
                f"to choose the key, or alone to adopt the key of {next(iter(mismatched))}; or set munge_key to the "
                "key those hosts already share."
            )
        problems.append(
            f"{head}{holders}. munged and Slurm daemons on those hosts may still use their key, so the role will not replace it. {fix}"
        )
    source = next((h for h, s in existing.items() if s == sha256), "") if sha256 else ""
    write = [h for h, s in keys.items() if not sha256 or not _key_in_place(s, sha256)]
    return {"problems": problems, "sha256": sha256, "source": source, "write": write}
