// TensorFlow 1.x gRPC threading by release (see tf_rpc_threads.hpp). Read in tensorflow/core/distributed_runtime/rpc/
// at each release's version commit:
// - 1.0 to 1.5: grpc_worker_service.cc adds one completion queue served by one thread ("TF_worker_service" in
//   grpc_server_lib.cc: worker_service_->HandleRPCsLoop()); grpc_worker_cache.cc polls the client queue on one
//   thread ("TODO(mrry): Investigate possible performance improvements by replacing this thread with a threadpool.").
// - 1.6 to 1.15: commit 0d5fb1036e0e (2018-01-10, "Thread count is hardcoded to 8 for now"):
//   kGrpcWorkerServiceThreadCount = 8 and kGrpcWorkerCacheThreadCount = 8, each remote worker assigned to one client
//   thread round-robin (AssignWorkerToThread). From 1.13 (commit 38c9b12464b2) responses are parsed on a 10-thread
//   callback pool instead of the polling thread; that split is not modelled (the 1.6 counts apply: pessimistic for
//   a parse-heavy client from 1.13 on).
#include "models/tf_rpc_threads.hpp"

namespace tp::models {

std::vector<std::string> known_tf_versions()
{
  std::vector<std::string> v;
  for (int minor = 0; minor <= 15; ++minor)
    v.push_back("1." + std::to_string(minor));
  return v;
}

namespace {
constexpr const char* EXPECTED = "a TensorFlow 1.x release from 1.0 to 1.15 (its gRPC thread counts)";
} // namespace

Result<RpcThreading> given_tf_rpc_threading(const std::string& version, const std::string& field)
{
  if (version.empty()) return Error::at("", field, EXPECTED, "an empty value");
  return tf_rpc_threading(version, field);
}

Result<RpcThreading> tf_rpc_threading(const std::string& version, const std::string& field)
{
  const std::string v = version.empty() ? DEFAULT_TF_VERSION : version;
  int minor = -1;
  for (int m = 0; m <= 15; ++m)
    if (v == "1." + std::to_string(m)) minor = m;
  if (minor < 0) return Error::at("", field, EXPECTED, "\"" + version + "\"");
  RpcThreading t;
  t.version = v;
  if (minor <= 5) {
    t.server_threads = 1;
    t.client_threads = 1;
    t.source = "TF " + v +
               ": one worker-service thread (grpc_server_lib.cc, HandleRPCsLoop) and one worker-cache polling thread "
               "(grpc_worker_cache.cc)";
  } else {
    t.server_threads = 8;
    t.client_threads = 8;
    t.source = "TF " + v +
               ": kGrpcWorkerServiceThreadCount = 8, kGrpcWorkerCacheThreadCount = 8 (commit 0d5fb1036e0e, "
               "TF 1.6), a remote worker per client thread round-robin";
  }
  return t;
}

} // namespace tp::models
