"""The munge role's whole-cluster filters: munge_cluster_problems and munge_cluster_key."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.munge_cluster_key import FilterModule as KeyFilters
from ansible_collections.hpclab.cluster.plugins.filter.munge_cluster_problems import FilterModule as ProblemFilters

PROBLEMS = ProblemFilters().filters()["munge_cluster_problems"]
CLUSTER_KEY = KeyFilters().filters()["munge_cluster_key"]

HOSTS = ["c1", "n1", "n2"]


def _raw(seed, size=128):
    """Random-looking key bytes, the same on every run."""
    out = b""
    counter = 0
    while len(out) < size:
        out += hashlib.sha512(f"{seed}-{counter}".encode()).digest()
        counter += 1
    return out[:size]


KEY_A = _raw("a")
KEY_B = _raw("b")
KEY_C = _raw("c")
SHA_A = hashlib.sha256(KEY_A).hexdigest()
SHA_B = hashlib.sha256(KEY_B).hexdigest()
SHA_C = hashlib.sha256(KEY_C).hexdigest()
B64_A = base64.b64encode(KEY_A).decode()
B64_C = base64.b64encode(KEY_C).decode()


def stat(raw=None, owner="munge", group="munge", mode="0400"):
    """What ansible.builtin.stat (checksum_algorithm=sha256) returns under .stat for the key file."""
    if raw is None:
        return {"exists": False}
    return {"exists": True, "checksum": hashlib.sha256(raw).hexdigest(), "pw_name": owner, "gr_name": group, "mode": mode}


# ansible.builtin.stat's real results, as roles/munge/tasks/preflight.yml reads the key (fixtures/munge/README.md).
CAPTURED = json.loads((Path(__file__).parents[2] / "fixtures" / "munge" / "stat-munge-key.json").read_text())
CAPTURED_SHA = "c3249e66296ea5a13c1b8e76f842bbb9a73cc1bff07857444147186faa9b5da2"  # sha256sum of that key file


def problems(keys, **kwargs):
    kwargs.setdefault("group_hosts", HOSTS)
    return PROBLEMS(keys, **kwargs)


def cluster_key(keys, **kwargs):
    kwargs.setdefault("group_hosts", HOSTS)
    return CLUSTER_KEY(keys, **kwargs)


def test_the_fixture_keys_are_real_sha256_values():
    for sha in (SHA_A, SHA_B, SHA_C):
        assert len(sha) == 64
        int(sha, 16)
    assert len({SHA_A, SHA_B, SHA_C}) == 3


def test_registered():
    assert set(ProblemFilters().filters()) == {"munge_cluster_problems"}
    assert set(KeyFilters().filters()) == {"munge_cluster_key"}


# --- munge_cluster_problems: no problem -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "keys,kwargs",
    [
        pytest.param({}, {}, id="no-hosts"),
        pytest.param({h: stat() for h in HOSTS}, {}, id="no-host-has-a-key"),
        pytest.param({h: stat(KEY_A) for h in HOSTS}, {}, id="all-share-a-key"),
        pytest.param({"c1": stat(KEY_A), "n1": stat(), "n2": stat(KEY_A)}, {}, id="one-host-without-key"),
        pytest.param({h: stat(KEY_A) for h in HOSTS}, {"key": B64_A}, id="supplied-key-everywhere"),
        pytest.param({h: stat() for h in HOSTS}, {"key": B64_A}, id="supplied-key-nowhere-yet"),
        pytest.param({"c1": stat(KEY_A), "n1": stat()}, {"key": B64_A}, id="supplied-key-partly"),
        pytest.param({h: stat(KEY_A, owner="root", mode="0644") for h in HOSTS}, {}, id="wrong-owner-is-no-problem"),
        pytest.param({"c1": stat(KEY_A), "n1": stat(KEY_B)}, {"rotate": True}, id="rotate-different-keys"),
        pytest.param({"c1": stat(KEY_A), "n1": stat(KEY_B)}, {"rotate": True, "key": B64_C}, id="rotate-to-supplied"),
        pytest.param({h: stat(KEY_A) for h in HOSTS}, {"rotate": True, "key": B64_C}, id="rotate-all-to-supplied"),
        pytest.param({"c1": stat()}, {"generated_key_bytes": 32}, id="generated-min"),
        pytest.param({"c1": stat()}, {"generated_key_bytes": 1024}, id="generated-max"),
        pytest.param({"c1": stat()}, {"generated_key_bytes": "64"}, id="generated-as-text"),
        pytest.param({"c1": stat()}, {"key": B64_A, "generated_key_bytes": 8}, id="generated-ignored-with-key"),
        pytest.param({"c1": stat()}, {"key": base64.b64encode(_raw("x", 32)).decode()}, id="key-32-bytes"),
        pytest.param({"c1": stat()}, {"key": base64.b64encode(_raw("x", 1024)).decode()}, id="key-1024-bytes"),
        pytest.param({"c1": stat()}, {"key": B64_A[:40] + "\n" + B64_A[40:] + "\n"}, id="key-with-line-breaks"),
        pytest.param({"c1": stat()}, {"key": None}, id="key-none-is-empty"),
    ],
)
def test_no_problem(keys, kwargs):
    assert problems(keys, **kwargs) == []


def test_a_host_without_a_key_is_never_a_problem():
    keys = {"c1": stat(KEY_A), "n1": stat(KEY_A), "n2": stat()}
    assert problems(keys) == []
    assert problems(keys, key=B64_C, rotate=True) == []
    # a stat of a file whose checksum could not be read counts as "no key" as well
    assert problems({"c1": stat(KEY_A), "n1": {"exists": True}}) == []


# --- munge_cluster_problems: one problem each ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "keys,kwargs,expected",
    [
        pytest.param({"c1": stat(), "x9": stat()}, {}, ["x9 run(s) the munge role but is not in the inventory group 'munge'",
                                                        "munge_group"], id="host-outside-group"),
        pytest.param({"x8": stat(), "x9": stat()}, {"group": "keyring"}, ["x8, x9 run(s)", "group 'keyring'"],
                     id="hosts-outside-named-group"),
        pytest.param({"c1": stat()}, {"key": "not*base64!"}, ["munge_key is not valid base64"], id="key-not-base64"),
        pytest.param({"c1": stat()}, {"key": base64.b64encode(b"k" * 16).decode()},
                     ["munge_key decodes to 16 bytes; munged needs at least 32"], id="key-16-bytes"),
        pytest.param({"c1": stat()}, {"key": base64.b64encode(_raw("x", 31)).decode()},
                     ["munge_key decodes to 31 bytes; munged needs at least 32"], id="key-31-bytes"),
        pytest.param({"c1": stat()}, {"key": base64.b64encode(_raw("x", 1025)).decode()},
                     ["munge_key decodes to 1025 bytes; munged accepts at most 1024"], id="key-1025-bytes"),
        pytest.param({"c1": stat()}, {"key": "   \n"}, ["munge_key is empty"], id="key-only-whitespace"),
        pytest.param({"c1": stat()}, {"generated_key_bytes": 8}, ["munge_generated_key_bytes is 8"], id="generated-8"),
        pytest.param({"c1": stat()}, {"generated_key_bytes": 31}, ["munge_generated_key_bytes is 31"], id="generated-31"),
        pytest.param({"c1": stat()}, {"generated_key_bytes": 1025}, ["munge_generated_key_bytes is 1025"],
                     id="generated-1025"),
        pytest.param({"c1": stat()}, {"generated_key_bytes": "lots"}, ["munge_generated_key_bytes is lots"],
                     id="generated-not-a-number"),
        pytest.param({"c1": stat()}, {"generated_key_bytes": None}, ["munge_generated_key_bytes is None"],
                     id="generated-none"),
        pytest.param({"c1": stat(KEY_A)}, {"generated_key_bytes": 0}, ["munge_generated_key_bytes is 0"],
                     id="generated-checked-even-if-hosts-share-a-key"),
    ],
)
def test_one_problem(keys, kwargs, expected):
    found = problems(keys, **kwargs)
    assert len(found) == 1, found
    for part in expected:
        assert part in found[0], found
    assert "Fix:" in found[0]


def test_an_invalid_key_does_not_also_report_differing_hosts():
    found = problems({"c1": stat(KEY_A), "n1": stat(KEY_B)}, key="c2hvcnQ=")
    assert len(found) == 1
    assert found[0].startswith("munge_key decodes to 5 bytes")


@pytest.mark.parametrize(
    "keys,mismatched",
    [
        ({"c1": stat(KEY_A), "n1": stat(KEY_C), "n2": stat()}, ["c1"]),
        ({"c1": stat(KEY_A), "n1": stat(KEY_B), "n2": stat(KEY_C)}, ["c1", "n1"]),
        ({"c1": stat(KEY_A), "n1": stat(KEY_A), "n2": stat(KEY_A)}, ["c1", "n1", "n2"]),
    ],
)
def test_hosts_differing_from_the_supplied_key_need_rotate(keys, mismatched):
    found = problems(keys, key=B64_C)
    assert len(found) == 1, found
    message = found[0]
    assert f"Hosts {', '.join(mismatched)} hold a MUNGE key that differs from the cluster key (sha256 {SHA_C[:12]})" in message
    for host in mismatched:
        assert host in message
    assert "n2" not in message or "n2" in mismatched
    assert "munge_rotate" in message
    assert "Fix:" in message
    assert problems(keys, key=B64_C, rotate=True) == []


def test_hosts_holding_different_keys_without_a_supplied_key():
    keys = {"c1": stat(KEY_A), "n1": stat(KEY_B), "n2": stat(KEY_A), "n3": stat()}
    found = problems(keys, group_hosts=HOSTS + ["n3"])
    assert len(found) == 1, found
    message = found[0]
    assert "The hosts hold different MUNGE keys" in message
    assert f"c1, n2 (sha256 {SHA_A[:12]})" in message
    assert f"n1 (sha256 {SHA_B[:12]})" in message
    assert "n3" not in message
    assert "munge_rotate=true" in message
    assert "adopt the key of c1" in message
    assert "Fix:" in message
    # the full fingerprints are not needed to tell the keys apart, and are not printed
    assert SHA_A not in message and SHA_B not in message


def test_several_problems_at_once():
    keys = {"c1": stat(KEY_A), "n1": stat(KEY_B), "x9": stat()}
    found = problems(keys, generated_key_bytes=8)
    assert len(found) == 3, found
    assert "x9 run(s) the munge role" in found[0]
    assert "munge_generated_key_bytes is 8" in found[1]
    assert "The hosts hold different MUNGE keys" in found[2]
    assert all("Fix:" in p for p in found)


def test_default_group_hosts_is_empty_so_every_host_is_outside():
    found = PROBLEMS({"c1": stat(), "n1": stat()})
    assert len(found) == 1
    assert "c1, n1 run(s) the munge role" in found[0]


@pytest.mark.parametrize(
    "keys",
    [
        pytest.param(None, id="none"),
        pytest.param("c1", id="text"),
        pytest.param(["c1", "n1"], id="list"),
        pytest.param({"c1": None}, id="stat-none"),
        pytest.param({"c1": "exists"}, id="stat-text"),
    ],
)
@pytest.mark.parametrize("name", ["munge_cluster_problems", "munge_cluster_key"])
def test_bad_input_is_a_filter_error(keys, name):
    filters = {**ProblemFilters().filters(), **KeyFilters().filters()}
    with pytest.raises(AnsibleFilterError, match=f"{name}: the input must map each host to its key file's stat result"):
        filters[name](keys, group_hosts=HOSTS)


# --- munge_cluster_key ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "keys,kwargs,expected",
    [
        pytest.param(
            {"c1": stat(), "n1": stat(), "n2": stat()}, {},
            {"sha256": "", "source": "", "write": ["c1", "n1", "n2"]}, id="nobody-has-a-key-generate",
        ),
        pytest.param({}, {}, {"sha256": "", "source": "", "write": []}, id="no-hosts"),
        pytest.param(
            {"c1": stat(), "n1": stat(), "n2": stat()}, {"key": B64_A},
            {"sha256": SHA_A, "source": "", "write": ["c1", "n1", "n2"]}, id="supplied-nobody-has-it",
        ),
        pytest.param(
            {"c1": stat(), "n1": stat(KEY_A), "n2": stat(KEY_A)}, {"key": B64_A},
            {"sha256": SHA_A, "source": "n1", "write": ["c1"]}, id="supplied-source-is-first-holder",
        ),
        pytest.param(
            {"c1": stat(KEY_A), "n1": stat(KEY_A), "n2": stat(KEY_A)}, {},
            {"sha256": SHA_A, "source": "c1", "write": []}, id="shared-key-all-in-place",
        ),
        pytest.param(
            {"c1": stat(), "n1": stat(KEY_A), "n2": stat()}, {},
            {"sha256": SHA_A, "source": "n1", "write": ["c1", "n2"]}, id="shared-key-missing-on-some",
        ),
        pytest.param(
            {"c1": stat(KEY_A, owner="root"), "n1": stat(KEY_A, group="root"), "n2": stat(KEY_A, mode="0600")}, {},
            {"sha256": SHA_A, "source": "c1", "write": ["c1", "n1", "n2"]}, id="wrong-owner-group-mode",
        ),
        pytest.param(
            {"c1": stat(KEY_B), "n1": stat(KEY_A), "n2": stat(KEY_B)}, {"rotate": True},
            {"sha256": SHA_B, "source": "c1", "write": ["n1"]}, id="rotate-adopts-first-hosts-key",
        ),
        pytest.param(
            {"c1": stat(), "n1": stat(KEY_A), "n2": stat(KEY_B)}, {"rotate": True},
            {"sha256": SHA_A, "source": "n1", "write": ["c1", "n2"]}, id="rotate-first-host-with-a-key",
        ),
        pytest.param(
            {"c1": stat(KEY_A), "n1": stat(KEY_B)}, {"rotate": True, "key": B64_C},
            {"sha256": SHA_C, "source": "", "write": ["c1", "n1"]}, id="rotate-to-supplied-key",
        ),
        pytest.param(
            {"c1": stat(KEY_A), "n1": stat(KEY_C)}, {"rotate": True, "key": B64_C},
            {"sha256": SHA_C, "source": "n1", "write": ["c1"]}, id="rotate-to-supplied-key-some-hold-it",
        ),
        pytest.param(
            {"c1": stat(KEY_A), "n1": {"exists": True}}, {},
            {"sha256": SHA_A, "source": "c1", "write": ["n1"]}, id="no-checksum-counts-as-missing",
        ),
    ],
)
def test_cluster_key(keys, kwargs, expected):
    assert cluster_key(keys, **kwargs) == expected


def test_supplied_key_fingerprint_is_sha256_of_decoded_bytes():
    result = cluster_key({"c1": stat()}, key=B64_C)
    assert result["sha256"] == hashlib.sha256(base64.b64decode(B64_C)).hexdigest() == SHA_C
    # line breaks and a trailing newline (vault files, base64 without -w0) do not change the fingerprint
    wrapped = "\n".join(B64_C[i:i + 76] for i in range(0, len(B64_C), 76)) + "\n"
    assert cluster_key({"c1": stat()}, key=wrapped)["sha256"] == SHA_C


def test_differing_keys_without_rotate_have_no_cluster_key():
    # munge_cluster_problems reports this case; the key filter then has nothing to adopt
    result = cluster_key({"c1": stat(KEY_A), "n1": stat(KEY_B)})
    assert result == {"sha256": "", "source": "", "write": ["c1", "n1"]}


def test_an_invalid_supplied_key_has_no_fingerprint():
    assert cluster_key({"c1": stat(KEY_A)}, key="not*base64!") == {"sha256": "", "source": "", "write": ["c1"]}


def test_the_key_filter_returns_only_the_plan():
    assert set(cluster_key({"c1": stat(KEY_A), "x9": stat()}, generated_key_bytes=8)) == {"sha256", "source", "write"}


# --- munge_cluster_problems rule 5 (issue 18): munge_packages -------------------------------------------------------


@pytest.mark.parametrize(
    "packages",
    [
        pytest.param(["munge"], id="default"),
        pytest.param(["munge", "libmunge2"], id="with-the-library"),
        pytest.param(["munge=0.5.15-2+deb12u1"], id="pinned-version"),
        pytest.param(["munge:arm64"], id="architecture"),
        pytest.param(None, id="not-given"),
    ],
)
def test_packages_no_problem(packages):
    assert problems({h: stat(KEY_A) for h in HOSTS}, packages=packages, host="n1") == []


@pytest.mark.parametrize(
    "packages,expected",
    [
        pytest.param([], ["n1: munge_packages lacks munge, the package of the daemon the role runs"], id="empty"),
        pytest.param(["libmunge2"], ["lacks munge"], id="without-munge"),
        pytest.param(["munge", "Munge Tools"], ["entry 'Munge Tools' is not a Debian package name"], id="blank-and-capital"),
        pytest.param(["munge", "munge;reboot"], ["entry 'munge;reboot'"], id="semicolon"),
        pytest.param("munge", ["munge_packages is not a list of package names ('munge')"], id="a-string"),
        pytest.param(["munge", 7], ["entry 7 is not a Debian package name"], id="a-number"),
    ],
)
def test_packages_one_problem(packages, expected):
    found = problems({h: stat(KEY_A) for h in HOSTS}, packages=packages, host="n1")
    assert len(found) == 1, found
    for part in expected:
        assert part in found[0], found
    assert found[0].startswith("n1: munge_packages") and "Fix:" in found[0]


def test_packages_problem_comes_after_the_key_problems_and_names_no_host_without_one():
    found = problems({h: stat(KEY_A) for h in HOSTS}, key="not*base64", packages=[])
    assert len(found) == 2, found
    assert found[0].startswith("munge_key is not valid base64")
    assert found[1].startswith("munge_packages lacks munge")


# --- the filters on ansible.builtin.stat's real results (fixtures/munge) --------------------------------------------


def test_captured_stat_has_the_fields_the_filters_read():
    for name in ("package_key_0600", "cluster_key_0400"):
        assert {"exists", "checksum", "pw_name", "gr_name", "mode"} <= set(CAPTURED[name]), name
    assert CAPTURED["cluster_key_0400"]["checksum"] == CAPTURED_SHA
    assert CAPTURED["no_key"] == {"exists": False}


def test_captured_cluster_key_in_place_and_a_new_host():
    keys = {"c1": CAPTURED["cluster_key_0400"], "n1": CAPTURED["cluster_key_0400"], "n2": CAPTURED["no_key"]}
    assert problems(keys) == []
    assert cluster_key(keys) == {"sha256": CAPTURED_SHA, "source": "c1", "write": ["n2"]}


def test_captured_package_key_0600_is_written_again():
    # The package's own key, mode 0600, counts as a key held: the cluster key is its own, the mode is fixed.
    keys = {"c1": CAPTURED["package_key_0600"]}
    assert problems(keys) == []
    assert cluster_key(keys) == {"sha256": CAPTURED["package_key_0600"]["checksum"], "source": "c1", "write": ["c1"]}


def test_captured_hosts_with_different_keys_are_refused():
    keys = {"c1": CAPTURED["cluster_key_0400"], "n1": CAPTURED["package_key_0600"]}
    found = problems(keys)
    assert len(found) == 1 and "The hosts hold different MUNGE keys" in found[0], found
    assert f"c1 (sha256 {CAPTURED_SHA[:12]})" in found[0]


def test_captured_supplied_key_on_fresh_hosts():
    keys = {h: CAPTURED["no_key"] for h in HOSTS}
    assert problems(keys, key=B64_A) == []
    assert cluster_key(keys, key=B64_A) == {"sha256": SHA_A, "source": "", "write": HOSTS}
