// How many threads of a TensorFlow 1.x process carry its gRPC traffic, by release: the worker service's
// completion-queue threads (a server: RecvTensor requests in, responses out) and the worker cache's polling threads
// (a client: responses in, decoded on that thread). The simulator runs each message's CPU work (models/tcp_model.hpp)
// on these threads (sim/cpu_pool.hpp); docs/model.md "The CPU of a process" has the sources.
// Tests: tests/models/tf_rpc_threads_test.cpp.
#pragma once

#include "core/common/result.hpp"

#include <string>
#include <vector>

namespace tp::models {

/// The default: TensorFlow 1.15, the last 1.x release.
inline constexpr const char* DEFAULT_TF_VERSION = "1.15";

/// The defaults are TensorFlow 1.15's.
struct RpcThreading {
  std::string version = DEFAULT_TF_VERSION; ///< the TensorFlow release
  int server_threads = 8;                   ///< completion-queue threads of the worker service, shared by every caller
  int client_threads = 8; ///< threads polling the worker cache's queues; each remote peer pinned to one
  std::string source;     ///< where the counts are read in TensorFlow's code
};

/// The threading of TensorFlow `version` ("1.0" to "1.15"; empty: DEFAULT_TF_VERSION). Errors name `field` and the
/// releases known.
Result<RpcThreading> tf_rpc_threading(const std::string& version, const std::string& field = "tf_version");
/// The same for a value the user gave: an empty one is refused (it is no release), not read as the default.
Result<RpcThreading> given_tf_rpc_threading(const std::string& version, const std::string& field);

/// The releases tf_rpc_threading() knows, oldest first.
std::vector<std::string> known_tf_versions();

} // namespace tp::models
