/**
 * The process that builds, probes and removes an emulated network: python3, run inside the emulation's own sandbox
 * (`run.ts`). One process switches network namespace per socket with setns(2) (through ctypes: Python 3.11 has
 * no os.setns): a socket stays in the namespace it was made in, so one select loop drives every probe of every
 * source at once. A process per source (`ip netns exec NS ...` with nc or bash) costs a process start per probe
 * batch and needs nc, which is not everywhere; python3 is (the kernel tests already need it).
 *
 * It reads the plan (one line of JSON) on stdin and writes per probe whether it arrived (one line); then it reads
 * which probes to send again alone and which rule counters to watch, and writes the rules whose counters rose;
 * last, what it used (peak memory, CPU seconds).
 * Failures: one line on stderr, exit 3 for a missing kernel feature
 * (the sandbox's caller turns it into exit 2), exit 4 for probes still undecided at the limit, exit 1 otherwise.
 */
export const PROBER = String.raw`
import ctypes, errno, json, os, queue, resource, select, socket, struct, subprocess, sys, threading, time

CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)
lines = queue.Queue()


def watch():
    # nfv holds this pipe open while it waits; it closes when nfv ends, however it ends: so does the sandbox.
    for line in sys.stdin:
        lines.put(line)
    os._exit(1)


threading.Thread(target=watch, daemon=True).start()
plan = json.loads(lines.get())


class Missing(Exception):
    pass


class Undecided(Exception):
    pass


def run(args, stdin=None, what=None):
    try:
        done = subprocess.run(args, input=stdin, capture_output=True, text=True)
    except FileNotFoundError:
        raise Missing("%s: %s is not installed" % (what or args[0], args[0]))
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["exit %d" % done.returncode]
        message = ([l for l in lines if "Error" in l] or lines)[0].strip()
        raise (Missing if what else RuntimeError)("%s: %s" % (what or " ".join(args[:3]), message))
    return done.stdout


def enter(ns):
    # Opened for each switch, not kept: a descriptor per namespace would push every socket past 1024, where
    # libnftables (which waits with select) aborts.
    fd = os.open("/run/netns/" + ns, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise RuntimeError("setns %s: %s" % (ns, os.strerror(ctypes.get_errno())))
    finally:
        os.close(fd)


NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE = 1, 4, 0x200, 0x400
RTM_NEWLINK, RTM_NEWADDR, RTM_NEWROUTE, RTM_NEWRULE = 16, 20, 24, 32


def attr(kind, data):
    return struct.pack("=HH", 4 + len(data), kind) + data + b"\0" * (-len(data) % 4)


def ip4(text):
    return socket.inet_aton(text.split("/")[0])


def index_of(ns, dev, known={}):
    if (ns, dev) not in known:
        known[(ns, dev)] = socket.if_nametoindex(dev)
    return known[(ns, dev)]


def message(ns, line):
    """One line of the plan's configuration (the ip syntax plan.ts writes, five forms) as a netlink message."""
    w = line.split()
    if w[0] == "link":  # link set DEV up [arp off]
        flags = 1 | (0x80 if w[4:] == ["arp", "off"] else 0)  # IFF_UP, IFF_NOARP
        return RTM_NEWLINK, 0, struct.pack("=BxHiII", 0, 0, index_of(ns, w[2]), flags, flags)
    if w[0] == "addr":  # addr add A/32 peer B/32 dev DEV
        head = struct.pack("=BBBBI", socket.AF_INET, 32, 0, 0, index_of(ns, w[6]))
        return RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, head + attr(2, ip4(w[2])) + attr(1, ip4(w[4]))
    if w[0] == "route":  # route add X/32 via G dev DEV table T
        head = struct.pack("=BBBBBBBBI", socket.AF_INET, 32, 0, 0, 0, 3, 0, 1, 0)
        body = attr(1, ip4(w[2])) + attr(5, ip4(w[4])) + attr(4, struct.pack("=i", index_of(ns, w[6])))
        return RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, head + body + attr(15, struct.pack("=I", int(w[8])))
    if w[0] == "rule":  # rule add [from A/32 to B/32] [tos T] table T pref P
        o = dict(zip(w[2::2], w[3::2]))
        tos = int(o.get("tos", "0"), 16)
        to, fro = 32 if "to" in o else 0, 32 if "from" in o else 0
        head = struct.pack("=BBBBBBBBI", socket.AF_INET, to, fro, tos, 0, 0, 0, 1, 0)
        body = (attr(2, ip4(o["from"])) if fro else b"") + (attr(1, ip4(o["to"])) if to else b"")
        body += attr(6, struct.pack("=I", int(o["pref"])))
        return RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL, head + body + attr(15, struct.pack("=I", int(o["table"])))
    raise RuntimeError("configuration line not understood: " + line)


def configure(ns, text):
    """Sends the namespace's configuration as netlink requests, many per write, and reads every acknowledgement:
    the first refusal names its line."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)  # NETLINK_ROUTE, in this namespace
    buffer = bytearray(1 << 16)
    try:
        lines = [l for l in text.split("\n") if l]
        for start in range(0, len(lines), 200):
            chunk = lines[start : start + 200]
            out = []
            for seq, line in enumerate(chunk, start):
                kind, flags, body = message(ns, line)
                head = struct.pack("=IHHII", 16 + len(body), kind, NLM_F_REQUEST | NLM_F_ACK | flags, seq, 0)
                out.append(head + body)
            sock.sendall(b"".join(out))
            left = len(chunk)
            while left:
                # One buffer for every read: a fresh megabyte per acknowledgement was most of the build's time.
                got = sock.recv_into(buffer)
                at = 0
                while at + 16 <= got:
                    size, kind, _, seq, _ = struct.unpack_from("=IHHII", buffer, at)
                    if kind == 2:  # NLMSG_ERROR: an acknowledgement, or a refusal
                        left -= 1
                        code = struct.unpack_from("=i", buffer, at + 16)[0]
                        if code:
                            raise Missing("addresses and routes of %s: %s: %s" % (ns, lines[seq], os.strerror(-code)))
                    at += (size + 3) & ~3
    finally:
        sock.close()


def build():
    # ip netns keeps its names in /run/netns: a tmpfs of this sandbox's own mount namespace, so nothing is left on
    # the host's file system whatever happens (where /run/netns does not exist, /run itself gets the tmpfs).
    where = "/run/netns" if os.path.isdir("/run/netns") else "/run"
    run(["mount", "-t", "tmpfs", "nfv-emulate", where], what="a tmpfs on " + where + " (mount namespace)")
    os.makedirs("/run/netns", exist_ok=True)
    run(["ip", "-batch", "-"], stdin=plan["create"], what="namespaces and veth pairs (ip -batch)")
    for ns in plan["namespaces"]:
        enter(ns)
        for key, value in plan["sysctl"]:
            try:
                with open("/proc/sys/" + key, "w") as f:
                    f.write(value)
            except FileNotFoundError:
                raise Missing("sysctl " + key.replace("/", ".") + " (a kernel without it)")
    # Addresses and routes: netlink messages from this process, a socket per namespace (an ip process per
    # namespace cost 40 ms each to start, most of the build of a small namespace).
    for ns in plan["namespaces"]:
        enter(ns)
        configure(ns, plan["config"][ns])
    global nft
    nft = Nft()
    firewalls = set(f["ns"] for f in plan["firewalls"])
    for ns, text in sorted(plan["nft"].items()):
        nft.run(ns, text)
        # Only firewalls' counters are read again: other contexts are freed, each holds a netlink socket.
        if ns not in firewalls:
            nft.free(ns)
    # iptables-restore of the deployed file, unchanged; then the control rule first.
    for ns, text in sorted(plan["iptables"].items()):
        enter(ns)
        run(["iptables-restore"], stdin=text, what="iptables-restore in " + ns)
        run(["iptables", "-I", "FORWARD", "1"] + plan["controlRule"], what="iptables in " + ns)
    # The counters' contexts too, while descriptors are few (the probes' sockets come later).
    for ns in sorted(firewalls - set(plan["iptables"])):
        nft.run(ns, "list tables", json_output=True)


class Nft:
    """libnftables in this process: a context per firewall namespace, its netlink socket opened in that namespace
    when the context is made (a process of nft per counter reading cost 58 ms, a call here half a millisecond)."""

    def __init__(self):
        try:
            lib = ctypes.CDLL("libnftables.so.1")
        except OSError as e:
            raise Missing("libnftables (the library nft is built on): %s" % e)
        lib.nft_ctx_new.restype = ctypes.c_void_p
        lib.nft_ctx_free.argtypes = [ctypes.c_void_p]
        for name in ["nft_ctx_buffer_output", "nft_ctx_buffer_error"]:
            getattr(lib, name).argtypes = [ctypes.c_void_p]
        for name in ["nft_ctx_get_output_buffer", "nft_ctx_get_error_buffer"]:
            getattr(lib, name).argtypes = [ctypes.c_void_p]
            getattr(lib, name).restype = ctypes.c_char_p
        lib.nft_ctx_output_set_flags.argtypes = [ctypes.c_void_p, ctypes.c_uint]
        lib.nft_run_cmd_from_buffer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        self.lib = lib
        self.contexts = {}

    def free(self, ns):
        self.lib.nft_ctx_free(self.contexts.pop((ns, False)))

    def run(self, ns, command, json_output=False):
        ctx = self.contexts.get((ns, json_output))
        if ctx is None:
            enter(ns)
            ctx = self.lib.nft_ctx_new(0)
            self.lib.nft_ctx_buffer_output(ctx)
            self.lib.nft_ctx_buffer_error(ctx)
            if json_output:
                self.lib.nft_ctx_output_set_flags(ctx, 1 << 4)  # NFT_CTX_OUTPUT_JSON
            self.contexts[(ns, json_output)] = ctx
        if self.lib.nft_run_cmd_from_buffer(ctx, command.encode()) != 0:
            said = (self.lib.nft_ctx_get_error_buffer(ctx) or b"").decode().strip().splitlines()
            raise Missing("nftables in %s: %s" % (ns, ([l for l in said if "Error" in l] or said or ["failed"])[0]))
        return (self.lib.nft_ctx_get_output_buffer(ctx) or b"").decode()


nft = None


def counters(ns):
    """Packets per rule of the firewall's chain in order (the control rule first), then the policy's."""
    if ns in plan["iptables"]:
        enter(ns)
        listed = run(["iptables", "-L", "FORWARD", "-v", "-x", "-n"]).splitlines()
        policy = int(listed[0].split("(policy ")[1].split()[1])
        return [int(line.split()[0]) for line in listed[2:] if line.strip()] + [policy]
    listed = json.loads(nft.run(ns, "list chain ip nfv forward", json_output=True))
    out = []
    for item in listed["nftables"]:
        rule = item.get("rule")
        if rule is None:
            continue
        packets = 0
        for e in rule["expr"]:
            if "counter" in e:
                packets = e["counter"]["packets"]
        out.append(packets)
    return out


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def dropped(ns, listed=None):
    """The packets a firewall's drop rules and dropping policy counted (from its counters, read unless given)."""
    c = counters(ns) if listed is None else listed
    return sum(c[i] for i in DROPS[ns])


DROPS = {f["ns"]: f["drops"] for f in plan["firewalls"]}


class Probes:
    """Every probe at once: sockets made in their namespaces, one select loop. A probe answered arrived; one refused
    or unreachable says so; one not answered is dropped only once the firewalls' drop counters account for it (each
    such probe adds one: its packet or its answer's, and each SYN sent again): on a busy machine an answer may come
    after any deadline, and a verdict read from the clock would turn it into a drop."""

    def __init__(self, probes, timeout):
        self.probes = probes
        self.timeout = timeout
        self.result = [None] * len(probes)
        self.waiting = {}  # fd -> (kind, probe index, socket)
        self.icmp = {}  # source namespace -> raw socket
        self.icmp_waiting = {}  # (ns, ident) -> probe index
        self.servers = {}
        self.sockets = []
        # Per firewall, its drops when every probe sent was last accounted for (none before the first).
        self.dropped = {}
        # Probes the kernel answered with an error: not arrived, and no rule dropped them.
        self.refused = set()

    def serve(self, listeners):
        for item in listeners:
            enter(item["ns"])
            for port in item["tcp"]:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                s.bind((item["addr"], port))
                # A server of many requirements gets many SYNs at once: a full accept queue drops a SYN, and its
                # retry comes a second later, after the probe's timeout (a drop the firewalls never made).
                s.listen(4096)
                s.setblocking(False)
                self.servers[s.fileno()] = ("tcp", s)
            for port in item["udp"]:
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
                s.bind((item["addr"], port))
                s.setblocking(False)
                self.servers[s.fileno()] = ("udp", s)

    def start(self, k):
        p = self.probes[k]
        enter(p["ns"])
        if p["proto"] == "icmp":
            raw = self.icmp.get(p["ns"])
            if raw is None:
                raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
                # Bound to the node's address: the path's routing rules name the source.
                raw.bind((p["src"], 0))
                raw.setblocking(False)
                self.icmp[p["ns"]] = raw
                self.waiting[raw.fileno()] = ("icmp", p["ns"], raw)
            ident = k % 65536
            body = struct.pack("!BBHHH", 8, 0, 0, ident, 1) + b"nfv-emulate"
            body = body[:2] + struct.pack("!H", checksum(body)) + body[4:]
            raw.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, p["tos"])
            raw.sendto(body, (p["dst"], 0))
            self.icmp_waiting[(p["ns"], ident)] = k
            return
        kind = socket.SOCK_STREAM if p["proto"] == "tcp" else socket.SOCK_DGRAM
        s = socket.socket(socket.AF_INET, kind)
        # A node is a source and a destination: its probes may use a port it listens on. Both sockets share it
        # (SO_REUSEPORT); a SYN goes to the listener only, and a connected UDP socket gets its peer's answers only.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, p["tos"])
        if p["proto"] == "tcp":
            # A reset, not FIN and TIME_WAIT: the same ports may be probed again on another path.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.bind((p["src"], p["sport"]))
        s.setblocking(False)
        self.sockets.append(s)
        if p["proto"] == "tcp":
            s.connect_ex((p["dst"], p["dport"]))
        else:
            s.connect((p["dst"], p["dport"]))
            s.send(b"nfv-emulate %d" % k)
        self.waiting[s.fileno()] = (p["proto"], k, s)

    def finish(self, k, arrived):
        if self.result[k] is None:
            self.result[k] = arrived

    def refuse(self, k):
        if self.result[k] is None:
            self.refused.add(k)
        self.finish(k, False)

    def accounted(self, indices):
        left = [k for k in indices if self.result[k] is None]
        sent_again = sum(
            struct.unpack_from("=I", w[2].getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104), 100)[0]
            for w in self.waiting.values()
            if w[0] == "tcp"
        )
        # Read only here: a batch whose probes all arrived dropped nothing.
        now = {ns: dropped(ns) for ns in DROPS}
        if sum(n - self.dropped.get(ns, 0) for ns, n in now.items()) != len(left) + sent_again:
            return False
        self.dropped = now
        return True

    def run(self, indices):
        for k in indices:
            self.start(k)
        deadline = time.monotonic() + self.timeout
        undecided = time.monotonic() + plan["undecidedSeconds"]
        pending = lambda: any(self.result[k] is None for k in indices)
        sweeps = 0
        while pending():
            left = deadline - time.monotonic()
            if left <= 0:
                # Past the deadline, two more looks without waiting (one answers the echo requests queued, the next
                # reads their echoes), then the drop counters: every probe not answered dropped ends the batch;
                # otherwise some are still on their way, and the wait goes on.
                if sweeps == 2:
                    if self.accounted(indices):
                        break
                    if time.monotonic() > undecided:
                        raise Undecided(
                            "%d probes neither answered nor dropped by a firewall in %d s"
                            % (sum(self.result[k] is None for k in indices), plan["undecidedSeconds"])
                        )
                    deadline, sweeps = time.monotonic() + self.timeout, 0
                    continue
                sweeps += 1
                left = 0
            poll = select.poll()
            for fd in self.servers:
                poll.register(fd, select.POLLIN)
            for fd, w in self.waiting.items():
                poll.register(fd, select.POLLOUT if w[0] == "tcp" else select.POLLIN)
            events = poll.poll(left * 1000)
            w = [fd for fd, ev in events if fd in self.waiting and self.waiting[fd][0] == "tcp"]
            r = [fd for fd, ev in events if fd not in w]
            for fd in w:
                _, k, s = self.waiting.pop(fd)
                code = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                # Connected or reset: the SYN arrived and the answer came back. A probe the model delivers to a NAT
                # counts only if connected: the NAT's own reset is where the model says it goes.
                if code == 0 or (code == errno.ECONNREFUSED and not self.probes[k].get("connect")):
                    self.finish(k, True)
                elif code in (errno.EHOSTUNREACH, errno.ENETUNREACH):
                    self.finish(k, "unreachable")
                else:
                    # Refused by a NAT's own reset, or another error the kernel answered: not arrived.
                    self.refuse(k)
                s.close()
            for fd in r:
                if fd in self.servers:
                    self.answer(*self.servers[fd])
                    continue
                kind, key, s = self.waiting[fd]
                if kind == "udp":
                    try:
                        s.recv(2048)
                        self.finish(key, True)
                    except OSError:
                        # An ICMP error the kernel answered (port unreachable): not arrived.
                        self.refuse(key)
                    del self.waiting[fd]
                    s.close()
                else:
                    self.icmp_reply(key, s)
        for k in indices:
            self.finish(k, False)
        for fd, w in list(self.waiting.items()):
            if w[0] in ("tcp", "udp"):
                w[2].close()
                del self.waiting[fd]

    def answer(self, kind, s):
        # Everything queued, not one per wake-up: the queues of a busy server must not fill.
        try:
            while True:
                if kind == "tcp":
                    c, _ = s.accept()
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    c.close()
                    continue
                data, anc, _, peer = s.recvmsg(2048, socket.CMSG_SPACE(4))
                tos = 0
                for level, kind_, value in anc:
                    if level == socket.IPPROTO_IP and kind_ == socket.IP_TOS:
                        tos = value[0]
                # The echo carries the probe's TOS back: its bits pin the reply to the probe's path.
                s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
                s.sendto(data, peer)
        except (BlockingIOError, InterruptedError):
            pass

    def icmp_reply(self, ns, raw):
        while True:
            try:
                data = raw.recv(2048)
            except (BlockingIOError, InterruptedError):
                return
            head = (data[0] & 15) * 4
            kind, _, _, ident, _ = struct.unpack("!BBHHH", data[head : head + 8])
            if kind == 0 and (ns, ident) in self.icmp_waiting:
                self.finish(self.icmp_waiting[(ns, ident)], True)
            elif kind in (3, 11) and len(data) >= head + 36:
                # Unreachable or time exceeded, quoting the echo request: the kernel answered, not arrived.
                inner = head + 8 + (data[head + 8] & 15) * 4
                quoted = struct.unpack("!BBHHH", data[inner : inner + 8]) if len(data) >= inner + 8 else None
                if quoted and quoted[0] == 8 and (ns, quoted[3]) in self.icmp_waiting:
                    self.refuse(self.icmp_waiting[(ns, quoted[3])])


def blame(runner, item):
    """Sends probe item["probe"] again alone and answers the watched rules whose counters rose. Its DSCP gets bit 3
    (TOS 0x20, which routing rules do not read): a conntrack zone of its own, so it is a new connection that meets
    the rules again even where the probe's connection is still known (plan.ts RESEND_DSCP)."""
    before = {ns: counters(ns) for ns in item["watch"]}
    probe = runner.probes[item["probe"]]
    runner.probes.append(dict(probe, tos=probe["tos"] | plan["resendTos"]))
    runner.result.append(None)
    k = len(runner.probes) - 1
    if item["arrived"]:
        runner.run([k])
    else:
        runner.start(k)
    undecided = time.monotonic() + plan["undecidedSeconds"]
    while True:
        rose = []
        last = {}
        for ns, watched in item["watch"].items():
            after = last[ns] = counters(ns)
            rose += [[ns, i] for i, (a, b) in enumerate(zip(before[ns], after)) if b > a and i in watched]
        # Dropped: the first drop rule that counted it is the answer, however late it counts (a probe the counters
        # accounted for); arrived: every rule that let it through; refused by the kernel: none.
        if rose or item["arrived"] or item["probe"] in runner.refused:
            if not item["arrived"]:
                # Its drop is not a batch's: the next batch's accounts start from here.
                runner.dropped.update({ns: dropped(ns, listed) for ns, listed in last.items()})
            return rose
        if time.monotonic() > undecided:
            said = (item["probe"], plan["undecidedSeconds"])
            raise Undecided("probe %d sent again: no drop rule counted it in %d s" % said)
        time.sleep(0.01)


def main():
    # A socket per probe in flight: as many descriptors as the hard limit allows.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    plan["parallel"] = min(plan["parallel"], hard - 200)
    build()
    print("built", file=sys.stderr, flush=True)
    runner = Probes(plan["probes"], plan["timeout"])
    runner.serve(plan["listeners"])
    for batch in plan["rounds"]:
        for start in range(0, len(batch), plan["parallel"]):
            runner.run(batch[start : start + plan["parallel"]])
    print(json.dumps(runner.result[: len(plan["probes"])]), flush=True)
    # nfv reads the verdicts and asks which rules decided the probes it shows.
    asked = json.loads(lines.get())
    print(json.dumps([blame(runner, item) for item in asked]), flush=True)
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    usage = {
        "peakKB": own.ru_maxrss,
        "cpuSeconds": round(own.ru_utime + own.ru_stime, 3),
        "childCpuSeconds": round(children.ru_utime + children.ru_stime, 3),
    }
    print(json.dumps(usage), flush=True)


try:
    main()
except Missing as e:
    print(str(e), file=sys.stderr)
    sys.exit(3)
except Undecided as e:
    print(str(e), file=sys.stderr)
    sys.exit(4)
except Exception as e:
    print("%s: %s" % (type(e).__name__, e), file=sys.stderr)
    sys.exit(1)
`;
