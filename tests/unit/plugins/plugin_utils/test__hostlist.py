from __future__ import annotations

import random
import time

# python-hostlist (pinned in requirements-dev.txt), for the cross-checks below: a plain import, so that a
# missing package fails this module instead of skipping the checks unseen.
import hostlist as python_hostlist
import pytest

from ansible_collections.hpclab.cluster.plugins.plugin_utils._hostlist import (
    MAX_HOSTS,
    HostlistError,
    compress_hostlist,
    expand_hostlist,
    natural_key,
)


@pytest.mark.parametrize(
    "expression,names",
    [
        ("n1", ["n1"]),
        ("login", ["login"]),
        ("n[1-3]", ["n1", "n2", "n3"]),
        ("n[01-10]", ["n01", "n02", "n03", "n04", "n05", "n06", "n07", "n08", "n09", "n10"]),
        ("n[9-11]", ["n9", "n10", "n11"]),
        ("n[1-010]", [f"n{i}" for i in range(1, 11)]),  # width comes from the low bound, as in Slurm
        ("n[098-101]", ["n098", "n099", "n100", "n101"]),
        ("a[01-03,7]", ["a01", "a02", "a03", "a7"]),
        ("a[01-03,7],b[1-2]", ["a01", "a02", "a03", "a7", "b1", "b2"]),
        ("rack[1-2]-gpu", ["rack1-gpu", "rack2-gpu"]),
        ("rack[1-2]-n[01-02]", ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]),
        ("[1-2]", ["1", "2"]),
        ("n[5]", ["n5"]),
        ("n[0-0]", ["n0"]),
        ("n[1, 3]", ["n1", "n3"]),
        (" n1 , n2 ", ["n1", "n2"]),
        ("b1,a1,b1", ["b1", "a1"]),
        ("n[1-3],n2", ["n1", "n2", "n3"]),
        ("n[1,1-2]", ["n1", "n2"]),
        ("node-1.example.org,node-2.example.org", ["node-1.example.org", "node-2.example.org"]),
    ],
)
def test_expand(expression, names):
    assert expand_hostlist(expression) == names


@pytest.mark.parametrize(
    "expression,reason",
    [
        ("", "is empty"),
        ("   ", "is empty"),
        ("n[1-2", "unbalanced brackets"),
        ("n1-2]", "unbalanced brackets"),
        ("n]1[", "unbalanced brackets"),
        ("n[1[2]]", "nested brackets"),
        ("n[3-1]", "reversed range '3-1'"),
        ("n[]", "empty brackets"),
        ("n[a-b]", "bad range 'a-b'"),
        ("n[1-]", "bad range '1-'"),
        ("n[-1]", "bad range '-1'"),
        ("n[1--2]", "bad range '1--2'"),
        ("n[1,,2]", "bad range ''"),
        ("a,,b", "empty host name"),
        ("a,", "empty host name"),
        (",a", "empty host name"),
        ("a b", "whitespace inside host name 'a b'"),
        ("x y[1-2]", "whitespace inside host name"),
        ("n[0-70000]", "more than 65536 hosts"),
        ("a[0-999]b[0-999]", f"more than {MAX_HOSTS} hosts"),
    ],
)
def test_expand_rejects(expression, reason):
    with pytest.raises(HostlistError, match=reason) as info:
        expand_hostlist(expression)
    assert repr(expression) in str(info.value) or expression.strip() == ""


@pytest.mark.parametrize("value", [None, 5, ["n1"], b"n1"])
def test_expand_rejects_non_string(value):
    with pytest.raises(HostlistError, match="must be a string"):
        expand_hostlist(value)


