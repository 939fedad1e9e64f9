"""Make the checkout importable as ansible_collections.hpclab.cluster for unit tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _collections_root() -> str:
    """A directory whose ansible_collections/hpclab/cluster is this checkout."""
    here = ROOT.parent
    if here.name == "hpclab" and here.parent.name == "ansible_collections":
        return str(here.parent.parent)  # run inside an installed tree (ansible-test)
    link = ROOT / ".cache" / "collections"
    target = link / "ansible_collections" / "hpclab" / "cluster"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink("../../../..", target)
    return str(link)


_AnsibleCollectionFinder(paths=[_collections_root()])._install()


@pytest.fixture
def fixture_text():
    """Read a captured command output from tests/unit/fixtures/<tool>/<name>."""

    def _read(*parts: str) -> str:
        return (FIXTURES.joinpath(*parts)).read_text(encoding="utf-8")

    return _read


class FakeClock:
    """time.monotonic/time.sleep stand-in: sleeping advances the clock at once and is recorded."""

    def __init__(self):
        self.now = 1000.0
        self.sleeps = []

    def monotonic(self):
        return self.now

    def time(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def fake_clock():
    """A FakeClock for modules that poll: patch it in as the module's `time`."""
    return FakeClock()
