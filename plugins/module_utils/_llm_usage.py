# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure helpers of the LLM gateway's usage counter (``hpclab-llm-usage``, the llm_gateway role): read the
gateway's usage log (one JSON object per answered request, nginx's ``escape=json`` log format), count per user
and model the requests, prompt tokens and completion tokens the model servers reported, keep each user's tokens of
the day and of the month, decide who is over their daily token budget, and write it all as Prometheus samples.

Nothing here reads a file or the clock: the service script (``roles/llm_gateway/files/hpclab_llm_usage.py``) does,
and the role copies this file and ``_monitoring.py`` next to it, so the code the unit tests cover is the code that
runs. Standard library only.

A day is the gateway host's local day, as nginx writes ``$time_iso8601`` (with its UTC offset): a budget resets at
the next local midnight.

This module util is PRIVATE to the collection: it may change without notice.
"""

from __future__ import annotations

import datetime
import json

STATE_VERSION = 1
COUNTS = ("requests", "prompt_tokens", "completion_tokens", "requests_without_usage")


def empty_state() -> dict:
    """The state of a gateway that has answered nothing yet."""
    return {"version": STATE_VERSION, "log": {"inode": None, "offset": 0}, "totals": {}, "days": {}, "months": {}}


def load_state(text: str) -> dict:
    """The state kept in TEXT (JSON), or an empty one where TEXT is empty; a state of another version is refused."""
    if not text.strip():
        return empty_state()
    state = json.loads(text)
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
        raise ValueError(f"not a usage state of version {STATE_VERSION}")
    for key, value in empty_state().items():
        state.setdefault(key, value)
    return state


def _tokens(value):
    """A token count as logged: digits, or None where the server reported none ("-" or empty)."""
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def parse_line(line: str) -> dict | None:
    """One usage-log line as {time, day, month, user, model, status, prompt_tokens, completion_tokens}, or None for
    a line that is not one (a partial last line, a line of another format). Token counts are None where the model
    server reported none (a stream without a usage chunk)."""
    try:
        entry = json.loads(line)
        moment = datetime.datetime.fromisoformat(entry["time"])
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(entry, dict) or moment.tzinfo is None:
        return None
    user, model = entry.get("user"), entry.get("model")
    if not isinstance(user, str) or not user or not isinstance(model, str) or model in ("", "-"):
        return None
    status = entry.get("status")
    return {
        "time": moment,
        "day": moment.date().isoformat(),
        "month": moment.strftime("%Y-%m"),
        "user": user,
        "model": model,
        "status": int(status) if isinstance(status, str) and status.isdigit() else 0,
        "prompt_tokens": _tokens(entry.get("prompt_tokens")),
        "completion_tokens": _tokens(entry.get("completion_tokens")),
    }


def next_midnight(moment: datetime.datetime) -> datetime.datetime:
    """The start of the day after MOMENT's, in MOMENT's UTC offset."""
    day = moment.date() + datetime.timedelta(days=1)
    return datetime.datetime(day.year, day.month, day.day, tzinfo=moment.tzinfo)


def add(state: dict, entry: dict) -> None:
    """Count ENTRY (parse_line's) into STATE: its user's and model's totals, and the user's day and month."""
    totals = state["totals"].setdefault(entry["user"], {}).setdefault(entry["model"], dict.fromkeys(COUNTS, 0))
    totals["requests"] += 1
    prompt, completion = entry["prompt_tokens"], entry["completion_tokens"]
    if prompt is None and completion is None:
        if entry["status"] == 200:
            totals["requests_without_usage"] += 1
        return
    tokens = (prompt or 0) + (completion or 0)
    totals["prompt_tokens"] += prompt or 0
    totals["completion_tokens"] += completion or 0
    day = state["days"].get(entry["user"])
    if day is None or day["day"] < entry["day"]:
        day = state["days"][entry["user"]] = {"day": entry["day"], "tokens": 0, "resets": next_midnight(entry["time"]).isoformat()}
    if day["day"] == entry["day"]:
        day["tokens"] += tokens
    month = state["months"].get(entry["user"])
    if month is None or month["month"] < entry["month"]:
        month = state["months"][entry["user"]] = {"month": entry["month"], "tokens": 0}
    if month["month"] == entry["month"]:
        month["tokens"] += tokens


def add_lines(state: dict, text: str) -> tuple[int, str]:
    """Count every complete line of TEXT (what the log grew by) into STATE: (the lines counted, the unfinished last
    line, left for the next read)."""
    *lines, rest = text.split("\n")
    counted = 0
    for line in lines:
        entry = parse_line(line)
        if entry is not None:
            add(state, entry)
            counted += 1
    return counted, rest


LIMITS = ("daily_tokens", "concurrent_requests")


def user_limits(user: str, limits: dict | None, by_user: dict | None) -> dict:
    """{daily_tokens, concurrent_requests} of USER: the user's own entry of BY_USER (llm_gateway_user_limits_by_user)
    key by key over LIMITS (llm_gateway_user_limits; a key the user's entry leaves out or null keeps it); 0 where there
    is no limit."""
    own = {name: value for name, value in ((by_user or {}).get(user) or {}).items() if value is not None}
    merged = {**(limits or {}), **own}
    return {name: int(merged.get(name) or 0) for name in LIMITS}


def over_budget(state: dict, user_budgets: dict, today: str) -> dict:
    """{user: {budget, used, resets, until}} of the users whose tokens of TODAY (the host's local date) reached their
    budget: what the gateway's router refuses with 429 until RESETS (UNTIL: the same as Unix time, which njs 0.7.9 reads
    where its Date cannot parse an offset such as +01:00)."""
    blocked = {}
    for user, budget in sorted(user_budgets.items()):
        day = state["days"].get(user)
        if day and day["day"] == today and day["tokens"] >= budget:
            resets = datetime.datetime.fromisoformat(day["resets"])
            blocked[user] = {"budget": budget, "used": day["tokens"], "resets": day["resets"], "until": int(resets.timestamp())}
    return blocked


def usage_metrics(metrics, state: dict, user_budgets: dict, today: str, month: str):
    """STATE as Prometheus samples in METRICS (a _monitoring.Metrics): the counters per user and model, and per user
    the tokens of today and of this month and the daily budget."""
    families = (
        ("requests", "Requests the gateway routed to a model server, per user and model.", "requests"),
        ("prompt_tokens", "Prompt tokens the model servers reported (the answers' usage), per user and model.", "prompt_tokens"),
        ("completion_tokens", "Completion tokens the model servers reported (the answers' usage), per user and model.",
         "completion_tokens"),
        ("requests_without_usage", "Answered requests whose model server reported no usage (a stream of a server that "
         "sends no usage chunk): counted here, their tokens not.", "requests_without_usage"),
    )
    for name, help_text, count in families:
        metrics.add(f"hpclab_llm_{name}_total", help_text, "counter")
        for user in sorted(state["totals"]):
            for model in sorted(state["totals"][user]):
                metrics.sample(f"hpclab_llm_{name}_total", {"user": user, "model": model}, state["totals"][user][model][count])
    metrics.add("hpclab_llm_user_tokens_today", "Prompt and completion tokens of the user today (the gateway host's day).")
    metrics.add("hpclab_llm_user_tokens_this_month", "Prompt and completion tokens of the user this calendar month.")
    metrics.add("hpclab_llm_user_daily_token_budget", "The user's daily token budget (users who have one).")
    for user in sorted(set(state["totals"]) | set(user_budgets)):
        day, this_month = state["days"].get(user, {}), state["months"].get(user, {})
        metrics.sample("hpclab_llm_user_tokens_today", {"user": user}, day.get("tokens", 0) if day.get("day") == today else 0)
        metrics.sample("hpclab_llm_user_tokens_this_month", {"user": user, "month": month},
                       this_month.get("tokens", 0) if this_month.get("month") == month else 0)
        if user in user_budgets:
            metrics.sample("hpclab_llm_user_daily_token_budget", {"user": user}, user_budgets[user])
    return metrics
