"""The gateway's usage counting: the pure code (plugins/module_utils/_llm_usage.py) on the usage log nginx wrote on the
llm_serving scenario's gateway (tests/unit/fixtures/llm_gateway/usage.log, see its README), and the service script
(roles/llm_gateway/files/hpclab_llm_usage.py) run offline on a temporary log: counts kept across a restart, the log
followed across logrotate's rename, a partial last line left for the next read, and who is over budget."""

from __future__ import annotations

import datetime
import grp
import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "llm_gateway"
sys.path.insert(0, str(ROOT / "plugins" / "module_utils"))
import _llm_usage  # noqa: E402 pylint: disable=wrong-import-position
import _monitoring  # noqa: E402 pylint: disable=wrong-import-position

SPEC = importlib.util.spec_from_file_location("hpclab_llm_usage", ROOT / "roles" / "llm_gateway" / "files" / "hpclab_llm_usage.py")
usage_service = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(usage_service)

CAPTURED = (FIXTURES / "usage.log").read_text(encoding="utf-8")


def captured_entries():
    return [_llm_usage.parse_line(line) for line in CAPTURED.splitlines()]


def test_every_captured_line_parses_with_its_user_model_and_tokens():
    entries = captured_entries()
    assert entries and all(entry is not None for entry in entries)
    assert {entry["user"] for entry in entries} <= {"alice", "bob", "webui"}
    plain = [entry for entry in entries if entry["prompt_tokens"] is not None]
    assert plain and all(entry["completion_tokens"] is not None and entry["status"] == 200 for entry in plain)
    # llama.cpp's streams report no usage: their lines have "-".
    assert any(entry["prompt_tokens"] is None and entry["completion_tokens"] is None for entry in entries)


@pytest.mark.parametrize("line", [
    "",
    '{"time":"2026-12-07T23:30:01+00:00","user":"alice","model":"tiny-a","status":"200","prompt_tok',  # partial line
    '{"time":"2026-12-07T23:30:01","user":"alice","model":"tiny-a","status":"200"}',  # no UTC offset
    '{"time":"2026-12-07T23:30:01+00:00","user":"","model":"tiny-a","status":"401"}',  # no user
    '{"time":"2026-12-07T23:30:01+00:00","user":"alice","model":"-","status":"429"}',  # not routed
    '[1, 2]',
    '2026-12-07T23:30:01+00:00 user=alice client=10.0.0.9 "POST /v1/chat/completions" status=200',  # the access log
], ids=["empty", "partial", "naive-time", "no-user", "not-routed", "not-an-object", "access-log-line"])
def test_lines_that_are_not_usage_lines_are_skipped(line):
    assert _llm_usage.parse_line(line) is None


def test_totals_days_and_months_add_up_and_a_request_without_usage_counts_as_such():
    state = _llm_usage.empty_state()
    counted, rest = _llm_usage.add_lines(state, CAPTURED)
    entries = captured_entries()
    assert counted == len(entries) and rest == ""
    for user in {entry["user"] for entry in entries}:
        mine = [entry for entry in entries if entry["user"] == user]
        for model in {entry["model"] for entry in mine}:
            theirs = [entry for entry in mine if entry["model"] == model]
            totals = state["totals"][user][model]
            assert totals["requests"] == len(theirs)
            assert totals["prompt_tokens"] == sum(entry["prompt_tokens"] or 0 for entry in theirs)
            assert totals["completion_tokens"] == sum(entry["completion_tokens"] or 0 for entry in theirs)
            assert totals["requests_without_usage"] == sum(entry["prompt_tokens"] is None and entry["status"] == 200
                                                           for entry in theirs)
        last_day = max(entry["day"] for entry in mine)
        reported = [entry for entry in mine if entry["day"] == last_day and entry["prompt_tokens"] is not None]
        if reported:
            assert state["days"][user]["tokens"] == sum(e["prompt_tokens"] + e["completion_tokens"] for e in reported)


def line(moment: str, user: str, prompt, completion, model: str = "tiny-a", status: str = "200") -> str:
    return json.dumps({"time": moment, "user": user, "model": model, "status": status,
                       "prompt_tokens": str(prompt), "completion_tokens": str(completion)}, separators=(",", ":"))


def test_a_new_day_starts_the_budget_again_and_resets_at_the_next_local_midnight():
    state = _llm_usage.empty_state()
    _llm_usage.add_lines(state, "\n".join([line("2026-12-07T23:59:58+01:00", "bob", 600, 500),
                                           line("2026-12-08T00:00:01+01:00", "bob", 10, 20), ""]))
    assert state["days"]["bob"] == {"day": "2026-12-08", "tokens": 30, "resets": "2026-12-09T00:00:00+01:00"}
    assert state["months"]["bob"] == {"month": "2026-12", "tokens": 1130}
    assert _llm_usage.over_budget(state, {"bob": 1000}, "2026-12-08") == {}
    state = _llm_usage.empty_state()
    _llm_usage.add_lines(state, line("2026-12-07T23:59:58+01:00", "bob", 600, 500) + "\n")
    assert _llm_usage.over_budget(state, {"bob": 1000, "alice": 5}, "2026-12-07") == {
        "bob": {"budget": 1000, "used": 1100, "resets": "2026-12-08T00:00:00+01:00", "until": 1796684400}}
    assert _llm_usage.over_budget(state, {"bob": 1000}, "2026-12-08") == {}  # the next day, before any request


