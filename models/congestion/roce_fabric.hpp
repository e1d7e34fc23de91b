// RoCE congestion at flow level (issue 19): PFC, ECN and DCQCN on a small switched fabric, as a fluid model stepped
// in time (roce_step). Every flow is a fluid rate; every switch egress port is a FIFO of fluid chunks (one per flow
// per step, served in arrival order); every link is a delay line. The switches account their shared buffer per ingress
// port the way the HPCC ns-3 repository's switch MMU does (a reserve per port, a dynamic PFC threshold of 1/8 of the
// free buffer, headroom of three one-way link BDPs), send PAUSE and RESUME upstream with the link's delay, and mark
// ECN at dequeue with RED's Kmin/Kmax/Pmax on the instantaneous queue. Each sender runs DCQCN's reaction point (the
// Mellanox variant of that repository: alpha, rate-decrease and rate-increase timers, fast recovery, additive and
// hyper increase, a minimum rate; optionally the DCQCN paper's byte counter), each receiver its notification point.
//
// Checked against the DCQCN fluid model's fixed point (dcqcn_fluid.hpp) and against a packet-level ns-3 program on
// the same topologies (validation/ns3/roce_reference.cc); docs/network-models.md has the tables. Pure computation:
// no SimGrid; a run costs O(steps x (ports + flows)).
#pragma once

#include "core/common/result.hpp"
#include "models/switch_model.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tp::models {

/// DCQCN's reaction point (sender) and notification point (receiver). Rates are bits/s; times are seconds.
struct DcqcnParams {
  bool enabled = true;
  double t_alpha = 1e-6;        ///< alpha update period
  double t_dec = 4e-6;          ///< rate-decrease check period (decreases at most once per period)
  double t_inc = 300e-6;        ///< rate-increase timer
  double g = 1.0 / 256;         ///< alpha's gain
  int fast_recovery = 1;        ///< F: increase events of fast recovery before additive increase
  double ai = 20e6;             ///< additive increase, bits/s
  double hai = 200e6;           ///< hyper increase, bits/s
  double min_rate = 1e9;        ///< bits/s
  double rate_on_first_cnp = 1; ///< fraction of the rate kept on the first CNP
  double cnp_interval = 0;      ///< the receiver sends at most one CNP per flow per interval; 0: one per marked packet
  uint64_t byte_counter = 0;    ///< the DCQCN paper's byte counter (an increase event every B bytes); 0: off
};

/// The HPCC repository's "dcqcn" settings (run.py) at a line rate of `bps`: timers 1/4/300 us, g = 1/256, F = 1,
/// AI 5 Mb/s and HAI 50 Mb/s per 25 Gb/s of line rate, minimum 1 Gb/s.
DcqcnParams dcqcn_hpcc_profile(double bps);
/// The DCQCN paper's settings (Zhu et al., SIGCOMM 2015, as HPCC's "dcqcn_paper" and the fluid model of Zhu et al.,
/// CoNEXT 2016): timers 55/50/55 us, a 50 us CNP interval, F = 5, byte counter 10 MB, AI 40 Mb/s, HAI 400 Mb/s.
DcqcnParams dcqcn_paper_profile();

struct EcnParams {
  bool enabled = true;
  uint64_t kmin = 400000; ///< bytes in the egress queue below which nothing is marked
  uint64_t kmax = 1600000;
  double pmax = 0.2; ///< marking probability at kmax (1 above it)
};
/// HPCC run.py's marking at `bps`: Kmin 100 KB and Kmax 400 KB per 25 Gb/s, Pmax 0.2.
EcnParams ecn_hpcc_profile(double bps);
/// The DCQCN paper's: Kmin 5 KB, Kmax 200 KB, Pmax 1 %.
EcnParams ecn_paper_profile();

struct PfcParams {
  bool enabled = true;
  uint64_t reserve = 4096;       ///< bytes per ingress port outside the shared pool (HPCC switch-mmu.cc)
  uint64_t resume_offset = 3072; ///< RESUME when the port's shared use is this far below the threshold
  int threshold_shift = 3;       ///< dynamic threshold: free shared buffer >> shift (alpha = 1/8, HPCC third.cc)
  double headroom_bdps = 3;      ///< headroom per port in one-way link BDPs (HPCC third.cc)
  /// A switch profile's rows (SwitchBuffer::pfc): a port's headroom is its speed's XOFF_TH in place of
  /// headroom_bdps, and RESUME also goes out at or below its XON_TH. Empty: HPCC's headroom and resume rule.
  std::vector<SwitchBuffer::PfcRow> rows;
};

