"""
What the raw-packet probers of the tests share (forward.py, import/nat-probe.py): running a command that must
succeed, the Internet checksum, and a raw socket that reads the IPv4 frames arriving on one device.
"""

import socket
import struct
import subprocess

SOL_PACKET, PACKET_IGNORE_OUTGOING, PACKET_OUTGOING = 263, 23, 4


def run(args, stdin=None):
    done = subprocess.run(args, input=stdin, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def listener(dev):
    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    # Not the frames the sender's own socket sends on the same device.
    rx.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    rx.bind((dev, 0))
    rx.settimeout(10)
    return rx
