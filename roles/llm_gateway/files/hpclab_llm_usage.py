# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""hpclab-llm-usage: follow the LLM gateway's usage log (one JSON line per request nginx routed to a model server)
and keep, per user and model, the requests and the tokens the model servers reported. Run by hpclab-llm-usage.service
(llm_gateway role). After each change it replaces three files atomically (write, then rename):

- its state (STATE, root only): the counters, each user's tokens of the day and of the month, and how far it read
  the log (inode and offset), so that the counters survive a restart of the gateway, of this service or of the host;
- the users over their daily token budget (BLOCKED, readable by nginx's group, BLOCKED_GROUP), which the gateway's router answers 429 until
  the next local midnight;
- the metrics (TEXTFILE, node_exporter's textfile collector reads it).

Debian's logrotate renames the log to LOG.1 each day (delaycompress): a log whose inode changed is first read to its
end under that name, then the new one from its start.

Thin glue only: the parsing and counting are the collection's unit-tested _llm_usage.py, and the metrics text is
_monitoring.py's, both copied by the role next to this script.

Usage: python3 hpclab_llm_usage.py [CONFIG]   (default /etc/hpclab-llm-usage/config.json)
"""

from __future__ import annotations

import datetime
import grp
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _llm_usage  # noqa: E402 pylint: disable=wrong-import-position
import _monitoring  # noqa: E402 pylint: disable=wrong-import-position

CONFIG = "/etc/hpclab-llm-usage/config.json"


def read_from(path: str, inode: int, offset: int) -> tuple[bytes, int] | None:
    """The complete lines of PATH from OFFSET, where PATH is the file INODE: (the bytes, the new offset); None where
    PATH is another file or none."""
    try:
        with open(path, "rb") as stream:
            if os.fstat(stream.fileno()).st_ino != inode:
                return None
            stream.seek(offset)
            data = stream.read()
    except FileNotFoundError:
        return None
    end = data.rfind(b"\n") + 1
    return data[:end], offset + end


def follow(state: dict, log: str) -> int:
    """Count what LOG (and LOG.1, just rotated) grew by since STATE's inode and offset: the lines counted."""
    where = state["log"]
    counted = 0
    try:
        current = os.stat(log)
    except FileNotFoundError:
        return 0
    if where["inode"] is not None and where["inode"] != current.st_ino:
        rest = read_from(log + ".1", where["inode"], where["offset"])
        if rest is not None:
            counted += _llm_usage.add_lines(state, rest[0].decode("utf-8", "replace"))[0]
        where["inode"], where["offset"] = current.st_ino, 0
    if where["inode"] is None:
        where["inode"] = current.st_ino
    if current.st_size < where["offset"]:  # truncated in place
        where["offset"] = 0
    grown = read_from(log, where["inode"], where["offset"])
    if grown is not None:
        counted += _llm_usage.add_lines(state, grown[0].decode("utf-8", "replace"))[0]
        where["offset"] = grown[1]
    return counted


def publish(config: dict, state: dict, budgets: dict) -> None:
    now = datetime.datetime.now().astimezone()
    today, month = now.date().isoformat(), now.strftime("%Y-%m")
    _monitoring.write_atomically(config["state"], json.dumps(state, sort_keys=True) + "\n", 0o600)
    blocked = _llm_usage.over_budget(state, budgets, today)
    # Who is over budget, and by how much, is the users' business: readable by nginx's workers (its group) only.
    gid = grp.getgrnam(config["blocked_group"]).gr_gid if config.get("blocked_group") else None
    _monitoring.write_atomically(config["blocked"], json.dumps(blocked, sort_keys=True) + "\n", 0o640 if gid is not None else 0o644, gid)
    if config.get("textfile"):
        metrics = _llm_usage.usage_metrics(_monitoring.Metrics(), state, budgets, today, month)
        _monitoring.write_atomically(config["textfile"], metrics.render(), 0o644)


def main(argv: list) -> int:
    with open(argv[1] if len(argv) > 1 else CONFIG, encoding="utf-8") as stream:
        config = json.load(stream)
    try:
        with open(config["state"], encoding="utf-8") as stream:
            state = _llm_usage.load_state(stream.read())
    except FileNotFoundError:
        state = _llm_usage.empty_state()
    budgets = config["budgets"]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    day = None
    while True:
        counted = follow(state, config["log"])
        today = datetime.date.today().isoformat()
        if counted or today != day:
            publish(config, state, budgets)
            day = today
        time.sleep(config.get("interval", 1))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
