"""The lan_neighbors_info module's glue: the route read with ip (a stand-in on PATH printing the slurm scenario's
real `ip -j route get`), a who-has sent for every address of the range out of that interface, and the replies heard
(a stand-in packet socket that hands back the frames ctrl1 really heard, fixtures/lan)."""

from __future__ import annotations

import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.hpclab.cluster.plugins.module_utils._lan import arp_reply
from ansible_collections.hpclab.cluster.plugins.modules import lan_neighbors_info


class FakeSocket:
    """A bound AF_PACKET socket: what was sent, and the captured frames to receive, then silence."""

    def __init__(self, frames):
        self.sent, self.frames, self.bound = [], list(frames), None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def bind(self, address):
        self.bound = address

    def send(self, frame):
        self.sent.append(frame)

    def recv(self, _size):
        return self.frames.pop(0)


@pytest.fixture
def lan(tmp_path, monkeypatch, fixture_text):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "route.json").write_text(fixture_text("lan", "ip-j-route-get-ctrl1.json"))
    (bin_dir / "ip").write_text(f'#!/bin/sh\n[ "$1 $2 $3" = "-j route get" ] && exec cat {tmp_path / "route.json"}\nexit 2\n')
    (bin_dir / "ip").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    frames = [bytes.fromhex(line) for line in fixture_text("lan", "arp-frames-ctrl1.txt").splitlines() if line and not line.startswith("#")]
    sock = FakeSocket(frames)
    monkeypatch.setattr(lan_neighbors_info.socket, "socket", lambda *args: sock)
    monkeypatch.setattr(lan_neighbors_info.select, "select", lambda r, w, x, t: (r if sock.frames else [], [], []))
    real_open = open

    def fake_open(path, *args, **kwargs):
        if str(path) == "/sys/class/net/hpclab-shim/address":
            path = tmp_path / "address"
            path.write_text("2a:c6:c2:fe:02:bd\n")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", fake_open)
    return sock


def run(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit):
        lan_neighbors_info.main()
    return json.loads(capsys.readouterr().out)


def test_every_address_is_asked_once_through_the_routes_interface(lan, capsys):
    result = run(capsys, network="172.31.240.192/28", _ansible_check_mode=True)
    assert result["changed"] is False and result["probed"] == 16
    assert result["interface"] == {"dev": "hpclab-shim", "address": "172.31.240.206"} and lan.bound == ("hpclab-shim", 0)
    asked = [".".join(str(b) for b in frame[38:42]) for frame in lan.sent]
    assert asked == [f"172.31.240.{n}" for n in range(192, 208)]
    assert all(arp_reply(frame) is None and frame[6:12].hex() == "2ac6c2fe02bd" for frame in lan.sent)
    assert [e["address"] for e in result["answered"]] == ["172.31.240.192", "172.31.240.193", "172.31.240.194",
                                                          "172.31.240.195", "172.31.240.200", "172.31.240.207"]


@pytest.mark.parametrize("args,words", [
    ({"network": "10.0.0.0/16"}, "more than the 1024 a probe pings"),
    ({"network": "172.31.240.193/28"}, "has host bits set"),
    ({"network": "172.31.240.192/28", "timeout": 0}, "timeout: 0 is not a number of seconds"),
])
def test_bad_arguments_fail_before_any_request(lan, capsys, args, words):
    result = run(capsys, **args)
    assert result["failed"] and words in result["msg"], result
    assert not lan.sent
