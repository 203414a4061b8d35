"""
Real packets through the kernel's forward path, for test/deploy/nftables.test.ts. Run as root of a fresh network
namespace (`unshare -rn python3 forward.py`): reads jobs as JSON on stdin, writes one list of verdicts per job on
stdout, True where the kernel forwarded the packet.

The namespace: veth pairs in0/in1 (packets enter on in1) and out0/out1 (forwarded packets leave on out0 towards a
permanent neighbour, the MAC of out1, and are read on out1), forwarding on, rp_filter off, packets that arrive on
out1 not forwarded again. A job loads a ruleset (its `load` command), sends each packet as a raw Ethernet frame on
in0, and says whether it arrives on out1; then runs its `unload` command. The packets a test sends have ordinary
unicast addresses, so the firewall is the only thing that can stop them (a job without a ruleset shows it).

Each packet is followed by a sentinel frame that a netdev ingress rule on in1 forwards to out0 directly (`fwd`),
past the IP stack and so past every firewall. Both frames are queued on one CPU (this process is pinned to it) and
the kernel handles that CPU's queue in order, so when the sentinel arrives on out1, the packet has either arrived
before it or been dropped: the verdict is known without waiting for a time.
"""
import json
import os
import socket
import struct
import subprocess
import sys

MAC = {"in0": "02:00:00:00:00:01", "in1": "02:00:00:00:00:02", "out0": "02:00:00:00:00:03", "out1": "02:00:00:00:00:04"}
SENTINEL_SRC = "198.51.100.1"
SENTINEL_PROTO = 253  # an experimental protocol number, never one of the test's packets


def run(args, stdin=None):
    done = subprocess.run(args, input=stdin, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")


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
    ]:
        with open(f"/proc/sys/{key}", "w") as f:
            f.write(value)
    run(["ip", "neigh", "add", "192.0.2.1", "lladdr", MAC["out1"], "dev", "out0", "nud", "permanent"])
    run(["ip", "route", "add", "default", "via", "192.0.2.1", "dev", "out0", "onlink"])
    harness = (
        "table netdev nfvharness {\n"
        '\tchain in1 { type filter hook ingress device "in1" priority 0;\n'
        f'\t\tip saddr {SENTINEL_SRC} ip protocol {SENTINEL_PROTO} fwd to "out0"; }}\n'
        "}\n"
    )
    run(["nft", "-f", "-"], stdin=harness)


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def mac(dev):
    return bytes.fromhex(MAC[dev].replace(":", ""))


def frame(ident, proto, src, dst, sport, dport):
    if proto == 6:  # a SYN
        l4 = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, 0x02, 65535, 0, 0)
    elif proto == 17:
        l4 = struct.pack("!HHHH", sport, dport, 8, 0)
    else:  # no ports, but the bytes where TCP and UDP have them carry the same values, as a trap for a missing guard
        l4 = struct.pack("!HHI", sport, dport, 0)
    ip = struct.pack(
        "!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), ident, 0, 64, proto, 0, socket.inet_aton(src), socket.inet_aton(dst)
    )
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    return mac("in1") + mac("in0") + b"\x08\x00" + ip + l4


def main():
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    jobs = json.load(sys.stdin)
    setup()
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind(("in0", 0))
    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    rx.bind(("out1", 0))
    rx.settimeout(10)
    sentinel = frame(0, SENTINEL_PROTO, SENTINEL_SRC, "198.51.100.2", 0, 0)
    results = []
    for job in jobs:
        if job.get("load"):
            run(job["load"])
        verdicts = []
        for k, (proto, src, dst, sport, dport) in enumerate(job["packets"]):
            ident = k % 65535 + 1
            tx.send(frame(ident, proto, src, dst, sport, dport))
            tx.send(sentinel)
            arrived = False
            while True:
                try:
                    data = rx.recv(2048)
                except socket.timeout:
                    raise RuntimeError(f"job {len(results)}, packet {k}: the sentinel did not arrive within 10 s")
                (got,) = struct.unpack("!H", data[18:20])
                if data[23] == SENTINEL_PROTO and socket.inet_ntoa(data[26:30]) == SENTINEL_SRC:
                    break
                if got == ident and data[23] == proto:
                    arrived = True
            verdicts.append(arrived)
        if job.get("unload"):
            run(job["unload"])
        results.append(verdicts)
    json.dump(results, sys.stdout)


try:
    main()
except Exception as e:  # one line for the test to show
    print(f"forward.py: {e}", file=sys.stderr)
    sys.exit(1)
