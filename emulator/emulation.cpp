// Emulated processes (see emulation.hpp).
#include "emulator/emulation.hpp"

#include "emulator/tcp_stream.hpp"

#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>

namespace tp::emu {

EmuProcess::~EmuProcess()
{
  // The loop goes first: no callback may run while the objects it refers to are destroyed.
  if (runtime) runtime->stop();
  streams.reset();
  device.reset();
  own_fabric.reset();
  runtime.reset();
  memory.reset();
}

Result<std::unique_ptr<EmuProcess>> make_os_process(const std::string& name, int index, const std::string& dir,
                                                    uint64_t arena_bytes, int numa_nodes, int gpus)
{
  auto arena = SharedArena::create(arena_bytes, name);
  if (!arena.ok()) return arena.error();
  return make_os_process(name, index, dir, std::move(arena.value()), numa_nodes, gpus);
}

Result<std::unique_ptr<EmuProcess>> make_os_process(const std::string& name, int index, const std::string& dir,
                                                    std::unique_ptr<SharedArena> arena, int numa_nodes, int gpus)
{
  auto p = std::make_unique<EmuProcess>();
  p->name = name;
  p->memory = std::make_unique<HostMemory>(numa_nodes, gpus, std::move(arena));
  p->runtime = std::make_unique<LoopRuntime>(name, *p->memory);
  p->own_fabric = std::make_unique<SoftFabric>(uint16_t(1 + index * ProcessLink::LIDS_PER_PROCESS));
  if (auto st = p->own_fabric->link_processes(dir, *p->memory->arena()); !st.ok()) return st.error();
  p->device = std::make_unique<SoftDevice>(*p->own_fabric, *p->runtime, "soft-" + name);
  p->streams = std::make_unique<TcpStreamNetwork>(dir, name, *p->runtime);
  return p;
}

Emulation::~Emulation()
{
  for (auto& p : procs_)
    if (p->runtime) p->runtime->stop();
  procs_.clear();
}

Result<EmuProcess*> Emulation::try_add_process(const std::string& name)
{
  auto p = std::make_unique<EmuProcess>();
  p->name = name;
  p->memory = std::make_unique<HostMemory>(opt_.numa_nodes, opt_.gpus_per_process);
  p->runtime = std::make_unique<LoopRuntime>(name, *p->memory);
  if (opt_.device == "soft") {
    p->device = std::make_unique<SoftDevice>(fabric_, *p->runtime, "soft-" + name);
  } else if (opt_.device == "ibv" || opt_.device.rfind("ibv:", 0) == 0) {
    auto d = IbvDevice::open(*p->runtime, opt_.device.size() > 4 ? opt_.device.substr(4) : std::string());
    if (!d.ok()) {
      p->runtime->stop();
      return d.error();
    }
    p->device = std::move(d.value());
  } else {
    p->runtime->stop();
    return Error::at("", "device", "soft, ibv or ibv:NAME", "\"" + opt_.device + "\"");
  }
  p->streams = std::make_unique<LocalStreamNetwork>(hub_, name, *p->runtime);
  procs_.push_back(std::move(p));
  return procs_.back().get();
}

EmuProcess& Emulation::add_process(const std::string& name)
{
  auto p = try_add_process(name);
  if (!p.ok()) throw std::runtime_error(p.error().message()); // only the software device is used through here
  return *p.value();
}

EmuProcess* Emulation::process(const std::string& name)
{
  for (auto& p : procs_)
    if (p->name == name) return p.get();
  return nullptr;
}

void Emulation::on(EmuProcess& p, std::function<void()> fn)
{
  std::promise<void> done;
  auto f = done.get_future();
  p.runtime->post([&fn, &done] {
    fn();
    done.set_value();
  });
  f.wait();
}

bool Emulation::wait_until(const std::function<bool()>& pred, double timeout)
{
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

} // namespace tp::emu
