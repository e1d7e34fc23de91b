// A small training job for checking a shortcut of the simulator against its reference run: 3 steps of a 4 MiB
// convolution and fully-connected model on the four-machine test cluster, run in a child process (one simulation per
// process) with the reference's environment switch set there or not.
#pragma once

#include "core/transports/transport.hpp"
#include "number_in_child.hpp"
#include "sim/training_job.hpp"
#include "small_models.hpp"
#include "test_cluster.hpp"

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace tp::test {

/// `transport` over parameter servers (3 workers, 2 PS) or, with `allreduce`, a ring of 4 ranks; `env_switch` (e.g.
/// "TENSORPATH_CLOCK_IN_SIMGRID") set to 1 in the child, or null. Returns what `pick` takes from the result.
inline std::vector<double> small_job_numbers(const std::string& transport, bool allreduce, const char* env_switch,
                                             const std::function<std::vector<double>(const sim::TrainingResult&)>& pick)
{
  return numbers_in_child([&]() -> Result<std::vector<double>> {
    if (env_switch) setenv(env_switch, "1", 1); // this child only
    transports::register_builtin_transports();
    sim::TrainingJob j;
    j.transport = transport;
    j.layout.mode = allreduce ? sim::TrainingLayout::Mode::ALLREDUCE : sim::TrainingLayout::Mode::PARAMETER_SERVER;
    j.layout.workers = allreduce ? 4 : 3;
    j.layout.ps_tasks = allreduce ? 0 : 2;
    j.steps = 3;
    auto res = sim::run_training_job(test_cluster(4), conv_fc_model(4 << 20, true), j);
    if (!res.ok()) return res.error();
    return pick(res.value());
  });
}

} // namespace tp::test
