from __future__ import annotations

import base64

from ansible_collections.hpclab.cluster.plugins.filter.munge_key_info import FilterModule


def test_registered_and_fingerprints():
    f = FilterModule().filters()["munge_key_info"]
    info = f(base64.b64encode(b"k" * 64).decode())
    assert info["valid"] is True
    assert info["length"] == 64
    assert len(info["sha256"]) == 64


def test_invalid_key_reports_reason():
    f = FilterModule().filters()["munge_key_info"]
    assert f("c2hvcnQ=")["error"] == "decodes to 5 bytes; munged needs at least 32"
