#!/usr/bin/env python3
# Writes the seed corpora of the wire-decoder fuzz targets (tests/fuzz/seeds/<target>/): well-formed messages of
# every type, encoded as the transports encode them (little-endian fields, u32-prefixed strings). Rerun after a
# wire format change: python3 tests/fuzz/make_wire_seeds.py
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
KEY = "/job:worker/replica:0/task:0/device:CPU:0;0000000000000001;/job:ps/replica:0/task:0/device:CPU:0;w0;0:0"


def u8(v): return struct.pack("<B", v)
def u32(v): return struct.pack("<I", v)
def u64(v): return struct.pack("<Q", v)
def f64(v): return struct.pack("<d", v)
def s(v): b = v.encode() if isinstance(v, str) else v; return u32(len(b)) + b


def meta(dtype=0, dead=0, dims=(256, 4), proto=0):
    return u8(dtype) + u8(dead) + u8(len(dims)) + b"".join(u64(d) for d in dims) + u64(proto)


def write(target, name, data):
    d = os.path.join(HERE, "seeds", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# verbs v1: type, name, step, buffer_size, remote_addr, rkey, meta, error_code, error_text
def v1(t, name=KEY, step=3, size=0, addr=0, rkey=0, m=meta(), code="", text=""):
    return u8(t) + s(name) + u64(step) + u64(size) + u64(addr) + u32(rkey) + m + s(code) + s(text)


write("fuzz_verbs_v1", "ack", v1(1, "rx_ack_buffer"))
write("fuzz_verbs_v1", "tensor_request", v1(2))
write("fuzz_verbs_v1", "buffer_request", v1(3, size=720 + 4096, addr=0x7F0000001000, rkey=0x1234))
write("fuzz_verbs_v1", "buffer_response", v1(4, size=720 + 4096, addr=0x7F0000002000, rkey=0x4321))
write("fuzz_verbs_v1", "buffer_idle", v1(5))
write("fuzz_verbs_v1", "tensor_write", v1(6, m=meta(0, 0, (1024,))))
write("fuzz_verbs_v1", "tensor_write_dead", v1(6, m=meta(0, 1, ())))
write("fuzz_verbs_v1", "tensor_write_string", v1(6, m=meta(5, 0, (3,), 77)))
write("fuzz_verbs_v1", "error_status", v1(7, code="Aborted", text="device incarnation mismatch"))


# verbs v2: type, name, step, index, remote_addr, rkey, meta, error_code, error_text
def v2(t, index=0, addr=0, rkey=0, m=meta(), code="", text=""):
    return u8(t) + s(KEY) + u64(3) + u32(index) + u64(addr) + u32(rkey) + m + s(code) + s(text)


write("fuzz_verbs_v2", "tensor_request", v2(1, 7, 0x7F0000001000, 0x99))
write("fuzz_verbs_v2", "meta_data_update", v2(2, 7, m=meta(1, 0, (8, 8, 3))))
write("fuzz_verbs_v2", "tensor_re_request", v2(3, 7, 0x7F0000003000, 0x98))
write("fuzz_verbs_v2", "error_status", v2(4, 7, code="Internal", text="no such tensor"))
write("fuzz_verbs_v2", "dead", v2(1, 0, m=meta(0, 1, ())))

# GDR: RecvTensor response: kind, meta, producer seconds, then (kind 1) addr, rkey, key
write("fuzz_gdr", "region", u8(1) + meta(0, 0, (1024, 1024)) + f64(1e-5) + u64(0x7F0000004000) + u32(0x77) +
      u32(0x5EED0001))
write("fuzz_gdr", "content", u8(0) + meta(0, 0, (4,)) + f64(0) + u8(1) + bytes(16))
write("fuzz_gdr", "dead", u8(0) + meta(0, 1, ()) + f64(0) + u8(0))


# AR-gRPC over the Messenger: a limits byte, then the prefix (type, id, header, payload_len, addr, rkey, chunk,
# fin_chunk, flags), padded to the prefix region (max_header + 64), then the eager payload.
def prefix(t, header=b"", payload_len=0, addr=0, rkey=0, chunk=0, fin=0, flags=0, payload=b"", limits=1):
    p = u8(t) + u64(42) + s(header) + u64(payload_len) + u64(addr) + u32(rkey) + u64(chunk) + u32(fin) + u8(flags)
    region = (1024 if limits & 1 else 64) + 64
    return u8(limits) + (p + bytes(max(0, region - len(p))) if payload else p) + payload


req = u8(1) + u64(5) + u64(3) + s(KEY)
resp_small = u8(2) + u64(5) + u8(0) + meta(0, 0, (4,))
resp_large = u8(2) + u64(5) + u8(0) + meta(0, 0, (1024, 1024))
resp_dead = u8(2) + u64(5) + u8(0) + meta(0, 1, ())
resp_err = u8(2) + u64(5) + u8(1) + s("Aborted") + s("worker was probably restarted")
write("fuzz_ar_grpc", "request", prefix(1, req))
write("fuzz_ar_grpc", "response_eager", prefix(1, resp_small, 16, payload=bytes(range(16))))
write("fuzz_ar_grpc", "response_eager_small_limits", prefix(1, resp_small, 16, payload=bytes(16), limits=0))
write("fuzz_ar_grpc", "response_rts", prefix(2, resp_large, 4 << 20, 0x7F0000005000, 0x55, 1 << 20))
write("fuzz_ar_grpc", "response_rts_pipelined", prefix(2, resp_large, 4 << 20, 0x7F0000005000, 0x55, 1 << 20,
                                                       flags=1))
write("fuzz_ar_grpc", "response_dead", prefix(1, resp_dead))
write("fuzz_ar_grpc", "response_error", prefix(1, resp_err))
write("fuzz_ar_grpc", "fin", prefix(3, fin=2))
write("fuzz_ar_grpc", "ready", prefix(6, fin=1))
write("fuzz_ar_grpc", "ping", prefix(4))
write("fuzz_ar_grpc", "pong", prefix(5))


# MPI over the Messenger (limits: max_header 1024, eager 12 KiB): the prefix (no limits byte), padded to the prefix
# region when an eager payload follows; the header is the envelope (tag, body).
def mpi(tag, body, payload_len=0, t=1, chunk=0, payload=b""):
    env = u32(tag) + s(body)
    p = u8(t) + u64(9) + s(env) + u64(payload_len) + u64(0x7F0000006000 if t == 2 else 0) + u32(0x66 if t == 2 else 0) \
        + u64(chunk) + u32(0) + u8(0)
    return (p + bytes(max(0, 1024 + 64 - len(p))) if payload else p) + payload


mreq = u64(3) + s(KEY) + u64(1)
write("fuzz_mpi", "request", mpi(1010, mreq))
write("fuzz_mpi", "response_in_payload", mpi(2020, u64(3) + s(KEY) + u8(1) + meta(0, 0, (4,)), 16, payload=bytes(16)))
write("fuzz_mpi", "response_in_payload_rts", mpi(2020, u64(3) + s(KEY) + u8(1) + meta(0, 0, (1024, 1024)), 4 << 20,
                                                t=2, chunk=4 << 20))
write("fuzz_mpi", "response_data_follows", mpi(2020, u64(3) + s(KEY) + u8(0) + meta(0, 0, (1024, 1024))))
write("fuzz_mpi", "response_dead", mpi(2020, u64(3) + s(KEY) + u8(1) + meta(0, 1, ())))
write("fuzz_mpi", "response_error", mpi(2020, u64(3) + s(KEY) + u8(2) + s("Aborted") + s("restarted")))
write("fuzz_mpi", "data", mpi(3030, b"", 4 << 20, t=2, chunk=4 << 20))


# RDMA channel set-up (RPC body): task, QP endpoint (lid u16, gid 16 bytes, qp_num u32, psn u32; 24-bit values),
# then the fixed buffers (addr u64, rkey u32, length u64).
def hello(task, nbufs):
    ep = struct.pack("<H", 7) + bytes(range(16)) + u32(0x000123) + u32(0x001000)
    return s(task) + s(ep) + u32(nbufs) + b"".join(u64(0x7F0000007000 + i * 4096) + u32(0x10 + i) + u64(720)
                                                  for i in range(nbufs))


write("fuzz_channel_hello", "verbs_v1", hello("/job:worker/replica:0/task:0", 2))
write("fuzz_channel_hello", "verbs_v2", hello("/job:ps/replica:0/task:0", 1))
write("fuzz_channel_hello", "no_buffers", hello("/job:worker/replica:0/task:1", 0))


# The emulator's process link (emulator/process_wire.hpp): frames (u8 type, u32 length, body) as one process's
# software device sends them to another's. The addresses, key and QP numbers are those of tests/fuzz/fuzz_process_link.cpp:
# registered region at 0x700000001000 (64 KiB, rkey 0x1100000) on lid 1 / qpn 0x100, connected to lid 2 / qpn 77;
# the requester's arena at 0x500000000000 (1 MiB).
REGION, RKEY, ARENA = 0x700000001000, 0x1100000, 0x500000000000
SEND, SEND_IMM, WRITE, WRITE_IMM, READ = range(5)


def frame(t, body): return u8(t) + u32(len(body)) + body
def hello_frame(lid=101, base=ARENA, cap=1 << 20): return frame(1, struct.pack("<H", lid) + u64(base) + u64(cap))


def request(op, length, addr=REGION, rkey=RKEY, sges=(), inline=b"", seq=1, imm=0, src=(2, 77), dst=(1, 0x100)):
    h = (u64(seq) + u64(addr) + u64(length) + struct.pack("<HH", src[0], dst[0]) + u32(src[1]) + u32(dst[1]) +
         u32(imm) + u32(rkey) + u32(len(sges)) + u32(len(inline)) + u8(op))
    return frame(2, h + b"".join(u64(a) + u64(n) for a, n in sges) + inline)


def response(seq=1, qpn=0x100, lid=1, verdict=0, rnr=0):
    return frame(3, u64(seq) + u32(qpn) + struct.pack("<H", lid) + u8(verdict) + u8(rnr))


write("fuzz_process_link", "hello", hello_frame())
write("fuzz_process_link", "write", request(WRITE, 256, sges=[(ARENA + 64, 256)]))
write("fuzz_process_link", "write_two_sges", request(WRITE, 96, REGION + 512, sges=[(ARENA, 32), (ARENA + 4096, 64)]))
write("fuzz_process_link", "write_imm", request(WRITE_IMM, 128, imm=0xBEEF, sges=[(ARENA, 128)]))
write("fuzz_process_link", "write_zero", request(WRITE, 0))
write("fuzz_process_link", "read", request(READ, 1024, REGION + 8192, sges=[(ARENA + 8192, 1024)]))
write("fuzz_process_link", "send", request(SEND, 512, 0, 0, sges=[(ARENA + 128, 512)]))
write("fuzz_process_link", "send_inline", request(SEND_IMM, 16, 0, 0, inline=bytes(range(16)), imm=7))
write("fuzz_process_link", "bad_rkey", request(WRITE, 64, rkey=0x1234, sges=[(ARENA, 64)]))
write("fuzz_process_link", "other_qp", request(WRITE, 64, src=(3, 78), sges=[(ARENA, 64)]))
write("fuzz_process_link", "response", response())
write("fuzz_process_link", "stream", hello_frame() + request(WRITE, 256, sges=[(ARENA, 256)], seq=1) +
      request(SEND, 64, 0, 0, sges=[(ARENA, 64)], seq=2) + request(SEND, 64, 0, 0, sges=[(ARENA, 64)], seq=3) +
      request(SEND, 64, 0, 0, sges=[(ARENA, 64)], seq=4) + response(seq=9, verdict=2, rnr=14))
