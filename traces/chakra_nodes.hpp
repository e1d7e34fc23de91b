// Chakra execution-trace nodes as both forms (JSON: traces/chakra.cpp; protobuf `.et`: traces/chakra_et.cpp) decode
// them, and the one set of rules that turns them into a Trace (internal: include only from traces/*.cpp).
#pragma once

#include "traces/trace.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tp::traces::detail {

/// Chakra's NodeType (et_def.proto).
enum ChakraNodeType : int {
  INVALID_NODE = 0,
  METADATA_NODE = 1,
  MEM_LOAD_NODE = 2,
  MEM_STORE_NODE = 3,
  COMP_NODE = 4,
  COMM_SEND_NODE = 5,
  COMM_RECV_NODE = 6,
  COMM_COLL_NODE = 7,
};

/// One node, with proto3's rule already applied: a field the file omits is its zero (type INVALID_NODE, start and
/// duration 0). Attributes are kept only where the file has them (an omitted comm_size is unknown, not 0 bytes).
struct ChakraNode {
  std::string where; ///< "line 7" (JSON) or "byte 1234" (protobuf): for warnings
  uint64_t id = 0;
  std::string name;
  int type = INVALID_NODE;
  std::vector<uint64_t> data_deps;
  double start_us = 0, duration_us = 0;
  std::optional<int64_t> comm_type;  ///< CollectiveCommType value
  std::string comm_type_name;        ///< where the JSON form names it ("ALL_REDUCE") instead of a value
  std::optional<uint64_t> comm_size; ///< bytes
  std::optional<int64_t> comm_src, comm_dst;
  std::string pg_name;
  bool is_cpu_op = false; ///< the is_cpu_op attribute (false when absent, as Chakra's feeder reads it)
};

/// The Trace of `nodes` (in file order): COMP_NODE -> ops, COMM_COLL_NODE -> collectives, COMM_SEND_NODE /
/// COMM_RECV_NODE -> transfers; a node marked is_cpu_op is compute whatever its type, as ASTRA-sim issues it
/// (astra-sim/workload/Workload.cc: older converters typed the host-side c10d:: calls COMM_COLL_NODE, without
/// comm_size, next to the NCCL kernel that carries it). Where no node records a start time (Chakra's PyTorch converter
/// writes none), each node starts when its data dependencies end, as Chakra's own feeder orders them
/// (src/feeder/et_feeder.cpp resolves data_deps only); linear in nodes + dependencies. A dependency cycle is an Error;
/// a dependency on a node the file lacks, an unknown size or kind, and skipped node types are named warnings.
Result<Trace> chakra_trace(std::vector<ChakraNode> nodes, const std::string& file, const std::string& form);

} // namespace tp::traces::detail
