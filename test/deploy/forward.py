"""
Real packets through the kernel's forward path, for test/deploy/nftables.test.ts. Run as root of a fresh network
namespace (`unshare -rn python3 forward.py`): reads jobs as JSON on stdin, writes one list of verdicts per job on
stdout, True where the kernel forwarded the packet.

The namespace: veth pairs in0/in1 (packets enter on in1) and out0/out1 (forwarded packets leave on out0 towards a
permanent neighbour, the MAC of out1, and are read on out1), forwarding on, rp_filter off, packets that arrive on
out1 not forwarded again. A job loads a ruleset (its `load` command), sends each packet as a raw Ethernet frame on
in0, and says whether it arrives on out1; then runs its `unload` command. The packets a test sends have ordinary
unicast addresses, so the firewall is the only thing that can stop them (a job without a ruleset shows it).

A packet may go the other way (`back`): sent on out1, forwarded from out0 to in1 (the route to CLIENT) and read on
in0, as a server's reply to a client behind in1 would. Each job sees only its own connections: its frames carry the
job's number in the last two bytes of their source MAC, which nothing else reads, and a rule at prerouting, before
conntrack, makes that number the packet's conntrack zone (no nft call per job). TCP packets carry a valid checksum
and may set their flags, sequence and acknowledgment numbers; an ICMP error (`error`) carries the IP header and
first 8 bytes of the packet it is about, as conntrack needs them to find that packet's connection.

Each packet is followed by a sentinel frame that a netdev ingress rule on in1 forwards to out0 directly (`fwd`; on
out0 to in1 for a `back` packet), past the IP stack and so past every firewall. Both frames are queued on one CPU
(this process is pinned to it) and the kernel handles that CPU's queue in order, so when the sentinel arrives, the
packet has either arrived before it or been dropped: the verdict is known without waiting for a time.
"""
import json
import os
import socket
import struct
import sys

from libnft import nft
from rawnet import PACKET_OUTGOING, checksum, listener, run

MAC = {"in0": "02:00:00:00:00:01", "in1": "02:00:00:00:00:02", "out0": "02:00:00:00:00:03", "out1": "02:00:00:00:00:04"}
SENTINEL_SRC = "198.51.100.1"
SENTINEL_PROTO = 253  # an experimental protocol number, never one of the test's packets
CLIENT = "203.0.113.1"  # routed back through in1 (one address: the random tests' packets practically never go there)


def setup():
    run(["ip", "link", "add", "in0", "address", MAC["in0"], "type", "veth", "peer", "name", "in1", "address", MAC["in1"]])
    run(["ip", "link", "add", "out0", "address", MAC["out0"], "type", "veth", "peer", "name", "out1", "address", MAC["out1"]])
    for dev in ["lo", "in0", "in1", "out0", "out1"]:
        run(["ip", "link", "set", dev, "up"])
    for key, value in [
        ("net/ipv4/ip_forward", "1"),
        ("net/ipv4/conf/all/rp_filter", "0"),
        ("net/ipv4/conf/default/rp_filter", "0"),
        ("net/ipv4/conf/in1/rp_filter", "0"),
        ("net/ipv4/conf/out1/forwarding", "0"),
        ("net/ipv4/conf/in0/forwarding", "0"),
    ]:
        with open(f"/proc/sys/{key}", "w") as f:
            f.write(value)
    run(["ip", "neigh", "add", "192.0.2.1", "lladdr", MAC["out1"], "dev", "out0", "nud", "permanent"])
    run(["ip", "route", "add", "default", "via", "192.0.2.1", "dev", "out0", "onlink"])
    run(["ip", "neigh", "add", "192.0.2.2", "lladdr", MAC["in0"], "dev", "in1", "nud", "permanent"])
    run(["ip", "route", "add", f"{CLIENT}/32", "via", "192.0.2.2", "dev", "in1", "onlink"])
    harness = (
        "table netdev nfvharness {\n"
        '\tchain in1 { type filter hook ingress device "in1" priority 0;\n'
        f'\t\tip saddr {SENTINEL_SRC} ip protocol {SENTINEL_PROTO} fwd to "out0"; }}\n'
        '\tchain out0 { type filter hook ingress device "out0" priority 0;\n'
        f'\t\tip saddr {SENTINEL_SRC} ip protocol {SENTINEL_PROTO} fwd to "in1"; }}\n'
        "}\n"
        "table ip nfvzone {\n"
        "\tchain pre { type filter hook prerouting priority raw; ct zone set @ll,80,16; }\n"
        "}\n"
    )
    run(["nft", "-f", "-"], stdin=harness)


