// Files that describe work to run: scenarios (`tensorpath run`) and validation cases (`tensorpath validate`).
// Both are made of jobs (a perftest run, a PCIe copy benchmark) on a hardware profile. Loading is strict:
// unknown fields and wrong types are errors naming the file and the field. Formats: docs/formats.md.
#pragma once

#include "apps/lib/hw_resolve.hpp"
#include "apps/lib/training_report.hpp"
#include "core/common/result.hpp"
#include "models/congestion/roce_fabric.hpp"
#include "models/congestion/tcp_incast.hpp"
#include "models/nccl/collective_model.hpp"
#include "models/nccl/data_parallel.hpp"
#include "sim/microbench_jobs.hpp"
#include "sim/transfer_job.hpp"

#include <map>
#include <string>
#include <vector>

namespace tp::frontend {

/// A "collective" job: one NCCL-style collective of one size on `nodes` nodes of the job's host profile
/// (models/nccl/collective_model.hpp); the setup's host is filled in when the job runs (complete_setup).
struct CollectiveJob {
  models::nccl::CollectiveSetup setup;
  CollectiveNetwork network;
  uint64_t bytes = 0;
};

/// A "data_parallel" job: data-parallel training on NCCL allreduces (models/nccl/data_parallel.hpp) of `model` on
/// the setup's nodes, each GPU's compute measured at `precision`.
struct DataParallelJob {
  CollectiveJob collective; ///< the all_reduce setup and the network (its bytes unused)
  std::string model = "resnet50";
  int batch = 256;
  std::string precision = "amp";
  models::nccl::DataParallelOptions options;
};

struct JobSpec {
  enum class Kind {
    PERFTEST,
    PCIE_COPY,
    TRANSFER,
    TRAINING,
    COLLECTIVE,
    DATA_PARALLEL,
    INCAST,
    ROCE
  } kind = Kind::PERFTEST;
  std::string label;
  std::string hw;          ///< NIC, host or cluster profile
  std::string switch_name; ///< optional switch override
  sim::PerftestJob perftest;
  std::vector<sim::CopyJob> copies;
  CollectiveJob collective;
  DataParallelJob data_parallel;
  sim::TransferJob transfer;
  std::string fabric; ///< transfer: TCP profile override for the gRPC paths ("" keeps the host's)
  /// transfer: an optional baseline run (another transport or fabric) for ratio metrics.
  bool has_baseline = false;
  sim::TransferJob baseline;
  std::string baseline_fabric;
  TrainingSpec training;       ///< training: the runs (one per transport) and the 1-GPU reference
  std::string trace_file;      ///< training: write a Chrome trace of the first transport's last step here
  models::IncastConfig incast; ///< incast: N senders to one receiver through one switch port
  int incast_seeds = 1;        ///< incast: seeds of start jitter to run (incast.seed onwards); metrics are medians
  /// incast: when not empty, the senders' start offsets (s) of each run instead of jitter draws (one list per run:
  /// the starts a packet-level reference drew, `start_offsets_ns`)
  std::vector<std::vector<double>> incast_offsets;
  models::RoceConfig roce; ///< roce: PFC, ECN and DCQCN on one of the roce fabrics (models/congestion/roce_fabric)
  int roce_seeds = 1;      ///< roce: seeds of ECN's marking draws to run (roce.seed onwards); metrics are medians
  /// The network model the job runs on (models/network_models.hpp): the field `network_model`, checked against
  /// what the job's kind can run; its default is what the kind has always run on.
  std::string network_model;
};

/// Metrics of a finished job, by name (e.g. "bw_average_gbps", "h2d_GBps"), plus a human-readable report.
struct JobOutcome {
  std::map<std::string, double> metrics;
  std::string report;
  /// Transports of the job whose transfers failed or whose step never finished (a training job with faults):
  /// "verbs_v1: failed in step 2", ... Non-empty: the job failed (`tensorpath run` counts it, exits 1), although
  /// it has metrics and a report (a sweep keeps them as a row with `failed` = 1).
  std::vector<std::string> failed;
  /// What bounds the result, in words, where the job knows more than its metrics say (a data_parallel job: the
  /// collective model's bottleneck of its largest allreduce); empty otherwise. Sweep rows carry it for `plan`.
  std::string bottleneck;
  /// An output the job was asked to write and could not (the Chrome trace on a full disk): the job's results
  /// stand, the command exits 3 (output lost) naming the file.
  std::string output_lost;
};

/// Run a job on the simulator in this process (one simulation: call it in a child process).
Result<JobOutcome> run_job(const JobSpec& job);
/// Serialize/deserialize an outcome (to bring it back from a child process).
std::string encode_outcome(const JobOutcome& o);
Result<JobOutcome> decode_outcome(const std::string& text);

struct ValidationCase {
  std::string name;
  std::string description;
  std::string source;  ///< where the expected value comes from
  std::string measure; ///< metric name of the job
  std::string unit;
  double expected = 0;
  double tolerance = 0; ///< relative, e.g. 0.05
  std::string note;     ///< known caveats
  /// The sentence or table row of the source that the expected value is read from, word for word.
  std::string quote;
  /// What the source states about the setup (each a short sentence).
  std::vector<std::string> known;
  /// What the case assumes that the source does not state (each a short sentence): printed with its result.
  std::vector<std::string> assumptions;
  /// How `got` is compared with `expected`: WITHIN (|got - expected| <= tolerance * |expected|), AT_LEAST
  /// (got >= expected * (1 - tolerance): the source gives a lower bound) or AT_MOST (got <= expected * (1 +
  /// tolerance)).
  enum class Check { WITHIN, AT_LEAST, AT_MOST } check = Check::WITHIN;
  bool passes(double got) const;
  /// Non-empty: the model is known to miss this case for the given reason (reported XFAIL, not a failure).
  std::string expected_to_fail;
  std::string file;
  JobSpec job;
};

/// Load cases from files or directories (every *.json inside, sorted). Case names must be unique.
Result<std::vector<ValidationCase>> load_cases(const std::vector<std::string>& paths);
/// The cases of one case file's JSON text; `name` stands for the file in error messages.
Result<std::vector<ValidationCase>> load_cases_text(const std::string& text, const std::string& name);

struct Scenario {
  std::string name;
  std::string description;
  std::string file;
  std::vector<JobSpec> jobs;
};

Result<Scenario> load_scenario(const std::string& path);
/// The same from JSON text; `name` stands for the file in error messages.
Result<Scenario> load_scenario_text(const std::string& text, const std::string& name);
/// The default scenario (scenarios/default.json) as built into the binary: `tensorpath run` without a file.
const char* embedded_default_scenario();

/// Every metric name a job can report (run_job's metrics; docs/formats.md), without running it: what a sweep's
/// "metrics" and a case's "measure" may name. A job reports a subset (a failed run reports only its fault counters).
std::vector<std::string> metric_names(const JobSpec& job);

/// Parse one job from its JSON text (a sweep point); errors name `file` and `field`.
Result<JobSpec> parse_job_text(const std::string& json_text, const std::string& file, const std::string& field);

/// The directory with the project's validation cases (validation/cases of the source tree).
std::string default_cases_dir();

} // namespace tp::frontend