/// The topologies the model and the ns-3 reference share (node names as in their output).
enum class RoceScenario {
  INCAST,    ///< h0..h{N-1} -> s0 -> r, `size` bytes each
  VICTIM,    ///< a0..a{N-1}, v on s1; r, w, l0..l{M-1} on s2; every a and l -> r, v -> w across s1->s2
  CONVERGE,  ///< h0, h1 -> s0 -> r; flow 1 starts at `start2`
  LONGFLOWS, ///< as INCAST, flows never end; rates and queue averaged over [warmup, duration]
  ALLREDUCE  ///< a ring allreduce of `size` bytes over `senders` ranks on a leaf-spine fabric (`leaves`, one spine,
             ///< uplinks oversubscribed by `oversubscription`); ranks placed round-robin over leaves or leaf by leaf
};
const char* roce_scenario_name(RoceScenario s);
Result<RoceScenario> parse_roce_scenario(const std::string& name);

struct RoceConfig {
  RoceScenario scenario = RoceScenario::INCAST;
  int senders = 8;
  int local = 0;               ///< VICTIM: senders on s2 beside r
  int leaves = 2;              ///< ALLREDUCE: leaf switches (senders / leaves ranks each, one spine)
  double oversubscription = 2; ///< ALLREDUCE: a leaf's host bandwidth over its uplink's
  bool interleaved =
      true; ///< ALLREDUCE: rank i on leaf i mod leaves (every ring hop crosses the spine); false: by leaf
  uint64_t size = 1000000;    ///< payload bytes per flow
  double rate = 100e9;        ///< bits/s of every link
  double delay = 1e-6;        ///< one-way propagation delay of every link, s
  uint64_t buffer = 32000000; ///< each switch's shared buffer, bytes (HPCC: 16 MB per 50 Gb/s)
  /// Each switch's lossless shared pool, beyond every port's headroom and reserve (a switch profile's lossless_pool:
  /// SONiC's ingress_lossless_pool); 0: `buffer` less the headroom and reserve (HPCC's switch MMU).
  uint64_t shared_pool = 0;
  std::string switch_name;    ///< the switch profile the pool and PFC threshold came from ("": none)
  std::string pfc_cable;      ///< the cable the switch profile's PFC rows assume ("": no rows)
  int payload_bytes = 1000;   ///< per data frame
  int frame_bytes = 1062;     ///< on the wire: payload + Eth 14 + FCS 4 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4
  int control_bytes = 64;     ///< a CNP or a PAUSE frame
  DcqcnParams dcqcn;
  EcnParams ecn;
  PfcParams pfc;
  /// VICTIM: the PFC priority of the victim flow v -> w (every other flow's is 0). Another priority than 0 is a
  /// lossless class of its own: its own egress queue, ingress accounting, headroom and PAUSE, so the others' pauses
  /// do not stop it (802.1Qbb); the port's line is shared round robin between the classes.
  int victim_priority = 0;
  double start2 = 500e-6;  ///< CONVERGE
  double duration = 0.05;  ///< LONGFLOWS
  double warmup = 0.02;    ///< LONGFLOWS
  double start_jitter = 0; ///< each flow starts at an offset uniform in [0, jitter) s
  uint64_t seed = 1;       ///< start offsets and ECN marking draws
  double step = 0;         ///< s; 0: roce_step's default
  double stop = 1.0;       ///< s of simulated time after which an unfinished run is an error
};

/// The defaults above with the HPCC profile at `bps` (DCQCN, ECN) and its buffer (16 MB per 50 Gb/s).
RoceConfig roce_hpcc_defaults(double bps);

/// The fabric at a NIC rate of `bps` (a training job's roce_fabric at its ranks' NICs): HPCC's rate-dependent
/// settings (buffer, ECN thresholds, DCQCN's increase steps) that still hold their default at `c.rate` are taken at
/// `bps` instead (a value the file set stays).
RoceConfig roce_at_nic_rate(RoceConfig c, double bps);

/// The fabric a ring allreduce of `bytes` over `ranks` ranks crosses with `hops` of its hops between hosts: the
/// allreduce scenario with one sender per such hop (each sends what a ring hop carries, 2 (ranks - 1) / ranks of the
/// buffer), and a horizon long enough for the ring at a tenth of its fair share.
RoceConfig roce_ring(const RoceConfig& fabric, int ranks, int hops, double bytes);

/// A roce model error about a training job's fabric in the file's terms: the field as `roce_fabric.<key>` (a switch
/// profile's pool as `roce_fabric.switch`, naming `switch_name`), the senders as the ring's `hops` hops between hosts.
Error roce_fabric_error(Error e, int hops, const std::string& switch_name);

/// Every switch of `c` as the profile's: its lossless pool as the shared pool and its lossless alpha as the PFC
/// threshold (alpha = 2^-threshold_shift; headroom and reserve stay the model's, HPCC's). An error naming the
/// profile when it gives no lossless pool, or an alpha above 1 (the model's threshold is a right shift).
Status apply_switch_buffer(const SwitchProfile& sw, RoceConfig& c);