def apply(args):
    """A job's load or unload: nft's through libnftables in this process (a process each cost more CPU than the
    load), others (iptables-restore, sh) as processes."""
    if args[0] != "nft":
        return run(args)
    code, _, err = nft(args[1:])
    if code != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {code}: {err.strip()}")


def mac(dev):
    return bytes.fromhex(MAC[dev].replace(":", ""))


def packet(ident, proto, src, dst, sport, dport, opts):
    """The IP packet. TCP: a SYN unless opts say flags, seq, ack; ICMP with opts["error"]: an error about a packet."""
    if proto == 6:
        flags, seq, ack = opts.get("flags", 0x02), opts.get("seq", 1), opts.get("ack", 0)
        l4 = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0)
        pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(l4))
        l4 = l4[:16] + struct.pack("!H", checksum(pseudo + l4)) + l4[18:]
    elif proto == 17:
        l4 = struct.pack("!HHHH", sport, dport, 8, 0)
    elif proto == 1 and "error" in opts:
        kind, code, about = opts["error"]
        l4 = struct.pack("!BBHI", kind, code, 0, 0) + packet(0, *about, {})[:28]
        l4 = l4[:2] + struct.pack("!H", checksum(l4)) + l4[4:]
    else:  # no ports, but the bytes where TCP and UDP have them carry the same values, as a trap for a missing guard
        l4 = struct.pack("!HHI", sport, dport, 0)
    ip = struct.pack(
        "!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), ident, 0, 64, proto, 0, socket.inet_aton(src), socket.inet_aton(dst)
    )
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    return ip + l4


def frame(ident, proto, src, dst, sport, dport, opts=None, back=False, zone=0):
    opts = opts or {}
    ip = packet(ident, proto, src, dst, sport, dport, opts)
    (to, by) = (mac("out0"), mac("out1")) if back else (mac("in1"), mac("in0"))
    # `mac`: the first four bytes of the source MAC, for a test of -m mac (the last two stay the job's zone).
    if "mac" in opts:
        by = bytes.fromhex(opts["mac"].replace(":", ""))
    return to + by[:4] + struct.pack("!H", zone) + b"\x08\x00" + ip


def main():
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    jobs = json.load(sys.stdin)
    setup()
    tx = {}
    for dev in ["in0", "out1"]:
        tx[dev] = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        tx[dev].bind((dev, 0))
    rx = {"out1": listener("out1"), "in0": listener("in0")}
    sentinel = {back: frame(0, SENTINEL_PROTO, SENTINEL_SRC, "198.51.100.2", 0, 0, back=back) for back in [False, True]}
    results = []
    for job in jobs:
        zone = len(results) % 65535 + 1
        if job.get("load"):
            apply(job["load"])
        verdicts = []
        for k, (proto, src, dst, sport, dport, *more) in enumerate(job["packets"]):
            opts = more[0] if more else {}
            back = bool(opts.get("back"))
            ident = k % 65535 + 1
            (send, read) = (tx["out1"], rx["in0"]) if back else (tx["in0"], rx["out1"])
            send.send(frame(ident, proto, src, dst, sport, dport, opts, back, zone))
            send.send(sentinel[back])
            arrived = False
            while True:
                try:
                    data, where = read.recvfrom(2048)
                except socket.timeout:
                    raise RuntimeError(f"job {len(results)}, packet {k}: the sentinel did not arrive within 10 s")
                if where[2] == PACKET_OUTGOING:
                    continue
                (got,) = struct.unpack("!H", data[18:20])
                if data[23] == SENTINEL_PROTO and socket.inet_ntoa(data[26:30]) == SENTINEL_SRC:
                    break
                if got == ident and data[23] == proto:
                    arrived = True
            verdicts.append(arrived)
        if job.get("unload"):
            apply(job["unload"])
        results.append(verdicts)
    json.dump(results, sys.stdout)


try:
    main()
except Exception as e:  # one line for the test to show
    print(f"forward.py: {e}", file=sys.stderr)
    sys.exit(1)
