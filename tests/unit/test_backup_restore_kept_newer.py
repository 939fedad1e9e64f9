"""The backup role's report of an in-place restore: which files cp --update kept because they changed since the
snapshot, from find's listings of the staging copy and of the home, captured after the real cp of a bookworm node
(fixtures/backup/capture_kept_newer.sh)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.backup_restore_kept_newer import FilterModule, listing_times

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "backup"
KEPT_NEWER = FilterModule().filters()["backup_restore_kept_newer"]
STAGED = (FIXTURES / "kept_newer_staged.txt").read_text()
LIVE = (FIXTURES / "kept_newer_live.txt").read_text()


def test_registered():
    assert set(FilterModule().filters()) == {"backup_restore_kept_newer"}


def test_fixtures_are_what_the_script_made():
    staged, live = listing_times(STAGED), listing_times(LIVE)
    assert set(staged) == {"a.txt", "sub/notes.txt", "sub/data.bin", "older.txt", "tab\tname", "new\nline", "same-second.txt", "link"}
    assert set(live) == set(staged) | {"made-since.txt"}
    # Every snapshot file dated as the backup read it, to the nanosecond.
    assert set(staged.values()) == {Decimal("1796090400.1234567890")}


def test_files_changed_since_the_snapshot_are_the_ones_kept():
    # notes.txt and the names with a tab and a newline were edited later; the symlink to /etc/shadow was planted later;
    # same-second.txt was changed 0.8 s after the snapshot read it.
    assert KEPT_NEWER(STAGED, live=LIVE) == ["link", "new\nline", "same-second.txt", "sub/notes.txt", "tab\tname"]


def test_what_cp_wrote_back_is_not_named():
    kept = KEPT_NEWER(STAGED, live=LIVE)
    live = listing_times(LIVE)
    # data.bin was deleted and older.txt older in place: cp copied both back, with the snapshot's time.
    for path in ("sub/data.bin", "older.txt", "a.txt"):
        assert path not in kept
        assert live[path] == listing_times(STAGED)[path]
    # Made after the snapshot, not in it: left alone, and not the restore's to report.
    assert "made-since.txt" not in kept


def test_after_a_restore_that_replaced_everything_nothing_is_kept():
    assert KEPT_NEWER(STAGED, live=STAGED) == []


def test_empty_listings():
    assert KEPT_NEWER("", live="") == []
    assert KEPT_NEWER(STAGED, live="") == []


def test_a_trailing_newline_after_the_last_entry_is_ignored():
    assert KEPT_NEWER(STAGED + "\n", live=LIVE + "\n") == KEPT_NEWER(STAGED, live=LIVE)


@pytest.mark.parametrize("listing", ["no tab here\0", "yesterday\ta.txt\0", "1796090400.1\t\0"])
def test_what_is_not_find_output_is_refused(listing):
    with pytest.raises(AnsibleFilterError, match="is not 'SECONDS<TAB>PATH'"):
        KEPT_NEWER(listing, live=LIVE)


def test_input_must_be_text():
    with pytest.raises(AnsibleFilterError, match="must be find's output as a string"):
        KEPT_NEWER(["a.txt"], live=LIVE)
    with pytest.raises(AnsibleFilterError, match="listing of the home in place"):
        KEPT_NEWER(STAGED, live=None)
