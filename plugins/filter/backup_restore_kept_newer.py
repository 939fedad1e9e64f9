# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: backup_restore_kept_newer
short_description: Which files of a home restored in place were kept because they are newer than the snapshot's
version_added: 0.4.0
description:
  - The backup role's C(restore) entry point copies a home back in place from its staging copy with C(cp -a --update),
    unless C(backup_restore_replace_newer) is true; C(cp --update) leaves a file in place whose modification time is
    not older than the snapshot's copy, so that a file the user changed after the snapshot keeps the user's work.
  - This filter names those files for the run's report, from two listings made after the copy with
    C(find DIR -mindepth 1 ! -type d -printf '%T@\t%P\0'), one of the staging copy of the home and one of the home in
    place (C(find) does not follow symbolic links, so a link is compared by its own time, as C(cp -a --update
    --remove-destination) compares it).
  - "Returns the paths, relative to the home and sorted, that are in both listings and whose time in place is
    later than in the snapshot: what C(cp --update) kept. A path with the same time is the snapshot's own file (or
    was copied back) and is not named; a path only in place was made since the snapshot and is left alone anyway."
options:
  _input:
    description: The listing of the staging copy of the home (C(find)'s output, one C(SECONDS<TAB>PATH) entry per NUL).
    type: str
    required: true
  live:
    description: The listing of the home in place, in the same format.
    type: str
    required: true
"""

EXAMPLES = r"""
# "1764990000.0000000000\tnotes.txt\x001764990000.0000000000\tdata.bin\x00"
#   | hpclab.cluster.backup_restore_kept_newer(live="1765000000.5000000000\tnotes.txt\x001764990000.0000000000\tdata.bin\x00")
# => ["notes.txt"]
- name: Files in place newer than the snapshot's, kept
  ansible.builtin.debug:
    msg: "{{ __staged.stdout | hpclab.cluster.backup_restore_kept_newer(live=__live.stdout) }}"
"""

RETURN = r"""
_value:
  description: The kept paths, relative to the home, sorted.
  type: list
  elements: str
"""

from decimal import Decimal, InvalidOperation

from ansible.errors import AnsibleFilterError


def listing_times(text, what="listing"):
    """{path: seconds as a Decimal} of `find -printf '%T@\\t%P\\0'` output (exact, to the nanosecond)."""
    if not isinstance(text, str):
        raise AnsibleFilterError(f"backup_restore_kept_newer: the {what} must be find's output as a string, got {type(text).__name__}")
    times = {}
    for entry in text.split("\0"):
        # A trailing newline is what Ansible's command module may leave after the last NUL.
        if not entry.strip("\n"):
            continue
        seconds, sep, path = entry.lstrip("\n").partition("\t")
        try:
            if not sep or not path:
                raise InvalidOperation
            times[path] = Decimal(seconds)
        except InvalidOperation:
            raise AnsibleFilterError(f"backup_restore_kept_newer: an entry of the {what} is not 'SECONDS<TAB>PATH': {entry[:80]!r}") from None
    return times


def backup_restore_kept_newer(staged, live):
    """Filter entry point: see DOCUMENTATION."""
    snapshot = listing_times(staged, "listing of the staging copy")
    in_place = listing_times(live, "listing of the home in place")
    return sorted(path for path, seconds in in_place.items() if path in snapshot and seconds > snapshot[path])


class FilterModule:
    """The backup role's report of what an in-place restore kept."""

    def filters(self):
        return {"backup_restore_kept_newer": backup_restore_kept_newer}
