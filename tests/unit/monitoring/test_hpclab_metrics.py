"""The monitoring role's collector script (roles/monitoring/files/hpclab_metrics.py) run offline: the layers' CLIs
are replaced by their captured output (tests/unit/fixtures/monitoring/unmunge.json, munge 0.5.15), the textfile
directory is a temporary one."""

from __future__ import annotations

import importlib.util
import json
import os
import pwd
import stat
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# The role copies _slurm.py, _gluster.py and _monitoring.py next to the script: here they are imported from
# plugins/module_utils.
sys.path.insert(0, str(ROOT / "plugins" / "module_utils"))
SPEC = importlib.util.spec_from_file_location("hpclab_metrics", ROOT / "roles" / "monitoring" / "files" / "hpclab_metrics.py")
hpclab_metrics = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(hpclab_metrics)

UNMUNGE = json.loads((FIXTURES / "monitoring" / "unmunge.json").read_text(encoding="utf-8"))


class FakeMunge:
    """munge and unmunge as the collector runs them: what each was asked, what it answers (a fixture case)."""

    def __init__(self, unmunge_case="restricted_decoded"):
        self.calls = []
        self.unmunge_case = unmunge_case

    def __call__(self, argv, timeout, stdin=None):
        self.calls.append(list(argv))
        if argv[0] == "systemctl":
            return 0, b"active\n", b""
        if argv[0] == "munge":
            return 0, b"MUNGE:credential-of-" + " ".join(argv).encode() + b":\n", b""
        if argv[0] == "unmunge":
            case = UNMUNGE[self.unmunge_case]
            return case["rc"], case["output"].encode(), b""
        raise AssertionError(f"unexpected command {argv}")


def munge_config(path, writer=True):
    return {"timeout": 5, "interval": 60, "munge_controller_credential": str(path), "munge_credential_writer": writer}


# --- the controller's shared MUNGE credential -----------------------------------------------------


def test_shared_credential_is_nobodys_and_decodable_by_root_only(monkeypatch):
    monkeypatch.setattr(hpclab_metrics.pwd, "getpwnam", lambda name: pwd.struct_passwd((name, "x", 65534, 65534, "", "/", "/bin/false")))
    assert hpclab_metrics.controller_credential_argv(600) == ["munge", "-n", "-U", "65534", "-G", "65534", "-u", "0", "-t", "600"]


def test_shared_credential_without_a_nobody_user_keeps_the_unprivileged_ids(monkeypatch):
    def missing(name):
        raise KeyError(name)

    monkeypatch.setattr(hpclab_metrics.pwd, "getpwnam", missing)
    argv = hpclab_metrics.controller_credential_argv(300)
    assert argv[argv.index("-U") + 1] == argv[argv.index("-G") + 1] == "65534"


def test_writer_encodes_the_restricted_credential_into_a_root_only_file(tmp_path, monkeypatch):
    fake = FakeMunge()
    monkeypatch.setattr(hpclab_metrics, "run", fake)
    monkeypatch.setattr(hpclab_metrics, "on_the_root_filesystem", lambda path: False)  # tmp_path stands for the volume
    path = tmp_path / ".hpclab-munge-credential"
    path.write_text("old credential, once world-readable\n")
    path.chmod(0o644)
    metrics = hpclab_metrics._monitoring.Metrics()
    hpclab_metrics.collect_munge(metrics, munge_config(path))
    shared = [argv for argv in fake.calls if argv[0] == "munge" and "-t" in argv]
    assert len(shared) == 1
    assert shared[0][:2] == ["munge", "-n"] and "-u" in shared[0] and shared[0][shared[0].index("-u") + 1] == "0"
    assert shared[0][shared[0].index("-U") + 1] != "0"
    assert shared[0][shared[0].index("-t") + 1] == "600"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "-u 0" in path.read_text()
    assert metrics.value("hpclab_munge_credential_ok", source="controller") is True
    assert metrics.value("hpclab_munge_credential_ok", source="local") is True


def test_writer_never_writes_into_the_bare_mount_point_of_a_volume_not_mounted(tmp_path, monkeypatch):
    """After a power cut the collector ran on the controller before the volume was mounted and wrote its credential
    into the bare /gfsv on the root filesystem (slurm_native's power-cut test): on the root filesystem, nothing is
    written, and the controller's credential counts as not decoded (there is none to read)."""
    fake = FakeMunge()
    monkeypatch.setattr(hpclab_metrics, "run", fake)
    monkeypatch.setattr(hpclab_metrics, "on_the_root_filesystem", lambda path: True)
    path = tmp_path / ".hpclab-munge-credential"
    metrics = hpclab_metrics._monitoring.Metrics()
    hpclab_metrics.collect_munge(metrics, munge_config(path))
    assert not [argv for argv in fake.calls if argv[0] == "munge" and "-t" in argv]
    assert not path.exists()
    assert metrics.value("hpclab_munge_credential_ok", source="controller") is False
    assert metrics.value("hpclab_munge_credential_ok", source="local") is True


