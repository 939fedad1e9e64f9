"""tests/bench-gateway's table: the rounds of tests/lab/bench/gateway_load.py (one JSON object per line on stdin), each
figure the median of the rounds; printed and appended to tests/output/bench/gateway.log.

Usage: python3 gateway_table.py COMMIT NODE < rounds"""

from __future__ import annotations

import json
import statistics
import sys
import time


def table(rounds: list, commit: str, node: str) -> str:
    first = rounds[0]
    limits = ", ".join(first["concurrent_limits"]) or "none"
    lines = [f"{time.strftime('%Y-%m-%d %H:%M')} commit {commit} node {node} model {first['model']} "
             f"(concurrent-request limits {limits}), median of {len(rounds)} rounds; ms and requests/s",
             f"{'case':8} {'clients':>7} {'gw p50':>8} {'dir p50':>8} {'added':>7} {'gw p95':>8} {'dir p95':>8} {'added':>7} "
             f"{'gw/s':>7} {'dir/s':>7} {'ratio':>6}"]
    for index, case in enumerate(first["cases"]):
        def median(path, key, index=index):
            return statistics.median(one["cases"][index][path][key] for one in rounds)
        g50, d50, g95, d95 = median("gateway", "p50_ms"), median("direct", "p50_ms"), median("gateway", "p95_ms"), median("direct", "p95_ms")
        gps, dps = median("gateway", "per_s"), median("direct", "per_s")
        lines.append(f"{case['case']:8} {case['clients']:>7} {g50:8.2f} {d50:8.2f} {g50 - d50:7.2f} {g95:8.2f} {d95:8.2f} "
                     f"{g95 - d95:7.2f} {gps:7.1f} {dps:7.1f} {gps / dps:6.3f}")
    return "\n".join(lines)


if __name__ == "__main__":
    text = table([json.loads(line) for line in sys.stdin if line.strip()], sys.argv[1], sys.argv[2])
    print(text)
    with open("tests/output/bench/gateway.log", "a", encoding="utf-8") as log:
        log.write(text + "\n")
