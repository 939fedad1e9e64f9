from __future__ import annotations

import base64
import hashlib

import pytest

from ansible_collections.hpclab.cluster.plugins.module_utils._munge import (
    MungeKeyError,
    decode_key,
    fingerprint,
    key_info,
    plan_key,
)

KEY = bytes(range(256))[:128]
KEY_B64 = base64.b64encode(KEY).decode()
SHA = hashlib.sha256(KEY).hexdigest()


@pytest.mark.parametrize(
    "text,reason",
    [
        ("", "is empty"),
        ("   \n", "is empty"),
        ("not base64!!", "is not valid base64"),
        ("YWJj", "decodes to 3 bytes; munged needs at least 32"),
        (base64.b64encode(b"x" * 31).decode(), "decodes to 31 bytes"),
        (base64.b64encode(b"x" * 1025).decode(), "at most 1024"),
    ],
)
def test_decode_key_rejects(text, reason):
    with pytest.raises(MungeKeyError, match=reason):
        decode_key(text)


def test_decode_key_rejects_non_string():
    with pytest.raises(MungeKeyError, match="must be a base64 string"):
        decode_key(None)


@pytest.mark.parametrize("size", [32, 128, 1024])
def test_decode_key_accepts_bounds(size):
    raw = b"\x00\xff" * (size // 2)
    assert decode_key(base64.b64encode(raw).decode()) == raw


def test_decode_key_ignores_line_breaks():
    wrapped = "\n".join(KEY_B64[i:i + 76] for i in range(0, len(KEY_B64), 76)) + "\n"
    assert decode_key(wrapped) == KEY


def test_fingerprint_is_sha256_hex():
    assert fingerprint(KEY) == SHA


def test_key_info_valid():
    assert key_info(KEY_B64) == {"valid": True, "error": None, "length": 128, "sha256": SHA}


def test_key_info_invalid_never_raises():
    info = key_info("short")
    assert info["valid"] is False
    assert info["sha256"] is None
    assert "base64" in info["error"]


CURRENT_OK = {"sha256": SHA, "owner": "munge", "group": "munge", "mode": 0o400}


@pytest.mark.parametrize(
    "current,rotate,expected",
    [
        (None, False, {"write": True, "attributes": False, "refused": None}),
        (CURRENT_OK, False, {"write": False, "attributes": False, "refused": None}),  # converged: nothing
        (CURRENT_OK, True, {"write": False, "attributes": False, "refused": None}),
        (dict(CURRENT_OK, mode=0o600), False, {"write": False, "attributes": True, "refused": None}),
        (dict(CURRENT_OK, owner="root"), False, {"write": False, "attributes": True, "refused": None}),
        (dict(CURRENT_OK, sha256="0" * 64), True, {"write": True, "attributes": False, "refused": None}),
    ],
)
def test_plan_key(current, rotate, expected):
    assert plan_key(current, SHA, "munge", "munge", 0o400, rotate) == expected


def test_plan_key_refuses_foreign_key_without_rotate():
    plan = plan_key(dict(CURRENT_OK, sha256="0" * 64), SHA, "munge", "munge", 0o400, False)
    assert plan["write"] is False
    assert "rotate=true" in plan["refused"]
    assert "000000000000" in plan["refused"]
