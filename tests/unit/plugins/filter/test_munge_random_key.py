"""munge_random_key: a fresh key of the asked length that munge_key_info (and so munged) accepts."""

from __future__ import annotations

import base64

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.munge_key_info import munge_key_info
from ansible_collections.hpclab.cluster.plugins.filter.munge_random_key import munge_random_key


@pytest.mark.parametrize("length", [32, 128, "128", 1024])
def test_key_of_the_asked_length_is_valid(length):
    key = munge_random_key(length)
    assert len(base64.b64decode(key)) == int(length)
    assert munge_key_info(key)["valid"] is True


def test_every_call_gives_another_key():
    assert len({munge_random_key(128) for attempt in range(20)}) == 20


@pytest.mark.parametrize("length,words", [(31, "31 bytes"), (1025, "1025 bytes"), ("many", "'many'"), (None, "None")])
def test_lengths_munged_refuses_fail_naming_them(length, words):
    with pytest.raises(AnsibleFilterError, match=words):
        munge_random_key(length)