def test_the_root_filesystem_is_told_from_another_mount():
    assert hpclab_metrics.on_the_root_filesystem("/.hpclab-munge-credential")
    assert hpclab_metrics.on_the_root_filesystem("/etc/.hpclab-munge-credential")
    assert not hpclab_metrics.on_the_root_filesystem("/proc/.hpclab-munge-credential")  # proc: a filesystem of its own
    assert hpclab_metrics.on_the_root_filesystem("/no/such/directory/file")  # unknown: written nowhere


@pytest.mark.parametrize(
    "case,ok",
    [("restricted_decoded", True), ("restricted_replayed", True), ("key_mismatch", False), ("restricted_other_user", False)],
)
def test_reader_decodes_the_shared_credential_and_reports_a_key_mismatch(tmp_path, monkeypatch, case, ok):
    """Another node (no writer) decodes the file as root: decoded or replayed counts, another key does not."""
    fake = FakeMunge(case)
    monkeypatch.setattr(hpclab_metrics, "run", fake)
    path = tmp_path / ".hpclab-munge-credential"
    path.write_text("MUNGE:x:\n")
    metrics = hpclab_metrics._monitoring.Metrics()
    hpclab_metrics.collect_munge(metrics, munge_config(path, writer=False))
    assert not [argv for argv in fake.calls if argv[0] == "munge" and "-t" in argv]
    assert metrics.value("hpclab_munge_credential_ok", source="controller") is ok


# --- the textfile directory ------------------------------------------------------------------------


def run_main(tmp_path, collectors, textfile_dir, monkeypatch, layers=None):
    for name, collect in (layers or {}).items():
        monkeypatch.setitem(hpclab_metrics.COLLECTORS, name, collect)
    config = tmp_path / "collectors.json"
    config.write_text(json.dumps({"collectors": collectors, "textfile_dir": str(textfile_dir)}))
    return hpclab_metrics.main(["hpclab_metrics.py", str(config)])


def quiet(metrics, _config):
    metrics.add("hpclab_test_up", "test")
    metrics.sample("hpclab_test_up", {}, True)


def test_files_of_dropped_layers_are_removed_and_no_other(tmp_path, monkeypatch):
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    for name in ("hpclab_llm.prom", "hpclab_gluster.prom", "hpclab_munge.prom", "hpclab_backup.prom", "node_other.prom", "hpclab_llm.prom.bak"):
        (textfiles / name).write_text("hpclab_llm_model_up 0\n")
    assert run_main(tmp_path, ["munge"], textfiles, monkeypatch, {"munge": quiet}) == 0
    assert sorted(os.listdir(textfiles)) == ["hpclab_backup.prom", "hpclab_llm.prom.bak", "hpclab_munge.prom", "node_other.prom"]
    assert "hpclab_test_up 1" in (textfiles / "hpclab_munge.prom").read_text()


def test_no_layer_left_removes_every_layer_file(tmp_path, monkeypatch):
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    for name in hpclab_metrics.COLLECTORS:
        (textfiles / f"hpclab_{name}.prom").write_text("")
    assert run_main(tmp_path, [], textfiles, monkeypatch) == 0
    assert not os.listdir(textfiles)


def test_a_missing_textfile_directory_fails_the_run_without_a_traceback(tmp_path, monkeypatch, capsys):
    assert run_main(tmp_path, ["munge", "slurm"], tmp_path / "missing", monkeypatch, {"munge": quiet, "slurm": quiet}) == 1
    err = capsys.readouterr().err
    assert "munge: writing hpclab_munge.prom" in err and "slurm: writing hpclab_slurm.prom" in err


def test_one_layer_that_cannot_be_written_leaves_the_others(tmp_path, monkeypatch, capsys):
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    write = hpclab_metrics.write_atomically

    def write_but_slurm(path, content, mode=0o644):
        if path.endswith("hpclab_slurm.prom"):
            raise PermissionError(13, "Permission denied", path)
        write(path, content, mode)

    monkeypatch.setattr(hpclab_metrics, "write_atomically", write_but_slurm)
    assert run_main(tmp_path, ["slurm", "munge"], textfiles, monkeypatch, {"munge": quiet, "slurm": quiet}) == 1
    assert os.listdir(textfiles) == ["hpclab_munge.prom"]
    assert "slurm: writing hpclab_slurm.prom: [Errno 13] Permission denied" in capsys.readouterr().err
