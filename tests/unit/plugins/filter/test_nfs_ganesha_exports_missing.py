"""Which configured exports a running NFS-Ganesha does not serve, from its real ShowExports replies
(tests/unit/fixtures/ganesha): after a power cut it served only the pseudo root; restarted with the volume up, /gv0."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpclab.cluster.plugins.filter.nfs_ganesha_exports_missing import FilterModule

MISSING = FilterModule().filters()["nfs_ganesha_exports_missing"]
GV0 = {"export_id": 1, "volume": "gv0", "pseudo": "/gv0", "access_type": "RW"}


def test_every_export_served(fixture_text):
    assert MISSING(fixture_text("ganesha", "showexports-gv0.txt"), [GV0]) == []


def test_after_a_power_cut_only_the_pseudo_root_is_served(fixture_text):
    assert MISSING(fixture_text("ganesha", "showexports-pseudo-root-only.txt"), [GV0]) == [GV0]


@pytest.mark.parametrize("export", [
    {"export_id": 2, "volume": "gv0", "pseudo": "/gv0"},  # the id served is 1
    {"export_id": 1, "volume": "gv0", "pseudo": "/data"},  # export 1 is served at /gv0
    {"export_id": "1", "volume": "gv0", "pseudo": "/gv0/"},  # not the pseudo path served
])
def test_an_export_served_under_another_id_or_path_is_missing(fixture_text, export):
    assert MISSING(fixture_text("ganesha", "showexports-gv0.txt"), [GV0, export]) == [export]


def test_an_id_given_as_a_string_is_the_same_export(fixture_text):
    export = dict(GV0, export_id="1")
    assert MISSING(fixture_text("ganesha", "showexports-gv0.txt"), [export]) == []


@pytest.mark.parametrize("answer", ["", None, "Error org.freedesktop.DBus.Error.ServiceUnknown: The name org.ganesha.nfsd was not provided"])
def test_no_answer_serves_nothing(answer):
    assert MISSING(answer, [GV0]) == [GV0]


@pytest.mark.parametrize("exports", [None, "gv0", [1]])
def test_bad_exports_are_refused(exports):
    with pytest.raises(AnsibleFilterError, match="exports must be a list of dicts"):
        MISSING("", exports)
