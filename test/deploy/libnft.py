"""
The nft command's work without its process, for the nftables tests that run hundreds of nft commands in one
namespace: nft's main() parses its options into a libnftables context and hands the file (-f) or its words to
libnftables, which parses, checks (-c) or commits through the kernel and lists. A process per command cost about
15 ms of CPU before nft read its input (start-up, libraries, context), more than the check itself; here one Python
process calls libnftables (ctypes) the same way, a fresh context per command as a new nft process has.

As a program (`unshare -rn python3 libnft.py`): reads a JSON list of steps on stdin, each a list of commands run in
turn until one fails (as `a && b && c` in sh); a command is an argv, `nft ...` run here, anything else run as a
process (the change scripts, which call nft themselves). Writes a JSON list with each step's
{code, ran, stdout, stderr}: the exit code of its last command run, how many of its commands ran, and their outputs
in order.
"""

import ctypes
import json
import subprocess
import sys

# include/nftables/libnftables.h
OUTPUT_HANDLE, OUTPUT_JSON = 1 << 3, 1 << 4

lib = ctypes.CDLL("libnftables.so.1")
lib.nft_ctx_new.restype = ctypes.c_void_p
lib.nft_ctx_new.argtypes = [ctypes.c_uint32]
for name in ["nft_ctx_free", "nft_ctx_buffer_output", "nft_ctx_buffer_error"]:
    getattr(lib, name).argtypes = [ctypes.c_void_p]
for name in ["nft_ctx_get_output_buffer", "nft_ctx_get_error_buffer"]:
    getattr(lib, name).argtypes = [ctypes.c_void_p]
    getattr(lib, name).restype = ctypes.c_char_p
lib.nft_ctx_set_dry_run.argtypes = [ctypes.c_void_p, ctypes.c_bool]
lib.nft_ctx_output_set_flags.argtypes = [ctypes.c_void_p, ctypes.c_uint]
lib.nft_run_cmd_from_filename.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
lib.nft_run_cmd_from_buffer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]


def nft(args):
    """`nft ARGS` (the options -j, -c, -a and -f FILE, or a command's words): (exit code, stdout, stderr)."""
    flags, dry, filename, words = 0, False, None, []
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if words:
            words.append(arg)
        elif arg == "-j":
            flags |= OUTPUT_JSON
        elif arg == "-a":
            flags |= OUTPUT_HANDLE
        elif arg == "-c":
            dry = True
        elif arg == "-f":
            filename = rest.pop(0)
        elif arg.startswith("-"):
            raise ValueError(f"libnft.py: nft option {arg} is not handled here")
        else:
            words.append(arg)
    ctx = lib.nft_ctx_new(0)
    try:
        lib.nft_ctx_buffer_output(ctx)
        lib.nft_ctx_buffer_error(ctx)
        lib.nft_ctx_output_set_flags(ctx, flags)
        lib.nft_ctx_set_dry_run(ctx, dry)
        if words:
            rc = lib.nft_run_cmd_from_buffer(ctx, " ".join(words).encode())
        else:
            rc = lib.nft_run_cmd_from_filename(ctx, filename.encode())
        out = (lib.nft_ctx_get_output_buffer(ctx) or b"").decode()
        err = (lib.nft_ctx_get_error_buffer(ctx) or b"").decode()
        return (1 if rc else 0), out, err
    finally:
        lib.nft_ctx_free(ctx)


def command(args):
    if args[0] == "nft":
        return nft(args[1:])
    done = subprocess.run(args, capture_output=True, text=True)
    return done.returncode, done.stdout, done.stderr


def main():
    results = []
    for step in json.load(sys.stdin):
        code, out, err, ran = 0, [], [], 0
        for args in step:
            ran += 1
            code, o, e = command(args)
            out.append(o)
            err.append(e)
            if code != 0:
                break
        results.append({"code": code, "ran": ran, "stdout": "".join(out), "stderr": "".join(err)})
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
