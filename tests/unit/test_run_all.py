"""tests/run-all's summary, without Docker: a fake `molecule` passes, fails or stalls per scenario name.

The stall watch runs with HPCLAB_TEST_STALL=2 (a tick every 2 s) and a 1 s wait between TERM and KILL, so that
a stall is seen, reported and retried in a few seconds. The four runs go side by side (about 15 s in all).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN_ALL = ROOT / "tests" / "run-all"

# `molecule test -s NAME`: pass*, fail* (exit 3), flaky* (stalls on its first try only), stuck* (stalls on
# every try). A stall prints a line, then sleeps past HPCLAB_TEST_STALL, until run-all stops it.
FAKE_MOLECULE = """#!/usr/bin/env bash
name=$3
echo "INFO fake molecule $*"
case $name in
  pass*) exit 0 ;;
  fail*) exit 3 ;;
  flaky*)
    if [ ! -e "$FAKE_STATE/$name.tried" ]; then
      touch "$FAKE_STATE/$name.tried"
      sleep 60
    fi
    exit 0 ;;
  stuck*) sleep 60 ;;
esac
"""

# The stall report lists the running containers: none here, whatever this machine runs.
FAKE_DOCKER = "#!/usr/bin/env bash\nexit 0\n"

CASES = {
    "all_pass": (["pass_a", "pass_b"], 0, "2 passed, 0 failed"),
    "one_fail": (["pass_a", "fail_b"], 1, "1 passed, 1 failed"),
    "stall_then_pass": (["pass_a", "flaky_b"], 0, "1 passed, 0 failed, 1 passed on retry"),
    "stall_twice": (["pass_a", "stuck_b"], 1, "1 passed, 1 failed"),
}


def _executable(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run tests/run-all --only-molecule once per case, all at once: {case: (exit code, output, logs folder)}."""
    base = tmp_path_factory.mktemp("run_all")
    bin_dir = base / "bin"
    bin_dir.mkdir()
    molecule = _executable(bin_dir / "fake-molecule", FAKE_MOLECULE)
    _executable(bin_dir / "docker", FAKE_DOCKER)
    procs = {}
    for case, (scenarios, _rc, _last) in CASES.items():
        work = base / case
        (work / "state").mkdir(parents=True)
        env = dict(
            os.environ,
            PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            HPCLAB_TEST_MOLECULE=str(molecule),
            HPCLAB_TEST_LOGS=str(work / "logs"),
            HPCLAB_TEST_STALL="2",
            HPCLAB_TEST_STOP_WAIT="1",
            HPCLAB_TEST_START_GAP="0",
            HPCLAB_TEST_DEADLINE="0",
            FAKE_STATE=str(work / "state"),
        )
        procs[case] = subprocess.Popen(  # pylint: disable=consider-using-with
            [str(RUN_ALL), "--only-molecule", *scenarios],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
    results = {}
    try:
        for case, proc in procs.items():
            out, _err = proc.communicate(timeout=120)
            results[case] = (proc.returncode, out, base / case / "logs")
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results


@pytest.mark.parametrize("case", CASES)
def test_summary_line_and_exit_code(runs, case):
    _scenarios, rc, last = CASES[case]
    code, out, _logs = runs[case]
    assert out.rstrip("\n").splitlines()[-1] == last, out
    assert code == rc, out


def test_first_try_passes_are_listed_as_pass(runs):
    _code, out, _logs = runs["all_pass"]
    listed = [line.split()[:2] for line in out.splitlines() if line.startswith(("PASS ", "FAIL ", "RETRY-PASS ", "STALL "))]
    assert sorted(listed) == [["PASS", "molecule-pass_a"], ["PASS", "molecule-pass_b"]], out


def test_failure_is_listed_as_fail(runs):
    _code, out, _logs = runs["one_fail"]
    assert any(line.startswith("FAIL  molecule-fail_b (") and "exit 3" in line for line in out.splitlines()), out


def test_pass_on_second_try_is_listed_as_retry_pass(runs):
    _code, out, _logs = runs["stall_then_pass"]
    lines = out.splitlines()
    assert any(line.startswith("RETRY-PASS  molecule-flaky_b (") and "second try" in line for line in lines), out
    assert not any(line.startswith("PASS  molecule-flaky_b") for line in lines), out
    assert "=== molecule-flaky_b: second try" in out


def test_second_stall_is_listed_as_stall(runs):
    _code, out, _logs = runs["stall_twice"]
    lines = out.splitlines()
    assert any(line.startswith("STALL  molecule-stuck_b (stalled (no output for ") for line in lines), out
    assert not any("RETRY-PASS" in line for line in lines), out


def test_logs_go_where_hpclab_test_logs_says(runs):
    _code, _out, logs = runs["stall_then_pass"]
    assert (logs / "molecule-flaky_b.log").is_file()
    assert (logs / "molecule-flaky_b.try1.log").is_file()
    assert (logs / "molecule-flaky_b.stall.log").is_file()
