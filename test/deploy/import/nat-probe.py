"""
A router with its own iptables-save file, for test/deploy/import/nat.test.ts: run as root of a fresh network
namespace (`unshare -rn python3 nat-probe.py`), reads one job as JSON on stdin and writes, per packet, what left
the router on the other side: the header as it arrived there ([src, dst, sport, dport]) or null when nothing did.

The namespace is the router: interface `wan` (its outside; the router's address `nat` on it, the default route
through it) and `lan` (its inside; a route for each prefix of `inside` through it), each a veth whose peer (xw, xl)
the prober sends and reads on. Packets from outside are sent on xw and read on xl, from inside the other way. The
job's file is loaded by iptables-restore (or `nft -f` for an nft ruleset; iptables-legacy-restore for a file too
large for one nf_tables message), as the router would load it. Each packet gets a conntrack zone of its
own (its number, in the source MAC's last two bytes, set before conntrack), so no packet meets another's
connection or translation, and a translated source keeps its port.

A sentinel frame follows each packet; a netdev ingress rule forwards it to the other side directly, past the IP
stack. Both frames are queued on one CPU (this process is pinned to it) and handled in order, so when the sentinel
arrives, the packet has arrived before it or never will: no waiting for a time.
"""
import json
import os
import socket
import struct
import sys

# rawnet.py, shared with forward.py, is in the folder above this one.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from rawnet import PACKET_OUTGOING, checksum, listener, run  # noqa: E402

MAC = {"wan": "02:00:00:00:01:01", "xw": "02:00:00:00:01:02", "lan": "02:00:00:00:01:03", "xl": "02:00:00:00:01:04"}
SENTINEL_SRC = "198.18.0.1"
SENTINEL_PROTO = 253


def setup(job):
    wan, lan = job["wan"], job["lan"]
    run(["ip", "link", "add", wan, "address", MAC["wan"], "type", "veth", "peer", "name", "xw", "address", MAC["xw"]])
    run(["ip", "link", "add", lan, "address", MAC["lan"], "type", "veth", "peer", "name", "xl", "address", MAC["xl"]])
    for dev in ["lo", wan, lan, "xw", "xl"]:
        run(["ip", "link", "set", dev, "up"])
    for key, value in [
        ("net/ipv4/ip_forward", "1"),
        ("net/ipv4/conf/all/rp_filter", "0"),
        ("net/ipv4/conf/default/rp_filter", "0"),
        (f"net/ipv4/conf/{wan}/rp_filter", "0"),
        (f"net/ipv4/conf/{lan}/rp_filter", "0"),
        ("net/ipv4/conf/xw/forwarding", "0"),
        ("net/ipv4/conf/xl/forwarding", "0"),
    ]:
        with open(f"/proc/sys/{key}", "w") as f:
            f.write(value)
    run(["ip", "addr", "add", f"{job['nat']}/32", "dev", wan])
    run(["ip", "addr", "add", "192.0.2.9/32", "dev", lan])
    run(["ip", "neigh", "add", "192.0.2.1", "lladdr", MAC["xw"], "dev", wan, "nud", "permanent"])
    run(["ip", "route", "add", "default", "via", "192.0.2.1", "dev", wan, "onlink"])
    run(["ip", "neigh", "add", "192.0.2.2", "lladdr", MAC["xl"], "dev", lan, "nud", "permanent"])
    for prefix in job["inside"]:
        run(["ip", "route", "add", prefix, "via", "192.0.2.2", "dev", lan, "onlink"])
    harness = (
        "table netdev nfvnatprobe {\n"
        f'\tchain w {{ type filter hook ingress device "{wan}" priority 0;\n'
        f'\t\tip saddr {SENTINEL_SRC} ip protocol {SENTINEL_PROTO} fwd to "{lan}"; }}\n'
        f'\tchain l {{ type filter hook ingress device "{lan}" priority 0;\n'
        f'\t\tip saddr {SENTINEL_SRC} ip protocol {SENTINEL_PROTO} fwd to "{wan}"; }}\n'
        "}\n"
        "table ip nfvnatzone {\n"
        "\tchain pre { type filter hook prerouting priority -350; ct zone set @ll,80,16; }\n"
        "}\n"
    )
    run(["nft", "-f", "-"], stdin=harness)
    with open(job["load"]) as f:
        loader = {"nft": ["nft", "-f", "-"], "legacy": ["iptables-legacy-restore"]}.get(job.get("loader"))
        run(loader or ["iptables-restore"], stdin=f.read())


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
    tx = {}
    for dev in ["xw", "xl"]:
        tx[dev] = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        tx[dev].bind((dev, 0))
    rx = {"xl": listener("xl"), "xw": listener("xw")}
    out = []
    for k, (proto, src, dst, sport, dport, side) in enumerate(job["packets"]):
        ident, zone = k % 65535 + 1, k % 65535 + 1
        (send, to, read) = ("xw", "wan", "xl") if side == "out" else ("xl", "lan", "xw")
        tx[send].send(frame(to, send, zone, packet(ident, proto, src, dst, sport, dport)))
        tx[send].send(frame(to, send, 0, packet(0, SENTINEL_PROTO, SENTINEL_SRC, "198.18.0.2", 0, 0)))
        seen = None
        while True:
            try:
                data, where = rx[read].recvfrom(2048)
            except socket.timeout:
                raise RuntimeError(f"packet {k}: the sentinel did not arrive within 10 s")
            if where[2] == PACKET_OUTGOING:
                continue
            ip = data[14:]
            if ip[9] == SENTINEL_PROTO and socket.inet_ntoa(ip[12:16]) == SENTINEL_SRC:
                break
            (got,) = struct.unpack("!H", ip[4:6])
            if got == ident and ip[9] == proto:
                ports = struct.unpack("!HH", ip[20:24]) if proto in (6, 17) else (sport, dport)
                seen = [socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20]), ports[0], ports[1]]
        out.append(seen)
    json.dump(out, sys.stdout)


try:
    main()
except Exception as e:  # one line for the test to show
    print(f"nat-probe.py: {e}", file=sys.stderr)
    sys.exit(1)
