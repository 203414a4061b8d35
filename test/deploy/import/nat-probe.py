"""
A router with its own rule set and any number of sides, for the kernel checks of imported routers (nat-harness.ts:
two sides, for nat, nat-forms, nat-by-destination and nat-chair; nat-interfaces-kernel.test.ts: three;
nat-home-kernel.test.ts: the home router's fourteen): run as root of a fresh network namespace (`unshare -rn
python3 nat-probe.py`), reads one job as JSON on stdin and writes, per packet, where it left the router and how:
[side, src, dst, sport, dport], or null when it left by no other side.

The job: "sides", each {"name", "address" (the router's own address on it, optional), "routes" (prefixes routed
out of it; "0.0.0.0/0" the default route)}; "load", the rule set file; "loader", how the router loads it:
iptables-restore (the default), "nft" (`nft -f`, an nft ruleset) or "legacy" (iptables-legacy-restore, for a file
too large for one nf_tables message); "packets", each [proto, src, dst, sport, dport, side it comes in by]. The
namespace is the router: a veth per side, its peer the prober sends and reads on, the routes through a permanent
neighbour (the peer's MAC) on each side. Each packet has a conntrack zone of its own (its number, in the source
MAC's last two bytes, set before conntrack), so no packet meets another's connection or translation, and a
translated source keeps its port.

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

# rawnet.py, shared with forward.py, is in the folder above this one.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from rawnet import PACKET_OUTGOING, checksum, listener, run  # noqa: E402

SENTINEL_SRC = "198.18.0.1"
SENTINEL_PROTO = 253
LOADERS = {"": ["iptables-restore"], "nft": ["nft", "-f", "-"], "legacy": ["iptables-legacy-restore"]}


def mac(k, peer):
    """The side's MAC (its 4th byte the side's number) or its peer's; the last two bytes carry the zone."""
    return f"02:00:00:{k:02x}:00:{2 if peer else 1:02x}"


def setup(job):
    sides = job["sides"]
    loader = LOADERS.get(job.get("loader") or "")
    if loader is None:
        raise RuntimeError(f"loader {job['loader']!r}: not one of {', '.join(repr(k) for k in LOADERS)}")
    # The links, then the addresses, neighbours and routes, each through one `ip -batch` (a process per command cost
    # more CPU than the kernel's work).
    ip = []
    for k, side in enumerate(sides):
        ip.append(f"link add {side['name']} address {mac(k, False)} type veth peer name p{k} address {mac(k, True)}")
    for dev in ["lo"] + [s["name"] for s in sides] + [f"p{k}" for k in range(len(sides))]:
        ip.append(f"link set {dev} up")
    run(["ip", "-batch", "-"], stdin="".join(f"{line}\n" for line in ip))
    settings = [("net/ipv4/ip_forward", "1")]
    settings += [(f"net/ipv4/conf/{dev}/rp_filter", "0") for dev in ["all", "default"]]
    for k, side in enumerate(sides):
        settings += [(f"net/ipv4/conf/{side['name']}/rp_filter", "0"), (f"net/ipv4/conf/p{k}/forwarding", "0")]
    for key, value in settings:
        with open(f"/proc/sys/{key}", "w") as f:
            f.write(value)
    ip = []
    for k, side in enumerate(sides):
        name, hop = side["name"], f"192.0.2.{k + 1}"
        # An address on every side (the router's own, or one no packet uses) for what the kernel sends from it.
        ip.append(f"addr add {side.get('address') or '192.0.2.200'}/32 dev {name}")
        ip.append(f"neigh add {hop} lladdr {mac(k, True)} dev {name} nud permanent")
        for prefix in side["routes"]:
            to = "default" if prefix == "0.0.0.0/0" else prefix
            ip.append(f"route add {to} via {hop} dev {name} onlink")
    run(["ip", "-batch", "-"], stdin="".join(f"{line}\n" for line in ip))
    chains = []
    for k, side in enumerate(sides):
        rules = "".join(
            f"\t\tip saddr {SENTINEL_SRC} ip protocol {SENTINEL_PROTO} ip daddr 198.18.1.{j} "
            f"fwd to \"{other['name']}\";\n"
            for j, other in enumerate(sides)
            if j != k
        )
        chains.append(f'\tchain s{k} {{ type filter hook ingress device "{side["name"]}" priority 0;\n{rules}\t}}\n')
    harness = (
        "table netdev nfvnatprobes {\n" + "".join(chains) + "}\n"
        "table ip nfvnatzone {\n"
        "\tchain pre { type filter hook prerouting priority -350; ct zone set @ll,80,16; }\n"
        "}\n"
    )
    run(["nft", "-f", "-"], stdin=harness)
    with open(job["load"]) as f:
        run(loader, stdin=f.read())


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


def frame(k, zone, ip):
    """A frame from side k's peer to side k, the zone in the source MAC's last two bytes."""
    to, by = (bytes.fromhex(mac(k, peer).replace(":", "")) for peer in (False, True))
    return to + by[:4] + struct.pack("!H", zone) + b"\x08\x00" + ip


def main():
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    job = json.load(sys.stdin)
    setup(job)
    names = [s["name"] for s in job["sides"]]
    tx, rx = [], []
    for k in range(len(names)):
        tx.append(socket.socket(socket.AF_PACKET, socket.SOCK_RAW))
        tx[k].bind((f"p{k}", 0))
        rx.append(listener(f"p{k}"))
    out = []
    for n, (proto, src, dst, sport, dport, side) in enumerate(job["packets"]):
        ident = zone = n % 65535 + 1
        k = names.index(side)
        tx[k].send(frame(k, zone, packet(ident, proto, src, dst, sport, dport)))
        others = [j for j in range(len(names)) if j != k]
        for j in others:
            tx[k].send(frame(k, 0, packet(0, SENTINEL_PROTO, SENTINEL_SRC, f"198.18.1.{j}", 0, 0)))
        seen = None
        for j in others:
            while True:
                try:
                    data, where = rx[j].recvfrom(2048)
                except socket.timeout:
                    raise RuntimeError(f"packet {n}: the sentinel to {names[j]} did not arrive within 10 s")
                if where[2] == PACKET_OUTGOING:
                    continue
                ip = data[14:]
                if ip[9] == SENTINEL_PROTO and socket.inet_ntoa(ip[12:16]) == SENTINEL_SRC:
                    break
                (got,) = struct.unpack("!H", ip[4:6])
                if got == ident and ip[9] == proto:
                    ihl = (ip[0] & 0x0F) * 4
                    ports = struct.unpack("!HH", ip[ihl : ihl + 4]) if proto in (6, 17) else (sport, dport)
                    seen = [names[j], socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20]), ports[0], ports[1]]
        out.append(seen)
    json.dump(out, sys.stdout)


try:
    main()
except Exception as e:  # one line for the test to show
    print(f"nat-probe.py: {e}", file=sys.stderr)
    sys.exit(1)
