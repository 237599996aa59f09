#!/usr/bin/env python3
"""Writes a trace of every event kind the importer learnt beyond the core
ones, at a high rate, for the import bench (tests/bench/import_new_kinds.sh).

  tests/bench/new_kinds_trace.py OUT [EVENTS]     # default 5,000,000 events

Per CPU (2), one event every 100 ns in rounds of: rss_stat, a block_io
request (start, done), a kprobe (begin, end), sched_cpu_util_cfs, a
function_graph call (entry, exit: interned symbols), an ion buffer and a
dma-buf (allocated, freed), a CMA allocation (start, range info, finish),
an mdss tracing_mark_write slice (begin, end) and a syscall (enter, exit),
each from one of 256 threads; plus a sys_stats packet every 1 ms and a
battery packet every 10 ms. Edges that make state pile up (requests never
done, calls never returned, buffers never freed) are in every 64th round,
so a leak in the importer's per-thread or per-request state shows as
memory growing faster than the tables.

Encodes the protobuf wire format directly (python3-protobuf is far too slow
for millions of events); the field numbers are upstream's (perfetto_trace.proto).
"""
import struct
import sys


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def vf(field, v):
    return key(field, 0) + varint(v)


def bf(field, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return key(field, 2) + varint(len(payload)) + payload


def event(ts, pid, kind, payload):
    return bf(2, vf(1, ts) + vf(2, pid) + bf(kind, payload))


SYMBOLS = ["do_sys_openat2", "vfs_read", "ext4_file_read_iter", "filemap_read", "copy_page_to_iter"]


def main():
    out_path = sys.argv[1]
    total = int(sys.argv[2]) if len(sys.argv) > 2 else 5_000_000
    start = 1_000_000_000
    written = 0
    with open(out_path, "wb") as out:
        def packet(body):
            out.write(bf(1, body))

        packet(bf(45, bf(1, bf(1, "Linux") + bf(3, "6.1.75"))) + vf(10, 1))
        interned = b"".join(bf(26, vf(1, i + 1) + bf(2, s)) for i, s in enumerate(SYMBOLS))
        packet(vf(10, 1) + vf(13, 1) + bf(12, interned))
        rnd = 0
        ts = [start, start + 50]
        next_stats = start
        while written < total:
            for cpu in (0, 1):
                events = []
                for _ in range(40):
                    r = rnd
                    rnd += 1
                    tid = 1000 + r % 256
                    leak = r % 64 == 0
                    t = ts[cpu]

                    def add(kind, payload, pid=tid):
                        nonlocal t
                        events.append(event(t, pid, kind, payload))
                        t += 100

                    add(313, vf(1, r % 4) + vf(2, 4096 * (r % 1000)) + vf(3, 1) + vf(4, 7 + r % 256))
                    add(546, vf(1, 8388608 + cpu) + vf(2, r) + vf(3, 8) + vf(4, 4096))
                    if not leak:
                        add(547, vf(1, 8388608 + cpu) + vf(2, r))
                    add(542, bf(1, "vfs_read") + vf(2, 1))
                    add(542, bf(1, "vfs_read") + vf(2, 2))
                    add(421, vf(1, 1) + vf(2, 1024) + vf(4, cpu) + vf(6, r % 1024) + vf(11, r % 3), pid=0)
                    add(437, vf(1, 0) + vf(2, 1 + r % len(SYMBOLS)))
                    if not leak:
                        add(438, vf(1, t - 100) + vf(2, 0) + vf(3, 1 + r % len(SYMBOLS)) + vf(5, t))
                    add(335, vf(1, r) + vf(2, 8192) + vf(3, 65536))
                    if not leak:
                        add(335, vf(1, r) + vf(2, -8192) + vf(3, 57344))
                    add(351, vf(1, r) + vf(2, 4096) + vf(3, 65536))
                    add(351, vf(1, r) + vf(2, -4096) + vf(3, 61440))
                    add(465, vf(1, 4) + vf(2, 16) + bf(3, "linux,cma"))
                    add(577, vf(1, r) + vf(2, r + 16) + vf(3, 1) + vf(4, 2) + vf(5, 3))
                    add(576, bf(1, "linux,cma") + vf(2, r) + vf(3, r) + vf(4, 16))
                    add(80, vf(1, tid) + bf(2, "commit") + vf(3, 1))
                    add(80, vf(1, tid) + bf(2, "commit") + vf(3, 0))
                    add(329, vf(1, 63) + vf(2, 3) + vf(2, 4096))
                    add(330, vf(1, 63) + vf(2, 4096))
                    ts[cpu] = t
                written += len(events)
                packet(vf(10, 1) + bf(1, vf(1, cpu) + b"".join(events)))
            while next_stats < min(ts):
                meminfo = b"".join(bf(1, vf(1, k) + vf(2, 1000 * k + next_stats % 997)) for k in range(1, 9))
                vmstat = b"".join(bf(2, vf(1, k) + vf(2, 10 * k + next_stats % 991)) for k in range(1, 9))
                packet(vf(8, next_stats) + vf(10, 2) + bf(7, meminfo + vmstat))
                if (next_stats - start) % 10_000_000 == 0:
                    battery = vf(1, 3_000_000 - (next_stats - start) // 1000) + key(2, 5) + struct.pack("<f", 90.0) + \
                        vf(3, -500_000) + vf(7, 3_800_000)
                    packet(vf(8, next_stats) + vf(10, 2) + bf(38, battery))
                next_stats += 1_000_000
    print(f"{out_path}: {written} ftrace events")


if __name__ == "__main__":
    main()
