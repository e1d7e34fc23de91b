// The training engine's modes and kinds as enums, each with its to_string (the word every output and file uses) and
// its parse (an error names the field and the accepted words), written once here: how a job keeps its variables in
// sync (SyncMode: TrainingSpec::mode, the step layout) and what an op of the step graph is (OpKind: the graph's
// vertices, the executor's OpEvent and FailedOp, a failure report's op_kind). Tests: tests/core/step_graph_test.cpp.
#pragma once

#include "core/common/result.hpp"

#include <cstdint>
#include <string>

namespace tp::training {

/// How the workers keep their variables in sync.
enum class SyncMode : uint8_t {
  PARAMETER_SERVER, ///< "ps": variables on parameter-server tasks, pulled and pushed every step
  ALLREDUCE,        ///< "allreduce": every rank keeps a copy, gradients summed by ring allreduces
};
const char* to_string(SyncMode m);
/// "ps" or "allreduce"; an error names the field "mode".
Result<SyncMode> parse_sync_mode(const std::string& s);

enum class OpKind : uint8_t {
  VARIABLE,  ///< a persistent variable (its value is the output; lives across steps)
  FORWARD,   ///< a layer's forward compute on a device
  BACKWARD,  ///< a layer's backward compute; outputs one gradient per variable of the layer
  AGGREGATE, ///< sum of `arity` inputs of the same size (add_n / ConditionalAccumulator), summed as they arrive
  APPLY,     ///< variable update (var -= lr * grad) on the variable's device
  ALLREDUCE, ///< a collective across ranks (the collectives engine runs it)
  IDENTITY,  ///< passes its input on under its own name (a worker-side cache of a pulled variable); no work
  SEND,      ///< rendezvous Send (inserted by partition)
  RECV,      ///< rendezvous Recv (inserted by partition)
};
const char* to_string(OpKind k);
/// The word to_string gives ("forward", "recv", ...); an error names the field "op kind".
Result<OpKind> parse_op_kind(const std::string& s);

} // namespace tp::training