struct RoceFlowResult {
  std::string src, dst;
  uint64_t bytes = 0;
  double start = 0;
  double completion = -1; ///< s; < 0: did not finish (LONGFLOWS)
  double mean_bps = 0;    ///< payload bits over (completion - start)
  double window_bps = 0;  ///< LONGFLOWS: payload bits per second over the window
  double final_rate = 0;  ///< DCQCN's current rate at the end, bits/s
};

struct RocePortPause {
  std::string port; ///< "<node>-><node>": the egress port that was paused
  uint64_t frames = 0;
  double paused = 0; ///< s
  int priority = 0;  ///< the PFC priority paused
};

struct RoceResult {
  double completion = 0; ///< s, the last flow's (not LONGFLOWS)
  double first = 0;
  double goodput_bps = 0; ///< payload bits of every flow over the completion time
  std::vector<RoceFlowResult> flows;
  std::string hot_port;
  double peak_queue = 0; ///< bytes in the hot port's egress queue at its fullest
  double mean_queue = 0; ///< time average over the run (LONGFLOWS: over the window)
  double marked = 0;     ///< data frames marked CE (expected count)
  double cnps = 0;
  double drops = 0; ///< bytes a switch refused (never with PFC and a sane buffer)
  std::vector<RocePortPause> pauses;
  double victim_completion = -1, victim_bps = 0; ///< VICTIM: v -> w
  double window_bps = 0;                         ///< LONGFLOWS: mean per-flow payload rate over the window
  double algbw_bps = 0, busbw_bps = 0;           ///< ALLREDUCE: size / time, and x 2(n-1)/n (nccl-tests' convention)
  uint64_t steps = 0;
  double pause_frames() const;  ///< PAUSE frames over every port
  double longest_pause() const; ///< s, the longest any port spent paused
};

/// The switches' buffer as reports give it: "buffer N bytes", or "switch X's lossless pool of N bytes, PFC above
/// 1/K of its free bytes" when a switch profile set it.
std::string roce_buffer_text(const RoceConfig& c);

/// The lossless classes the scenario has: 2 with a victim in a priority of its own, else 1.
int roce_classes(const RoceConfig& c);

/// The model's time step: `step` when set, else half the fastest of 1 us, DCQCN's alpha and decrease periods and the
/// link delay, and never less than one data frame's time on a link (0.5 us at 100 Gb/s with HPCC's timers: six
/// frames). Every rate, queue and pause changes at step boundaries; feedback (marks, CNPs, PAUSE) carries exact times.
double roce_step(const RoceConfig& c);

/// A setting whose unit in scenario files and on the command line is not SI: its name as check_roce's errors give it,
/// its key in a scenario file, its option of `tensorpath roce`, and the factor from SI to the key's and the option's
/// unit (both use the same unit).
struct RoceSettingUnit {
  const char* field;
  const char* key;
  const char* option;
  double scale;
};
const std::vector<RoceSettingUnit>& roce_setting_units();
/// The entry of `field` (check_roce's name) or of `key` (a scenario file's), or nullptr.
const RoceSettingUnit* roce_setting_unit(const std::string& field_or_key);

/// The settings only one scenario reads (leaves, oversubscription and placement: allreduce; start2: converge;
/// duration and warmup: longflows; local and victim_priority: victim), by their field names: "" when `field` applies to
/// `s`, else the scenario it belongs to.
std::string roce_field_scenario(const std::string& field, RoceScenario s);

/// A switch of the scenario's fabric and the rates of its ingress links (for the buffer checks and estimates).
struct RoceSwitchShape {
  std::string name;
  std::vector<double> ingress_rates; ///< bits/s
};
std::vector<RoceSwitchShape> roce_switches(const RoceConfig& c);

/// Every field in its range, and what the model needs of them together: a step no longer than a hop, PFC headroom
/// for what arrives while a PAUSE takes effect, a buffer that holds every port's headroom and reserve, a run within
/// the model's time and memory bounds. The error names the field.
Status check_roce(const RoceConfig& c);

/// Checks the configuration and runs the model. A run that drops bytes (PFC off, or a buffer too small for the
/// headroom), or does not finish by `stop`, is an error: the model has no loss recovery (RoCE's go-back-N).
Result<RoceResult> simulate_roce(const RoceConfig& c);

/// A result that cannot be right (a rate above the line's payload rate, a flow that moved nothing, not a finite
/// time) is an error naming `model`.
Status check_roce_result(const RoceConfig& c, const RoceResult& r, const std::string& model);

/// Max-min's answer on the same flows (the `flow` model): no queue, no pause; for side-by-side tables.
Result<RoceResult> max_min_roce(const RoceConfig& c);

/// `model` ("flow": max_min_roce, "roce": simulate_roce) on `c`, its result checked (check_roce_result).
Result<RoceResult> run_roce_model(const std::string& model, const RoceConfig& c);

} // namespace tp::models