def test_a_users_own_limits_override_the_default_key_by_key():
    assert _llm_usage.user_limits("bob", {"daily_tokens": 1000, "concurrent_requests": 4}, {"bob": {"concurrent_requests": 0}}) == {
        "daily_tokens": 1000, "concurrent_requests": 0}
    assert _llm_usage.user_limits("alice", {"daily_tokens": None}, {}) == {"daily_tokens": 0, "concurrent_requests": 0}


def test_metrics_per_user_and_model_and_of_today_and_this_month():
    state = _llm_usage.empty_state()
    _llm_usage.add_lines(state, "\n".join([line("2026-12-07T10:00:00+00:00", "alice", 12, 8),
                                           line("2026-12-07T10:00:01+00:00", "alice", "-", "-", model="tiny-b"),
                                           line("2026-12-06T10:00:00+00:00", "bob", 5, 5), ""]))
    metrics = _llm_usage.usage_metrics(_monitoring.Metrics(), state, {"bob": 100}, "2026-12-07", "2026-12")
    assert metrics.value("hpclab_llm_prompt_tokens_total", user="alice", model="tiny-a") == 12
    assert metrics.value("hpclab_llm_completion_tokens_total", user="alice", model="tiny-a") == 8
    assert metrics.value("hpclab_llm_requests_total", user="alice", model="tiny-b") == 1
    assert metrics.value("hpclab_llm_requests_without_usage_total", user="alice", model="tiny-b") == 1
    assert metrics.value("hpclab_llm_user_tokens_today", user="alice") == 20
    assert metrics.value("hpclab_llm_user_tokens_today", user="bob") == 0  # yesterday's
    assert metrics.value("hpclab_llm_user_tokens_this_month", user="bob", month="2026-12") == 10
    assert metrics.value("hpclab_llm_user_daily_token_budget", user="bob") == 100
    assert "# TYPE hpclab_llm_prompt_tokens_total counter" in metrics.render()


def test_a_state_of_another_version_is_refused():
    with pytest.raises(ValueError):
        _llm_usage.load_state('{"version": 0}')
    assert _llm_usage.load_state("") == _llm_usage.empty_state()


# --- the service script -------------------------------------------------------------------------------------------


@pytest.fixture
def setup(tmp_path):
    config = {"log": str(tmp_path / "usage.log"), "state": str(tmp_path / "state.json"),
              "blocked": str(tmp_path / "over-budget.json"), "textfile": str(tmp_path / "hpclab_llm_usage.prom"),
              "budgets": {"bob": 1000}, "blocked_group": grp.getgrgid(os.getgid()).gr_name}
    Path(config["log"]).write_text("", encoding="utf-8")
    return config


def run_once(config):
    """What the service does on one turn of its loop, starting from its state file as after a restart."""
    state = _llm_usage.load_state(Path(config["state"]).read_text(encoding="utf-8")) if os.path.exists(config["state"]) else \
        _llm_usage.empty_state()
    counted = usage_service.follow(state, config["log"])
    usage_service.publish(config, state, config["budgets"])
    return counted, state


def append(path: str, text: str) -> None:
    with open(path, "a", encoding="utf-8") as stream:
        stream.write(text)


def test_counts_survive_a_restart_and_a_partial_line_waits_for_its_end(setup):
    now = datetime.datetime.now().astimezone().replace(microsecond=0).isoformat()
    append(setup["log"], line(now, "bob", 600, 500) + "\n" + line(now, "alice", 3, 4)[:30])
    assert run_once(setup)[0] == 1
    assert json.loads(Path(setup["blocked"]).read_text(encoding="utf-8"))["bob"]["used"] == 1100
    assert oct(os.stat(setup["state"]).st_mode & 0o777) == "0o600"
    assert oct(os.stat(setup["blocked"]).st_mode & 0o777) == "0o640"  # nginx's group only
    assert os.stat(setup["blocked"]).st_gid == os.getgid()
    append(setup["log"], line(now, "alice", 3, 4)[30:] + "\n")
    counted, state = run_once(setup)  # a new process: the state file only
    assert counted == 1
    assert state["totals"]["bob"]["tiny-a"]["prompt_tokens"] == 600
    expected = {"requests": 1, "prompt_tokens": 3, "completion_tokens": 4, "requests_without_usage": 0}
    assert state["totals"]["alice"]["tiny-a"] == expected
    assert 'hpclab_llm_completion_tokens_total{user="alice",model="tiny-a"} 4' in Path(setup["textfile"]).read_text(encoding="utf-8")


def test_a_rotated_log_is_read_to_its_end_then_the_new_one_from_its_start(setup):
    now = datetime.datetime.now().astimezone().replace(microsecond=0).isoformat()
    append(setup["log"], line(now, "alice", 1, 1) + "\n")
    assert run_once(setup)[0] == 1
    append(setup["log"], line(now, "alice", 2, 2) + "\n")  # written before logrotate renamed it
    os.rename(setup["log"], setup["log"] + ".1")
    append(setup["log"], line(now, "alice", 4, 4) + "\n")  # nginx's new file
    counted, state = run_once(setup)
    assert counted == 2
    assert state["totals"]["alice"]["tiny-a"]["prompt_tokens"] == 7
    assert run_once(setup)[0] == 0  # nothing counted twice
