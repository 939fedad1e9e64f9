"""lookup file_checksum: the controller side of llm_serving's GGUF copies, compared with host_state_info's read of
the node's copy. Both must give the same digest for the same bytes, or every run would copy again (or never)."""

from __future__ import annotations

import hashlib

from ansible.parsing.dataloader import DataLoader

from ansible_collections.hpclab.cluster.plugins.lookup.file_checksum import LookupModule
from ansible_collections.hpclab.cluster.plugins.modules.host_state_info import path_state


def lookup(terms, search_path):
    loader = DataLoader()
    loader.set_basedir(str(search_path))
    return LookupModule(loader=loader).run(terms, variables={"ansible_search_path": [str(search_path)]})


def test_relative_source_is_found_in_files_as_copy_finds_it(tmp_path):
    """A relative src is looked up in files/ of the search path (the role's, then the playbook's), as copy does."""
    (tmp_path / "files").mkdir()
    data = bytes(range(256)) * 5000  # over one read chunk: binary, as a GGUF file is
    (tmp_path / "files" / "tiny.gguf").write_bytes(data)
    assert lookup(["tiny.gguf"], tmp_path) == [hashlib.sha256(data).hexdigest()]


def test_absolute_source_and_the_nodes_read_agree(tmp_path):
    """The digest the role compares: the same as host_state_info reads for the copy on the node."""
    model = tmp_path / "models" / "tiny-a.gguf"
    model.parent.mkdir()
    model.write_bytes(b"GGUF" + b"\0" * 4096)
    assert lookup([str(model)], tmp_path) == [path_state(str(model))["checksum"]]


def test_missing_source_or_a_directory_checksums_as_empty(tmp_path):
    """Nothing found: empty, so the node's copy (or its absence) differs and copy runs and names the missing src."""
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "adir").mkdir()
    assert lookup(["absent.gguf", str(tmp_path / "nowhere.gguf"), "adir"], tmp_path) == ["", "", ""]
