"""
A router with three sides, for test/deploy/import/nat-interfaces-kernel.test.ts (a NAT node per masqueraded
interface): run as root of a fresh network namespace (`unshare -rn python3 nat-probe3.py`), reads one job as JSON
on stdin and writes, per packet, where it left the router and how: [side, src, dst, sport, dport], or null when it
left by no side.

The namespace is the router, as nat-probe.py's but with three veths, each with its peer the prober sends and reads
on: `wan` (the default route through it, the address job["addresses"]["wan"] on it), `vpn` (the prefix job["vpn"]
through it, its address on it) and `lan` (the prefixes job["lan"] through it). The job's iptables-restore file is
loaded as the router would load it. Each packet has a conntrack zone of its own (its number, in the source MAC's
last two bytes, set before conntrack), so no packet meets another's connection or translation.

After each packet the prober sends, on the same peer, one sentinel frame per other side; a netdev ingress rule
forwards each to its side directly, past the IP stack. All frames are queued on one CPU (this process is pinned to
it) and handled in order, so when a side's sentinel arrives there, the packet has arrived there before it or never
will: no waiting for a time.
"""
import json
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from rawnet import PACKET_OUTGOING, checksum, listener, run  # noqa: E402

SIDES = ["wan", "vpn", "lan"]
PEER = {"wan": "xw", "vpn": "xv", "lan": "xl"}
MAC = {
    "wan": "02:00:00:00:01:01",
    "xw": "02:00:00:00:01:02",
    "lan": "02:00:00:00:01:03",
    "xl": "02:00:00:00:01:04",
    "vpn": "02:00:00:00:01:05",
    "xv": "02:00:00:00:01:06",
}
# The next hop on each side: the peer's MAC, a permanent neighbour.
HOP = {"wan": "192.0.2.1", "lan": "192.0.2.2", "vpn": "192.0.2.3"}
SENTINEL_SRC = "198.18.0.1"
SENTINEL_DST = {"wan": "198.18.0.11", "vpn": "198.18.0.12", "lan": "198.18.0.13"}
SENTINEL_PROTO = 253


def setup(job):
    for side in SIDES:
        peer = PEER[side]
        link = ["ip", "link", "add", side, "address", MAC[side], "type", "veth"]
        run([*link, "peer", "name", peer, "address", MAC[peer]])
    for dev in ["lo", *SIDES, *PEER.values()]:
        run(["ip", "link", "set", dev, "up"])
    settings = [("net/ipv4/ip_forward", "1")]
    settings += [(f"net/ipv4/conf/{dev}/rp_filter", "0") for dev in ["all", "default"]]
    settings += [(f"net/ipv4/conf/{side}/rp_filter", "0") for side in SIDES]
    settings += [(f"net/ipv4/conf/{peer}/forwarding", "0") for peer in PEER.values()]
    for key, value in settings:
        with open(f"/proc/sys/{key}", "w") as f:
            f.write(value)
    run(["ip", "addr", "add", f"{job['addresses']['wan']}/32", "dev", "wan"])
    run(["ip", "addr", "add", f"{job['addresses']['vpn']}/32", "dev", "vpn"])
    run(["ip", "addr", "add", "192.0.2.9/32", "dev", "lan"])
    for side in SIDES:
        run(["ip", "neigh", "add", HOP[side], "lladdr", MAC[PEER[side]], "dev", side, "nud", "permanent"])
    run(["ip", "route", "add", "default", "via", HOP["wan"], "dev", "wan", "onlink"])
    run(["ip", "route", "add", job["vpn"], "via", HOP["vpn"], "dev", "vpn", "onlink"])
    for prefix in job["lan"]:
        run(["ip", "route", "add", prefix, "via", HOP["lan"], "dev", "lan", "onlink"])
    chains = []
    for side in SIDES:
        rules = "".join(
            f"\t\tip saddr {SENTINEL_SRC} ip protocol {SENTINEL_PROTO} ip daddr {SENTINEL_DST[to]} fwd to \"{to}\";\n"
            for to in SIDES
            if to != side
        )
        chains.append(f'\tchain {side} {{ type filter hook ingress device "{side}" priority 0;\n{rules}\t}}\n')
    harness = (
        "table netdev nfvnatprobe3 {\n" + "".join(chains) + "}\n"
        "table ip nfvnatzone {\n"
        "\tchain pre { type filter hook prerouting priority -350; ct zone set @ll,80,16; }\n"
        "}\n"
    )
    run(["nft", "-f", "-"], stdin=harness)
    with open(job["load"]) as f:
        run(["iptables-restore"], stdin=f.read())


def packet(ident, proto, src, dst, sport, dport):
    if proto == 6:
        l4 = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, 0x02, 65535, 0, 0)
        pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(l4))
        l4 = l4[:16] + struct.pack("!H", checksum(pseudo + l4)) + l4[18:]
    elif proto == 17:
        l4 = struct.pack("!HHHH", sport, dport, 8, 0)
    else:
        l4 = struct.pack("!HHI", sport, dport, 0)
    ip = struct.pack(
        "!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), ident, 0, 64, proto, 0, socket.inet_aton(src), socket.inet_aton(dst)
    )
    return ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:] + l4


def frame(to, by, zone, ip):
    mac = lambda dev: bytes.fromhex(MAC[dev].replace(":", ""))
    return mac(to) + mac(by)[:4] + struct.pack("!H", zone) + b"\x08\x00" + ip


def main():
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    job = json.load(sys.stdin)
    setup(job)
    tx, rx = {}, {}
    for side in SIDES:
        tx[side] = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        tx[side].bind((PEER[side], 0))
        rx[side] = listener(PEER[side])
    out = []
    for k, (proto, src, dst, sport, dport, side) in enumerate(job["packets"]):
        ident = zone = k % 65535 + 1
        peer = PEER[side]
        tx[side].send(frame(side, peer, zone, packet(ident, proto, src, dst, sport, dport)))
        others = [s for s in SIDES if s != side]
        for to in others:
            tx[side].send(frame(side, peer, 0, packet(0, SENTINEL_PROTO, SENTINEL_SRC, SENTINEL_DST[to], 0, 0)))
        seen = None
        for to in others:
            while True:
                try:
                    data, where = rx[to].recvfrom(2048)
                except socket.timeout:
                    raise RuntimeError(f"packet {k}: the sentinel to {to} did not arrive within 10 s")
                if where[2] == PACKET_OUTGOING:
                    continue
                ip = data[14:]
                if ip[9] == SENTINEL_PROTO and socket.inet_ntoa(ip[12:16]) == SENTINEL_SRC:
                    break
                (got,) = struct.unpack("!H", ip[4:6])
                if got == ident and ip[9] == proto:
                    ports = struct.unpack("!HH", ip[20:24]) if proto in (6, 17) else (sport, dport)
                    seen = [to, socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20]), ports[0], ports[1]]
        out.append(seen)
    json.dump(out, sys.stdout)


try:
    main()
except Exception as e:  # one line for the test to show
    print(f"nat-probe3.py: {e}", file=sys.stderr)
    sys.exit(1)
