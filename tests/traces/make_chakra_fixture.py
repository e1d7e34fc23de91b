#!/usr/bin/env python3
"""Write tests/traces/fixtures/chakra.et: a small Chakra execution trace in the protobuf form, framed and encoded as
Chakra's converter writes it (protolib.encodeMessage: each message preceded by its length as a varint; a
GlobalMetadata, then Node messages; field numbers from traces/et_def.proto), with proto3's rule that a zero or empty
field is not written. Standard library only. The unit tests (tests/traces/chakra_et_test.cpp) and the fuzz seeds
(scripts/fuzz.sh, fuzz_traces) read it. Run: python3 tests/traces/make_chakra_fixture.py
"""
import os
import struct

# Chakra's enums (et_def.proto)
COMP_NODE, COMM_SEND_NODE, COMM_RECV_NODE, COMM_COLL_NODE = 4, 5, 6, 7
ALL_REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL, REDUCE_SCATTER = 0, 2, 5, 6, 7


def varint(v):
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


def length_delimited(field, payload):
    return key(field, 2) + varint(len(payload)) + payload


def uint(field, v):
    """A proto3 scalar: omitted when zero."""
    return key(field, 0) + varint(v) if v else b""


def attr_int64(name, v):
    # A oneof member is written even when zero (it has presence): int64_val = 9
    return length_delimited(1, name.encode()) + key(9, 0) + varint(v & 0xFFFFFFFFFFFFFFFF)


def attr_int32(name, v):
    return length_delimited(1, name.encode()) + key(7, 0) + varint(v)  # int32_val = 7


def attr_bool(name, v):
    return length_delimited(1, name.encode()) + key(27, 0) + varint(int(v))  # bool_val = 27


def attr_string(name, v):
    return length_delimited(1, name.encode()) + length_delimited(29, v.encode())  # string_val = 29


def node(id, name, type, dur=0, data_deps=(), attrs=()):
    m = uint(1, id)
    m += length_delimited(2, name.encode()) if name else b""
    m += uint(3, type)
    if data_deps:  # packed repeated uint64 (proto3's default)
        m += length_delimited(5, b"".join(varint(d) for d in data_deps))
    m += uint(7, dur)  # duration_micros; start_time_micros (6) is never written by Chakra's PyTorch converter
    for a in attrs:
        m += length_delimited(10, a)
    return m


def framed(message):
    return varint(len(message)) + message


def main():
    metadata = length_delimited(1, b"0.0.4")  # GlobalMetadata.version
    nodes = [
        # id 0 and no start: proto3 writes neither
        node(0, "aten::conv2d", COMP_NODE, dur=900, attrs=[attr_bool("is_cpu_op", False)]),
        node(2, "aten::convolution_backward", COMP_NODE, dur=1700, data_deps=[0]),
        # comm_type ALL_REDUCE is 0: written all the same (a oneof member)
        node(3, "ncclKernel_AllReduce_RING_LL_Sum_float", COMM_COLL_NODE, dur=2600, data_deps=[2],
             attrs=[attr_int64("comm_type", ALL_REDUCE), attr_int64("comm_size", 9437184),
                    attr_string("pg_name", "0"), attr_bool("is_cpu_op", False)]),
        node(4, "ncclKernel_AllGather_RING_LL_Sum_int8_t", COMM_COLL_NODE, dur=500, data_deps=[3],
             attrs=[attr_int64("comm_type", ALL_GATHER), attr_int64("comm_size", 4194304)]),
        node(5, "ncclKernel_ReduceScatter_RING_LL_Sum_float", COMM_COLL_NODE, dur=400, data_deps=[3],
             attrs=[attr_int64("comm_type", REDUCE_SCATTER), attr_int64("comm_size", 2097152)]),
        node(6, "ncclKernel_Broadcast_RING_LL_Sum_int8_t", COMM_COLL_NODE, dur=100, data_deps=[4, 5],
             attrs=[attr_int64("comm_type", BROADCAST), attr_int64("comm_size", 212480)]),
        node(7, "ncclKernel_SendRecv_alltoall", COMM_COLL_NODE, dur=300, data_deps=[6],
             attrs=[attr_int64("comm_type", ALL_TO_ALL), attr_int64("comm_size", 65536)]),
        # a collective without comm_size: its size is unknown, not 0 bytes
        node(8, "ncclKernel_AllReduce_no_size", COMM_COLL_NODE, dur=50, data_deps=[7],
             attrs=[attr_int64("comm_type", ALL_REDUCE)]),
        node(9, "ncclDevKernel_SendRecv_send", COMM_SEND_NODE, dur=300, data_deps=[8],
             attrs=[attr_int64("comm_size", 1048576), attr_int32("comm_src", 0), attr_int32("comm_dst", 1)]),
        node(10, "ncclDevKernel_SendRecv_recv", COMM_RECV_NODE, dur=200, data_deps=[8],
             attrs=[attr_int64("comm_size", 65536), attr_int32("comm_src", 1), attr_int32("comm_dst", 0)]),
        # the host side of a collective, typed COMM_COLL_NODE by older converters: compute (is_cpu_op)
        node(11, "c10d::allreduce_", COMM_COLL_NODE, dur=80, data_deps=[2], attrs=[attr_bool("is_cpu_op", True)]),
        # no duration: proto3's zero
        node(12, "aten::view", COMP_NODE, data_deps=[0]),
    ]
    out = framed(metadata) + b"".join(framed(n) for n in nodes)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "chakra.et")
    with open(path, "wb") as f:
        f.write(out)
    print(f"wrote {path}: {len(out)} bytes, {len(nodes)} nodes")


if __name__ == "__main__":
    main()