@pytest.mark.parametrize(
    "names,hostlist",
    [
        (["n1"], "n1"),
        (["login"], "login"),
        (["n1", "n2", "n3"], "n[1-3]"),
        (["n03", "n01", "n02"], "n[01-03]"),
        (["n01", "n01", "n02"], "n[01-02]"),
        (["a01", "a02", "a03", "a7", "b1", "b2"], "a[01-03,7],b[1-2]"),
        (["n9", "n10", "n11"], "n[9-11]"),
        (["n08", "n09", "n10", "n11"], "n[08-11]"),
        (["n099", "n100"], "n[099-100]"),
        (["n99", "n100"], "n[99-100]"),
        (["n1", "n01"], "n[1,01]"),
        (["n1", "n01", "n2", "x", "n10"], "n[01,1-2,10],x"),
        (["n0", "n00", "n000"], "n[0,00,000]"),
        (["n2", "n10", "n1"], "n[1-2,10]"),
        (["gpu1", "n01", "n02", "n03"], "gpu1,n[01-03]"),
        (["rack1-gpu", "rack2-gpu"], "rack1-gpu,rack2-gpu"),  # Slurm reads no text after ']'
        (["rack1-n01", "rack1-n02", "rack2-n01"], "rack1-n[01-02],rack2-n01"),
        (["n[1-3]", "n4"], "n[1-4]"),
        (["a,b1", "b2"], "a,b[1-2]"),
        (("n2", "n1"), "n[1-2]"),
        (iter(["n2", "n1"]), "n[1-2]"),
        (["n10", "m", "n9", "a"], "a,m,n[9-10]"),
    ],
)
def test_compress(names, hostlist):
    assert compress_hostlist(names) == hostlist


@pytest.mark.parametrize(
    "names,reason",
    [
        ([], "list is empty"),
        ("n1", "must be a list"),
        (None, "must be a list"),
        ({"n1": 1}, "must be a list, got dict"),
        (["n1", 2], "must be a string, got int 2"),
        ([""], "bad host name ''"),
        (["a b"], "bad host name 'a b'"),
        (["n[3-1]"], "reversed range"),
        (["n[1-2"], "unbalanced brackets"),
    ],
)
def test_compress_rejects(names, reason):
    with pytest.raises(HostlistError, match=reason):
        compress_hostlist(names)


def test_natural_key_orders_numbers_as_numbers():
    assert sorted(["n10", "n9", "m1", "n09"], key=natural_key) == ["m1", "n09", "n9", "n10"]


def _random_names(rng):
    prefixes = ["n", "node", "gpu-", "rack1-n", "rack2-n", "a.b", "x", ""]
    suffixes = ["", "", "", "", "-ib", "x"]
    names = []
    for _count in range(rng.randint(1, 60)):
        number = rng.randint(0, 130)
        width = rng.choice([1, 1, 2, 3])
        names.append(f"{rng.choice(prefixes)}{number:0{width}d}{rng.choice(suffixes)}")
    names.extend(rng.choice(["login", "head", "storage-a"]) for _count in range(rng.randint(0, 2)))
    return names


@pytest.mark.parametrize("seed", range(300))
def test_compress_round_trips_on_random_names(seed):
    names = _random_names(random.Random(seed))
    assert set(expand_hostlist(compress_hostlist(names))) == set(names)
    assert compress_hostlist(list(reversed(names))) == compress_hostlist(names)


@pytest.mark.parametrize("seed", range(300))
def test_agrees_with_python_hostlist(seed):
    names = _random_names(random.Random(seed))
    ours = compress_hostlist(names)
    theirs = python_hostlist.collect_hostlist(names)
    # Both read each other's compressed form back into the same set of hosts ...
    assert set(python_hostlist.expand_hostlist(ours)) == set(names)
    assert set(expand_hostlist(theirs)) == set(names)
    # ... and expand any expression to the same names in the same order.
    for expression in (ours, theirs, ",".join(names)):
        assert expand_hostlist(expression) == python_hostlist.expand_hostlist(expression)


@pytest.mark.parametrize(
    "expression",
    ["n[01-10]", "a[01-03,7],b[1-2]", "rack[1-2]-gpu", "rack[1-2]-n[01-02],x", "n[1-010]", "n[9-11],n[08-12]"],
)
def test_expand_agrees_with_python_hostlist_on_documented_cases(expression):
    assert expand_hostlist(expression) == python_hostlist.expand_hostlist(expression)


def test_compress_10000_names_is_fast():
    rng = random.Random(10000)
    names = [f"n{number:05d}" for number in rng.sample(range(20000), 6000)]
    names += [f"gpu{number}" for number in rng.sample(range(10000), 3000)]
    names += [f"rack{rng.randint(1, 9)}-n{number:03d}" for number in rng.sample(range(1000), 1000)]
    assert len(names) == 10000
    start = time.perf_counter()
    hostlist = compress_hostlist(names)
    elapsed = time.perf_counter() - start
    print(f"compress_hostlist of {len(names)} names: {elapsed * 1000:.1f} ms")
    assert elapsed < 1.0
    assert set(expand_hostlist(hostlist)) == set(names)
