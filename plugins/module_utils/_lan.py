# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Which addresses of the macvlan range another machine of the LAN already answers for (pure: the reads' text in,
Python values out). Used by the module lan_neighbors_info (the probe) and the filter hosts_ready (the verdict)."""

from __future__ import annotations

import ipaddress
import json
import struct

ETH_P_ARP = 0x0806
BROADCAST = b"\xff" * 6
# The most addresses one probe pings (a /22): a larger range is a typo, and the probe would flood the LAN.
MAX_PROBED = 1024


def range_addresses(network: str) -> list[str]:
    """Every address of an IPv4 network (CIDR): a macvlan range inside a larger subnet hands out its first and last
    addresses too (Docker gave the slurm scenario's slurmdbd container 172.31.240.192 of 172.31.240.192/28).
    ValueError for a bad or too large network."""
    net = ipaddress.IPv4Network(network, strict=True)
    if net.num_addresses > MAX_PROBED:
        raise ValueError(f"{network} has {net.num_addresses} addresses, more than the {MAX_PROBED} a probe pings")
    return [str(address) for address in net]


def mac_bytes(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", ""))


def mac_text(raw: bytes) -> str:
    return ":".join(f"{byte:02x}" for byte in raw)


def arp_request(src_mac: str, src_ip: str, target: str) -> bytes:
    """An Ethernet frame asking the LAN who has TARGET (ARP who-has, RFC 826), from SRC_MAC and SRC_IP."""
    mac = mac_bytes(src_mac)
    return (BROADCAST + mac + struct.pack("!H", ETH_P_ARP)
            + struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, mac, ipaddress.IPv4Address(src_ip).packed,
                          b"\x00" * 6, ipaddress.IPv4Address(target).packed))


def arp_reply(frame: bytes):
    """(address, MAC) of an ARP reply frame ("ADDRESS is at MAC": the sender's fields), or None for any other frame."""
    if len(frame) < 42 or struct.unpack("!H", frame[12:14])[0] != ETH_P_ARP:
        return None
    htype, ptype, hlen, plen, oper, sha, spa = struct.unpack("!HHBBH6s4s", frame[14:32])
    if (htype, ptype, hlen, plen, oper) != (1, 0x0800, 6, 4, 2):
        return None
    return str(ipaddress.IPv4Address(spa)), mac_text(sha)


def answered(replies, network: str) -> list[dict]:
    """The addresses inside NETWORK that answered, from the (address, MAC) pairs of the replies heard:
    [{address, lladdr}] sorted by address, each address with every MAC that answered for it (two: a conflict)."""
    net = ipaddress.IPv4Network(network, strict=False)
    found = {}
    for address, mac in replies:
        macs = found.setdefault(ipaddress.IPv4Address(address), [])
        if mac not in macs:
            macs.append(mac)
    found = {a: macs for a, macs in found.items() if a in net}
    return [{"address": str(a), "lladdr": ",".join(found[a])} for a in sorted(found)]


def known_addresses(read: str) -> set[str]:
    """The IPv4 addresses a cluster host holds, from one read of it: `ip -j -4 addr show` (one line of JSON: its own
    addresses, shims included), then `docker network inspect NETWORK` (its containers on the network), or nothing
    where the network or the engine does not exist yet."""
    first, _sep, rest = (read or "").strip().partition("\n")
    addresses = set()
    for interface in json.loads(first or "[]"):
        addresses.update(info["local"] for info in interface.get("addr_info") or [] if info.get("family", "inet") == "inet")
    for network in json.loads(rest) if rest.strip() else []:
        for container in (network.get("Containers") or {}).values():
            if container.get("IPv4Address"):
                addresses.add(container["IPv4Address"].split("/")[0])
    return addresses


def taken(found: list[dict], known: set[str], gateway: str = "") -> list[dict]:
    """The answered neighbours that are none of the cluster's hosts, shims and containers, nor the gateway."""
    return [entry for entry in found if entry["address"] not in known and entry["address"] != gateway]
