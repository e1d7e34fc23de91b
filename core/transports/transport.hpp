// The transport interface and what a transport gets to work with. A transport implements TF's
// RecvFromRemoteAsync for one task (process) and serves the producer side for its peers; it is written only
// against core/ interfaces (Device, Runtime, StreamNetwork, TensorMemory), so the simulator and the emulator
// run it unchanged. Transports register by name in register_builtin_transports() (no static constructors).
// How to write one: docs/adding-a-transport.md.
#pragma once

#include "core/device/device.hpp"
#include "core/memory/tensor_memory.hpp"
#include "core/rendezvous/rendezvous_mgr.hpp"
#include "core/runtime/runtime.hpp"
#include "core/stream/stream.hpp"
#include "core/transports/transfer_record.hpp"
#include "core/transports/transport_options.hpp"

#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tp::transports {

/// Task name ("/job:worker/replica:0/task:1") -> the process (stream peer name) that runs it. Copies share one map:
/// every task of a job holds the job's (TaskContext::cluster), N tasks x N entries as plain maps, 2.5 GB at 4,096
/// ranks; a change to a shared one copies it first. Read-only use from several threads is safe; fill a spec before
/// copying it, and keep no reference or iterator across a change (it may then point into another copy's map).
class ClusterSpec {
public:
  using Map = std::map<std::string, std::string>;
  using const_iterator = Map::const_iterator;
  ClusterSpec() = default;
  ClusterSpec(std::initializer_list<Map::value_type> entries) : map_(std::make_shared<Map>(entries)) {}
  const_iterator find(const std::string& task) const { return map().find(task); }
  const_iterator begin() const { return map().begin(); }
  const_iterator end() const { return map().end(); }
  size_t size() const { return map().size(); }
  bool empty() const { return map().empty(); }
  size_t count(const std::string& task) const { return map().count(task); }
  const std::string& at(const std::string& task) const { return map().at(task); }
  std::string& operator[](const std::string& task) { return own()[task]; }

private:
  const Map& map() const
  {
    static const Map none;
    return map_ ? *map_ : none;
  }
  Map& own()
  {
    if (!map_)
      map_ = std::make_shared<Map>();
    else if (map_.use_count() > 1)
      map_ = std::make_shared<Map>(*map_);
    return *map_;
  }
  std::shared_ptr<Map> map_;
};

/// The rkey to advertise for `rkey` (corrupted when the task injects bad rkeys).
inline uint32_t advertised_rkey(const TransportOptions& o, uint32_t rkey)
{
  return o.inject_bad_rkey ? rkey ^ 0x00A5A500u : rkey;
}

/// Everything a transport instance works with, for one task.
struct TaskContext {
  std::string task;    ///< this task's name
  std::string process; ///< this process's stream name
  Runtime* runtime = nullptr;
  verbs::Device* device = nullptr; ///< null where the transport needs no RDMA
  StreamNetwork* streams = nullptr;
  memory::TensorMemory* memory = nullptr;
  rendezvous::RendezvousMgr* rendezvous = nullptr;
  ClusterSpec cluster;
  TransferLog* log = nullptr;
  uint64_t incarnation = 1; ///< this task's device incarnation (a request with another one is Aborted)
  int cpu_numa_node = 0;    ///< where this task's CPU tensors and buffers live
  /// One call into the host's communication library, seconds (TaskSpec::library_call_seconds; NaN: not given).
  double library_call_seconds = std::numeric_limits<double>::quiet_NaN();
  TransportOptions options; ///< common knobs, and each transport's own (options.of<MpiOptions>())
  /// Only a collective library's messages go through this transport, not TF's rendezvous (TaskSpec's field).
  bool collective_library_only = false;
  /// Where a transport reports a failure that the original implementation treats as fatal (a CHECK that aborts
  /// the process, e.g. any error completion in TF verbs): the driver stops the job and reports it, even when no
  /// receive of this task is waiting. Empty: nobody listens (the transport still fails what is pending).
  std::function<void(const Error&)> on_fatal;
};

class Transport : public rendezvous::RemoteRecvHook {
public:
  ~Transport() override = default;
  virtual const char* name() const = 0;
  /// Start servers and listeners. Called once before any receive; `done` when ready.
  virtual void start(std::function<void(Status)> done) = 0;
  virtual void shutdown() {}
};

using TransportFactory = std::function<std::unique_ptr<Transport>(const TaskContext&)>;

struct TransportInfo {
  std::string name;
  std::string description;
  bool needs_rdma = false;
  TransportFactory make;
  /// What the original implementation does when a transfer fails (a WC error, a dropped connection): fault
  /// reports print it next to the error tensorpath reports (docs/protocols.md, the error paths of each transport).
  std::string on_failure;
  /// The knobs users set from `tensorpath train` flags or scenario fields (the transport's folder declares them).
  std::vector<OptionKnob> options;
};

/// Register the built-in transports (idempotent). Explicit, not static constructors (static libraries drop them).
void register_builtin_transports();
void register_transport(TransportInfo info);
const TransportInfo* find_transport(const std::string& name);
std::vector<std::string> transport_names();
/// Every registered transport's option knobs, in registry order (what the front end reads from flags and scenarios).
std::vector<const OptionKnob*> option_knobs();
/// The name of the transport whose entry declares `knob` (one of option_knobs()), or "" for another knob.
std::string knob_transport(const OptionKnob* knob);

/// Location a device name's tensors live in ("GPU:k" -> gpu k, "CPU" -> the task's NUMA node).
Location device_location(const rendezvous::DeviceName& d, int cpu_numa_node);

} // namespace tp::transports
