// Emulated processes in one OS process: each has a real event loop (LoopRuntime), real memory (HostMemory), a
// software verbs device on a shared SoftFabric, and in-process byte streams; together they run the engine's
// protocol code (rendezvous, memory strategies, transports, collectives) unchanged, moving real bytes.
// Everything a test or a command does to a process must run on its loop: on(process, fn) posts fn there and
// waits. Tests: tests/emulator/*.
#pragma once

#include "emulator/host_memory.hpp"
#include "emulator/ibv_device.hpp"
#include "emulator/local_stream.hpp"
#include "emulator/loop_runtime.hpp"
#include "emulator/soft_device.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tp::emu {

struct EmuProcess {
  std::string name;
  std::unique_ptr<HostMemory> memory;
  std::unique_ptr<LoopRuntime> runtime;
  std::unique_ptr<verbs::Device> device;  ///< the software device, or the libibverbs one
  std::unique_ptr<StreamNetwork> streams; ///< in-process streams, or TCP between OS processes
  std::unique_ptr<SoftFabric> own_fabric; ///< an OS process's own wire (linked to the others); null in process
  ~EmuProcess();
};

/// This OS process as the `index`-th emulated process of a multi-process emulation whose processes meet in `dir`
/// (the software device's process link and the TCP streams' port files): memory in a shared arena of
/// `arena_bytes`, a fabric of its own linked to the other processes', TCP streams.
Result<std::unique_ptr<EmuProcess>> make_os_process(const std::string& name, int index, const std::string& dir,
                                                    uint64_t arena_bytes, int numa_nodes = 2, int gpus = 2);
/// The same over an arena made beforehand (one made before a fork() is mapped at the same address in both processes).
Result<std::unique_ptr<EmuProcess>> make_os_process(const std::string& name, int index, const std::string& dir,
                                                    std::unique_ptr<SharedArena> arena, int numa_nodes = 2,
                                                    int gpus = 2);

class Emulation {
public:
  struct Options {
    int numa_nodes = 2;
    int gpus_per_process = 2;    ///< emulated GPU locations (host RAM)
    std::string device = "soft"; ///< "soft" (SoftDevice on this emulation's fabric) or "ibv[:NAME]" (libibverbs)
  };
  Emulation() : Emulation(Options{}) {}
  explicit Emulation(Options o) : opt_(o) {}
  ~Emulation();
  /// Add a process; with the libibverbs device this fails when the machine has no RDMA device ("Unavailable").
  Result<EmuProcess*> try_add_process(const std::string& name);
  /// add_process for the software device, which cannot fail.
  EmuProcess& add_process(const std::string& name);
  EmuProcess* process(const std::string& name);
  /// Run `fn` on the process's event loop and wait for it to return.
  static void on(EmuProcess& p, std::function<void()> fn);
  /// Poll `pred` (every millisecond, from this thread) until it holds or `timeout` seconds pass.
  static bool wait_until(const std::function<bool()>& pred, double timeout);
  SoftFabric& fabric() { return fabric_; }
  const Options& options() const { return opt_; }

private:
  Options opt_;
  SoftFabric fabric_;
  LocalStreamHub hub_;
  std::vector<std::unique_ptr<EmuProcess>> procs_;
};

} // namespace tp::emu
