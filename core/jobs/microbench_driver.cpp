// The microbenchmark jobs over a job backend (see microbench_driver.hpp).
#include "core/jobs/microbench_driver.hpp"

#include <chrono>
#include <functional>

namespace tp::jobs {

namespace {

Result<microbench::PerftestSide> perftest_side(JobBackend& b, JobProcess& p, const PerftestPlacement& at)
{
  if (at.nic >= int(p.devices.size()))
    return Error::at("", "perftest --nic", "a NIC of " + p.name, std::to_string(at.nic));
  auto loc = b.nic_buffer_location(p, at.nic, at.cross_socket, at.gpu);
  if (!loc.ok()) return loc.error();
  return microbench::PerftestSide{p.name, p.runtime, p.device(at.nic), p.streams, loc.value()};
}

} // namespace

Result<PerftestRun> run_perftest(JobBackend& b, JobProcess& server, JobProcess& client,
                                 const microbench::PerftestConfig& config, const PerftestPlacement& placement,
                                 double timeout)
{
  auto server_side = perftest_side(b, server, placement);
  if (!server_side.ok()) return server_side.error();
  auto client_side = perftest_side(b, client, placement);
  if (!client_side.ok()) return client_side.error();
  // Reported on the client's loop; shared with it past a run that timed out.
  struct Report {
    std::mutex mu;
    std::optional<Result<microbench::PerftestResult>> result;
  };
  auto report = std::make_shared<Report>();
  auto test = std::make_shared<microbench::Perftest>(server_side.value(), client_side.value(), config);
  b.on(client, [&] {
    test->start([report](Result<microbench::PerftestResult> r) {
      std::lock_guard<std::mutex> lock(report->mu);
      report->result = std::move(r);
    });
  });
  const auto w0 = std::chrono::steady_clock::now();
  b.run_until(
      [&] {
        std::lock_guard<std::mutex> lock(report->mu);
        return report->result.has_value();
      },
      timeout);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  std::lock_guard<std::mutex> lock(report->mu);
  if (!report->result)
    return Error::msg(std::string("perftest did not finish (a deadlock in the ") +
                      (std::string(b.kind()) == "simulator" ? "simulated" : "emulated") + " run)");
  if (!report->result->ok()) return report->result->error();
  return PerftestRun{std::move(report->result->value()), wall};
}

Result<std::vector<microbench::CopyResult>>
run_copy_benches(JobBackend& b, JobProcess& p, const std::vector<microbench::CopyConfig>& configs, double timeout)
{
  struct Chain {
    std::mutex mu;
    std::vector<microbench::CopyResult> results;
    std::optional<Error> failure;
    std::function<void(size_t)> next;
  };
  auto chain = std::make_shared<Chain>();
  Runtime* rt = p.runtime;
  chain->next = [chain_w = std::weak_ptr<Chain>(chain), rt, configs](size_t i) {
    if (i == configs.size()) return;
    microbench::run_copy_bench(*rt, configs[i], [chain_w, i](Result<microbench::CopyResult> r) {
      auto c = chain_w.lock();
      if (!c) return;
      {
        std::lock_guard<std::mutex> lock(c->mu);
        if (!r.ok()) {
          c->failure = r.error();
          return;
        }
        c->results.push_back(r.value());
      }
      c->next(i + 1);
    });
  };
  b.post(p, [chain] { chain->next(0); });
  auto finished = [&] {
    std::lock_guard<std::mutex> lock(chain->mu);
    return chain->failure || chain->results.size() == configs.size();
  };
  b.run_until(finished, timeout);
  std::lock_guard<std::mutex> lock(chain->mu);
  if (chain->failure) return *chain->failure;
  if (chain->results.size() != configs.size()) return Error::msg("copy benchmark did not finish");
  return chain->results;
}

} // namespace tp::jobs
