// RoCE congestion at flow level: a fluid model of PFC, ECN and DCQCN stepped at one frame time (see roce_fabric.hpp).
#include "models/congestion/roce_fabric.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <queue>
#include <random>

namespace tp::models {

DcqcnParams dcqcn_hpcc_profile(double bps)
{
  DcqcnParams d;
  d.ai = 5e6 * bps / 25e9;
  d.hai = 50e6 * bps / 25e9;
  return d;
}

DcqcnParams dcqcn_paper_profile()
{
  DcqcnParams d;
  d.t_alpha = 55e-6;
  d.t_dec = 50e-6;
  d.t_inc = 55e-6;
  d.fast_recovery = 5;
  d.ai = 40e6;
  d.hai = 400e6;
  d.cnp_interval = 50e-6;
  d.byte_counter = 10000000;
  return d;
}

EcnParams ecn_hpcc_profile(double bps)
{
  EcnParams e;
  e.kmin = uint64_t(std::llround(100000 * bps / 25e9));
  e.kmax = uint64_t(std::llround(400000 * bps / 25e9));
  e.pmax = 0.2;
  return e;
}

EcnParams ecn_paper_profile()
{
  EcnParams e;
  e.kmin = 5000;
  e.kmax = 200000;
  e.pmax = 0.01;
  return e;
}

RoceConfig roce_hpcc_defaults(double bps)
{
  RoceConfig c;
  c.rate = bps;
  c.dcqcn = dcqcn_hpcc_profile(bps);
  c.ecn = ecn_hpcc_profile(bps);
  c.buffer = uint64_t(std::llround(16e6 * bps / 50e9));
  return c;
}

const char* roce_scenario_name(RoceScenario s)
{
  switch (s) {
  case RoceScenario::INCAST:
    return "incast";
  case RoceScenario::VICTIM:
    return "victim";
  case RoceScenario::CONVERGE:
    return "converge";
  case RoceScenario::LONGFLOWS:
    return "longflows";
  case RoceScenario::ALLREDUCE:
    return "allreduce";
  }
  return "?";
}

Result<RoceScenario> parse_roce_scenario(const std::string& name)
{
  for (auto s : {RoceScenario::INCAST, RoceScenario::VICTIM, RoceScenario::CONVERGE, RoceScenario::LONGFLOWS,
                 RoceScenario::ALLREDUCE})
    if (name == roce_scenario_name(s)) return s;
  return Error::at("", "scenario", "one of incast, victim, converge, longflows, allreduce", "\"" + name + "\"");
}

std::string roce_buffer_text(const RoceConfig& c)
{
  if (c.shared_pool == 0) return "buffer " + std::to_string(c.buffer) + " bytes";
  const std::string alpha = c.pfc.threshold_shift == 0 ? "1" : "1/" + std::to_string(1u << c.pfc.threshold_shift);
  return "switch " + c.switch_name + "'s lossless pool of " + std::to_string(c.shared_pool) +
         " bytes, PFC above alpha " + alpha + " x its free bytes" +
         (c.pfc.rows.empty() ? std::string() : ", its headroom and XON by port speed (" + c.pfc_cable + " cable)");
}

int roce_classes(const RoceConfig& c)
{
  return c.scenario == RoceScenario::VICTIM && c.victim_priority != 0 ? 2 : 1;
}

double roce_step(const RoceConfig& c)
{
  if (c.step > 0) return c.step;
  double fastest = std::min({1e-6, c.dcqcn.t_alpha, c.dcqcn.t_dec});
  if (c.delay > 0) fastest = std::min(fastest, c.delay);
  return std::max(c.frame_bytes * 8.0 / c.rate, fastest / 2);
}

namespace {
std::string short_number(double v)
{
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}
} // namespace

Status check_roce(const RoceConfig& c)
{
  auto bad = [](const std::string& field, const std::string& expected, double got) -> Status {
    char text[64];
    std::snprintf(text, sizeof text, "%.10g", got);
    return Error::at("", field, expected, text);
  };
  const bool finite = std::isfinite(c.rate) && std::isfinite(c.delay) && std::isfinite(c.start2) &&
                      std::isfinite(c.duration) && std::isfinite(c.warmup) && std::isfinite(c.start_jitter) &&
                      std::isfinite(c.step) && std::isfinite(c.stop);
  if (!finite) return Error::at("", "config", "finite numbers", "a NaN or infinity");
  const int max_senders = c.scenario == RoceScenario::CONVERGE ? 2 : 1024;
  if (c.scenario == RoceScenario::CONVERGE && c.senders != 2)
    return bad("senders", "2 (the converge scenario has two flows)", c.senders);
  if (c.senders < 1 || c.senders > max_senders) return bad("senders", "1..1024", c.senders);
  if (c.local < 0 || c.local > 1024 || (c.local > 0 && c.scenario != RoceScenario::VICTIM))
    return bad("local", "0..1024, and 0 outside the victim scenario", c.local);
  if (c.size < 1 || c.size > (uint64_t(1) << 40)) return bad("size", "1 byte .. 1 TiB", double(c.size));
  if (!(c.rate >= 1e6 && c.rate <= 1e13)) return bad("rate", "1 Mb/s .. 10 Tb/s", c.rate);
  if (!(c.delay >= 0 && c.delay <= 1e-2)) return bad("delay", "0 .. 10 ms", c.delay);
  if (c.payload_bytes < 1 || c.frame_bytes <= c.payload_bytes || c.frame_bytes > 65536)
    return bad("frame_bytes", "more than payload_bytes, at most 65536", c.frame_bytes);
  if (c.control_bytes < 1 || c.control_bytes > 65536) return bad("control_bytes", "1..65536", c.control_bytes);
  if (c.buffer < uint64_t(c.frame_bytes) * 2 || c.buffer > (uint64_t(1) << 36))
    return bad("buffer", "two frames .. 64 GiB", double(c.buffer));
  const auto& d = c.dcqcn;
  if (!(d.t_alpha > 0 && d.t_alpha <= 1)) return bad("t_alpha", "0 < t <= 1 s", d.t_alpha);
  if (!(d.t_dec > 0 && d.t_dec <= 1)) return bad("t_dec", "0 < t <= 1 s", d.t_dec);
  if (!(d.t_inc > 0 && d.t_inc <= 1)) return bad("t_inc", "0 < t <= 1 s", d.t_inc);
  if (!(d.g > 0 && d.g <= 1)) return bad("g", "0 < g <= 1", d.g);
  if (d.fast_recovery < 0 || d.fast_recovery > 1000) return bad("fast_recovery", "0..1000", d.fast_recovery);
  if (!(d.ai >= 0 && d.ai <= c.rate)) return bad("ai", "0 .. the line rate (bits/s)", d.ai);
  if (!(d.hai >= 0 && d.hai <= c.rate)) return bad("hai", "0 .. the line rate (bits/s)", d.hai);
  if (!(d.min_rate > 0 && d.min_rate <= c.rate)) return bad("min_rate", "0 < rate <= the line rate", d.min_rate);
  if (!(d.rate_on_first_cnp > 0 && d.rate_on_first_cnp <= 1))
    return bad("rate_on_first_cnp", "0 < f <= 1", d.rate_on_first_cnp);
  if (!(d.cnp_interval >= 0 && d.cnp_interval <= 1)) return bad("cnp_interval", "0 .. 1 s", d.cnp_interval);
  if (!std::isfinite(d.t_alpha + d.t_dec + d.t_inc + d.g + d.ai + d.hai + d.min_rate + d.cnp_interval))
    return Error::at("", "dcqcn", "finite numbers", "a NaN or infinity");
  const auto& e = c.ecn;
  if (e.kmax < e.kmin) return bad("kmax", "at least kmin", double(e.kmax));
  if (!(e.pmax >= 0 && e.pmax <= 1)) return bad("pmax", "0..1", e.pmax);
  if (c.pfc.threshold_shift < 0 || c.pfc.threshold_shift > 16)
    return bad("threshold_shift", "0..16", c.pfc.threshold_shift);
  if (c.victim_priority < 0 || c.victim_priority > 7 || (c.victim_priority > 0 && c.scenario != RoceScenario::VICTIM))
    return bad("victim_priority", "0..7, and 0 outside the victim scenario", c.victim_priority);
  if (!(c.pfc.headroom_bdps >= 0 && c.pfc.headroom_bdps <= 1000))
    return bad("headroom_bdps", "0..1000", c.pfc.headroom_bdps);
  if (c.scenario == RoceScenario::CONVERGE && !(c.start2 >= 0 && c.start2 <= 10))
    return bad("start2", "0..10 s", c.start2);
  if (c.scenario == RoceScenario::LONGFLOWS) {
    if (!(c.duration > 0 && c.duration <= 10)) return bad("duration", "0 < d <= 10 s", c.duration);
    if (!(c.warmup >= 0 && c.warmup < c.duration)) return bad("warmup", "0 <= w < duration", c.warmup);
  }
  if (c.scenario == RoceScenario::ALLREDUCE) {
    if (c.senders < 2) return bad("senders", "at least 2 ranks in a ring", c.senders);
    if (c.leaves < 1 || c.leaves > c.senders || c.senders % c.leaves != 0)
      return bad("leaves", "a divisor of senders (as many ranks on every leaf)", c.leaves);
    if (!(c.oversubscription >= 1 && c.oversubscription <= 64))
      return bad("oversubscription", "1 .. 64 (a leaf's host bandwidth over its uplink's)", c.oversubscription);
  }
  if (!(c.start_jitter >= 0 && c.start_jitter <= 1)) return bad("jitter", "0 .. 1 s", c.start_jitter);
  const double frame_time = c.frame_bytes * 8.0 / c.rate;
  if (!(c.step >= 0 && c.step <= 1e-3)) return bad("step", "0 (one frame time) .. 1 ms", c.step);
  if (c.step > 0 && c.step < frame_time / 100) return bad("step", "at least 1/100 of a frame time", c.step);
  if (!(c.stop > 0 && c.stop <= 100)) return bad("stop", "0 < stop <= 100 s", c.stop);
  if (d.byte_counter > 0 && d.byte_counter < uint64_t(c.frame_bytes))
    return bad("byte_counter", "0 (off) or at least one frame", double(d.byte_counter));
  const double step = roce_step(c);
  // A step longer than a hop would let bytes skip a link's delay (every hop takes at least one step).
  if (c.step > 0 && c.step > c.delay + frame_time * (1 + 1e-9))
    return bad("step",
               "at most one hop: the link delay plus a frame time (" + std::to_string((c.delay + frame_time) * 1e9) +
                   " ns)",
               c.step);
  if (c.scenario != RoceScenario::LONGFLOWS &&
      !(c.start2 * (c.scenario == RoceScenario::CONVERGE) + c.start_jitter < c.stop))
    return bad("stop", "later than the last flow's start (start2 + jitter)", c.stop);
  const bool longflows = c.scenario == RoceScenario::LONGFLOWS;
  const double horizon = longflows ? c.duration : c.stop;
  const auto shape = roce_switches(c);
  double ports = 0;
  for (const auto& sw : shape)
    ports += 2.0 * double(sw.ingress_rates.size());
  const double flows = double(c.senders + c.local + (c.scenario == RoceScenario::VICTIM ? 1 : 0));
  if (horizon / step * (ports + flows) > 2e10)
    return bad(longflows ? "duration" : "stop",
               "at most 2e10 port- and flow-steps of the model (a minute or so): a shorter run, a longer --step or "
               "fewer senders",
               horizon / step * (ports + flows));
  const double slots = std::ceil((c.delay + frame_time) / step);
  if (slots * ports > 2e7)
    return bad("delay",
               "at most 2e7 delay-line slots over all ports (delay / step x ports): a shorter delay or a "
               "longer --step",
               slots * ports);
  // PFC needs headroom for what is on the wire and sent while a PAUSE travels upstream and takes effect (two
  // delays, the frame on the wire and the PAUSE, and the frame being received), and each switch's buffer must hold
  // every port's headroom and reserve.
  for (const auto& sw : shape) {
    double reserved = 0;
    for (const double r : sw.ingress_rates) {
      const auto row = pfc_row(c.pfc.rows, r);
      const double headroom = row ? double(row->xoff) : c.pfc.headroom_bdps * r / 8 * c.delay;
      const double needed = r / 8 * (2 * c.delay + (c.frame_bytes + c.control_bytes) * 8.0 / r) + c.frame_bytes;
      if (c.pfc.enabled && headroom < needed && row)
        return bad("delay",
                   "PFC headroom (switch " + c.switch_name + "'s XOFF_TH, " + short_number(headroom) + " bytes at " +
                       short_number(r * 1e-9) + " Gb/s for a " + c.pfc_cable + " cable) for the " +
                       short_number(std::ceil(needed)) +
                       " bytes that arrive while a PAUSE takes effect over this delay: a shorter delay (the profile's "
                       "cable), or the buffer given without the switch",
                   c.delay);
      if (c.pfc.enabled && headroom < needed)
        return bad("delay",
                   "PFC headroom (headroom_bdps " + short_number(c.pfc.headroom_bdps) +
                       " x rate x delay = " + short_number(std::floor(headroom)) + " bytes at " +
                       short_number(r * 1e-9) + " Gb/s) for the " + short_number(std::ceil(needed)) +
                       " bytes that arrive while a PAUSE takes effect: a longer delay or more headroom_bdps (HPCC's "
                       "3 one-way BDPs is short below about 20 Gb/s on 1 us links)",
                   c.delay);
      reserved += (headroom + double(c.pfc.reserve)) * roce_classes(c);
    }
    const double shared_min = double(sw.ingress_rates.size()) * c.frame_bytes * roce_classes(c);
    if (c.shared_pool > 0) {
      if (double(c.shared_pool) < shared_min)
        return bad("shared_pool",
                   "at least a frame of shared pool per port of switch " + sw.name + " (" +
                       std::to_string(uint64_t(shared_min)) + " bytes)",
                   double(c.shared_pool));
      continue;
    }
    if (double(c.buffer) < reserved + shared_min)
      return bad(
          "buffer",
          "at least switch " + sw.name + "'s headroom and reserve for its " + std::to_string(sw.ingress_rates.size()) +
              " ports" + (roce_classes(c) > 1 ? " and " + std::to_string(roce_classes(c)) + " priorities" : "") +
              " plus a frame of shared buffer per port (" + std::to_string(uint64_t(reserved + shared_min)) + " bytes)",
          double(c.buffer));
  }
  return {};
}

Error roce_fabric_error(Error e, int hops, const std::string& switch_name)
{
  const RoceSettingUnit* unit = roce_setting_unit(e.field);
  if (e.field == "shared_pool") e.got += " (the lossless pool of switch " + switch_name + ")";
  e.field = "roce_fabric." + std::string(e.field == "shared_pool" ? "switch" : unit ? unit->key : e.field.c_str());
  for (size_t at; (at = e.expected.find("senders")) != std::string::npos;)
    e.expected.replace(at, 7, "the ring's " + std::to_string(hops) + " hops between hosts");
  return e;
}

RoceConfig roce_at_nic_rate(RoceConfig c, double bps)
{
  const auto given = roce_hpcc_defaults(c.rate), nic = roce_hpcc_defaults(bps);
  if (c.buffer == given.buffer) c.buffer = nic.buffer;
  if (c.ecn.kmin == given.ecn.kmin) c.ecn.kmin = nic.ecn.kmin;
  if (c.ecn.kmax == given.ecn.kmax) c.ecn.kmax = nic.ecn.kmax;
  if (c.dcqcn.ai == given.dcqcn.ai) c.dcqcn.ai = nic.dcqcn.ai;
  if (c.dcqcn.hai == given.dcqcn.hai) c.dcqcn.hai = nic.dcqcn.hai;
  c.rate = bps;
  return c;
}

RoceConfig roce_ring(const RoceConfig& fabric, int ranks, int hops, double bytes)
{
  auto c = fabric;
  c.scenario = RoceScenario::ALLREDUCE;
  c.senders = hops;
  const double per_hop = 2.0 * (ranks - 1) / ranks * bytes; // what each hop of the job's ring carries
  c.size = std::max<uint64_t>(1, uint64_t(std::ceil(per_hop * hops / (2.0 * (hops - 1)))));
  const double fair = c.rate / 8 / std::max(1.0, c.oversubscription); // bytes/s a sender gets through its uplink
  c.stop = std::min(100.0, std::max(c.stop, 10 * per_hop / fair + 1e-3));
  return c;
}

Status apply_switch_buffer(const SwitchProfile& sw, RoceConfig& c)
{
  if (!sw.buffer || sw.buffer->lossless_pool == 0)
    return Error::at(sw.name, "buffer.lossless_pool",
                     "a switch profile with a lossless pool and its alpha (docs/formats.md), or the "
                     "buffer given directly",
                     "switch \"" + sw.name + "\" gives none");
  const double shift = -std::log2(sw.buffer->lossless_alpha);
  if (!(shift >= 0 && shift <= 16 && shift == std::round(shift)))
    return Error::at(sw.name, "buffer.lossless_alpha",
                     "a power of two from 1/65536 to 1 (the roce model's PFC threshold is the free pool shifted right)",
                     std::to_string(sw.buffer->lossless_alpha));
  c.shared_pool = sw.buffer->lossless_pool;
  c.pfc.threshold_shift = int(shift);
  if (!sw.buffer->pfc.empty()) { // SAI's XOFF_TH as headroom, XON_TH and XON_OFFSET_TH for RESUME
    c.pfc.rows = sw.buffer->pfc;
    c.pfc.resume_offset = sw.buffer->xon_offset;
    c.pfc_cable = sw.buffer->pfc_cable;
  }
  c.switch_name = sw.name;
  return {};
}

const std::vector<RoceSettingUnit>& roce_setting_units()
{
  static const std::vector<RoceSettingUnit> all = {{"rate", "rate_gbps", "--rate", 1e-9},
                                                   {"delay", "delay_us", "--delay", 1e6},
                                                   {"t_alpha", "t_alpha_us", "--t-alpha", 1e6},
                                                   {"t_dec", "t_dec_us", "--t-dec", 1e6},
                                                   {"t_inc", "t_inc_us", "--t-inc", 1e6},
                                                   {"cnp_interval", "cnp_interval_us", "--cnp-interval", 1e6},
                                                   {"ai", "ai_mbps", "--ai", 1e-6},
                                                   {"hai", "hai_mbps", "--hai", 1e-6},
                                                   {"min_rate", "min_rate_gbps", "--min-rate", 1e-9},
                                                   {"start2", "start2_us", "--start2", 1e6},
                                                   {"duration", "duration_ms", "--duration", 1e3},
                                                   {"warmup", "warmup_ms", "--warmup", 1e3},
                                                   {"jitter", "jitter_ns", "--jitter", 1e9},
                                                   {"step", "step_ns", "--step", 1e9},
                                                   {"stop", "stop_s", "--stop", 1},
                                                   {"headroom_bdps", "headroom_bdps", "--headroom-bdps", 1}};
  return all;
}

const RoceSettingUnit* roce_setting_unit(const std::string& field_or_key)
{
  for (const auto& u : roce_setting_units())
    if (field_or_key == u.field || field_or_key == u.key) return &u;
  return nullptr;
}

std::string roce_field_scenario(const std::string& field, RoceScenario s)
{
  static const std::map<std::string, RoceScenario> owner = {
      {"leaves", RoceScenario::ALLREDUCE},    {"oversubscription", RoceScenario::ALLREDUCE},
      {"placement", RoceScenario::ALLREDUCE}, {"start2", RoceScenario::CONVERGE},
      {"duration", RoceScenario::LONGFLOWS},  {"warmup", RoceScenario::LONGFLOWS},
      {"local", RoceScenario::VICTIM},        {"victim_priority", RoceScenario::VICTIM}};
  const auto it = owner.find(field);
  if (it == owner.end() || it->second == s) return "";
  return roce_scenario_name(it->second);
}

std::vector<RoceSwitchShape> roce_switches(const RoceConfig& c)
{
  std::vector<RoceSwitchShape> out;
  const double r = c.rate;
  switch (c.scenario) {
  case RoceScenario::VICTIM:
    out.push_back({"s1", std::vector<double>(size_t(std::max(0, c.senders)) + 2, r)}); // a*, v, s2
    out.push_back({"s2", std::vector<double>(size_t(std::max(0, c.local)) + 3, r)});   // l*, r, w, s1
    break;
  case RoceScenario::ALLREDUCE: {
    const int leaves = std::max(1, c.leaves), per_leaf = std::max(1, c.senders / leaves);
    const double uplink = r * per_leaf / std::max(1.0, c.oversubscription);
    out.push_back({"sp", std::vector<double>(size_t(leaves), uplink)});
    for (int l = 0; l < leaves; ++l) {
      RoceSwitchShape leaf{"leaf" + std::to_string(l), std::vector<double>(size_t(per_leaf), r)};
      leaf.ingress_rates.push_back(uplink);
      out.push_back(leaf);
    }
    break;
  }
  default:
    out.push_back({"s0", std::vector<double>(size_t(std::max(0, c.senders)) + 1, r)}); // h*, r
  }
  return out;
}

namespace {

constexpr double EPS = 1e-9; // bytes: fluid below this is nothing

struct Node {
  std::string name;
  bool is_switch = false;
};

struct Port {
  int from = 0, to = 0;
  double rate = 0;           ///< bits/s
  double bytes_per_step = 0; ///< what the link carries in one step
  int slots = 1;             ///< steps from entering the port's link to arriving at `to` (propagation + one frame)
  std::vector<int> flows;    ///< flows crossing this port
  struct Chunk {
    int k; ///< entry of `flows`
    double bytes;
    uint64_t step; ///< when it arrived (chunks of one flow and step merge)
  };
  /// One PFC priority's share of the port: its egress FIFO (switch ports: fluid in arrival order, one chunk per flow
  /// per step it arrived in), its pause state, and the ingress accounting at `to` (a switch) for what came through
  /// the port in that priority (HPCC switch-mmu.cc: counters per port and queue).
  struct Lane {
    std::deque<Chunk> fifo;
    double queue = 0;    ///< bytes
    bool paused = false; ///< a PAUSE for this priority from `to` is in force
    uint64_t pause_frames = 0;
    double paused_time = 0;
    double ingress_bytes = 0, hdrm_bytes = 0;
    bool pause_sent = false;
  };
  std::vector<Lane> lanes; ///< one per class (roce_classes)
  std::vector<int> hop_of; ///< the index of this port in each flow's path
  std::vector<int> next_k; ///< each flow's entry in its next port's `flows` (-1: the receiver's link)
  double queue = 0;        ///< bytes, every lane's
  std::vector<std::vector<std::pair<int, double>>> line; ///< delay line: (entry of `flows`, bytes) per slot
};

struct Switch {
  double shared_used = 0;
  double total_headroom = 0, total_reserve = 0;
};

struct Flow {
  int src = 0, dst = 0;
  int cls = 0;           ///< its class: 0 (priority 0), or 1 (the victim's own priority)
  std::vector<int> path; ///< ports, from the sender's NIC to the receiver's link
  double start = 0;
  double to_send = 0;   ///< wire bytes not yet sent (infinite for LONGFLOWS)
  double delivered = 0; ///< wire bytes at the receiver
  double wire_total = 0;
  double completion = -1;
  double window_bytes = 0;
  // DCQCN reaction point
  double rc = 0, rt = 0, alpha = 1;
  bool alpha_cnp = false, dec_cnp = false, first_cnp = true;
  int stage = 0, bc_stage = 0;
  double bc_bytes = 0;
  double next_alpha = -1, next_dec = -1, next_inc = -1;
  // notification point
  double last_cnp = -1e9;
  /// ECN marks as a Bernoulli process per frame with the port's probability, drawn as a hazard: the flow is marked
  /// when the sum of -log(1 - p) over its frames crosses this Exp(1) draw (exact for a probability that varies).
  double mark_budget = 0;
  double feedback_delay = 0;       ///< receiver -> sender, s (the CNP's path)
  std::vector<double> to_receiver; ///< per hop: s from leaving that port's queue to reaching the receiver
};

enum class EvKind : uint8_t { MARK_AT_RECEIVER, CNP_AT_SENDER, PAUSE_AT_PORT, RESUME_AT_PORT };

struct Event {
  double t;
  uint64_t seq;
  EvKind kind;
  int who;     ///< flow or port
  int cls = 0; ///< PAUSE, RESUME: the class
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

class Fabric {
public:
  explicit Fabric(const RoceConfig& c) : c_(c), rng_(c.seed)
  {
    dt_ = roce_step(c);
    build();
  }

  Result<RoceResult> run();
  /// The `flow` model on the same fabric and flows: progressive max-min filling of every port each flow crosses
  /// (payload rates), flows starting and ending; no queue, pause or CNP; each flow's last byte one path latency later.
  RoceResult max_min() const;

private:
  int add_node(const std::string& name, bool sw)
  {
    nodes_.push_back({name, sw});
    return int(nodes_.size()) - 1;
  }
  void link(int a, int b, double rate = 0)
  {
    if (rate <= 0) rate = c_.rate;
    for (int k = 0; k < 2; ++k) {
      Port p;
      p.from = k == 0 ? a : b;
      p.to = k == 0 ? b : a;
      p.rate = rate;
      p.bytes_per_step = rate / 8 * dt_;
      p.slots = std::max(1, int(std::lround(hop_time(p, c_.frame_bytes) / dt_)));
      p.lanes.resize(size_t(roce_classes(c_)));
      ports_.push_back(std::move(p));
    }
  }
  int port_between(int a, int b) const
  {
    for (size_t i = 0; i < ports_.size(); ++i)
      if (ports_[i].from == a && ports_[i].to == b) return int(i);
    return -1;
  }
  void add_flow(int src, int dst, const std::vector<int>& hops, double start, bool endless)
  {
    Flow f;
    f.src = src;
    f.dst = dst;
    for (size_t i = 0; i + 1 < hops.size(); ++i)
      f.path.push_back(port_between(hops[i], hops[i + 1]));
    f.start = start;
    f.wire_total = double(c_.size) / c_.payload_bytes * c_.frame_bytes;
    f.to_send = endless ? std::numeric_limits<double>::infinity() : f.wire_total;
    f.rc = f.rt = c_.rate;
    f.feedback_delay = 0;
    for (const int pi : f.path)
      f.feedback_delay += hop_time(ports_[size_t(pi)], c_.control_bytes);
    f.to_receiver.assign(f.path.size(), 0);
    double after = 0;
    for (size_t h = f.path.size(); h-- > 0;) {
      after += hop_time(ports_[size_t(f.path[h])], c_.frame_bytes);
      f.to_receiver[h] = after;
    }
    flows_.push_back(std::move(f));
  }

  void build();
  /// A hop: the link's propagation delay and `bytes` serialized at its rate (store and forward).
  double hop_time(const Port& p, int bytes) const { return c_.delay + bytes * 8.0 / p.rate; }
  std::string port_name(int port) const
  {
    const auto& p = ports_[size_t(port)];
    return nodes_[size_t(p.from)].name + "->" + nodes_[size_t(p.to)].name;
  }
  /// The figures every model's result derives from its flows' completions: completion, first, goodput (an
  /// allreduce's bus bandwidth), algbw/busbw, the victim's.
  void summarize(RoceResult& r) const;
  double threshold(const Switch& s) const
  {
    const double pool =
        c_.shared_pool > 0 ? double(c_.shared_pool) : double(c_.buffer) - s.total_headroom - s.total_reserve;
    return std::max(0.0, (pool - s.shared_used) / double(1u << c_.pfc.threshold_shift));
  }
  /// Headroom of an ingress port: the switch profile's XOFF_TH at its speed, else `headroom_bdps` one-way
  /// bandwidth-delay products of its link (HPCC third.cc).
  double headroom(const Port& in) const
  {
    if (const auto row = pfc_row(c_.pfc.rows, in.rate)) return double(row->xoff);
    return c_.pfc.headroom_bdps * in.rate / 8 * c_.delay;
  }
  /// XON_TH of an ingress port (a switch profile's row; -1 without rows): at or below it RESUME goes out. It is
  /// compared with the lane's shared use beyond its reserve, as the threshold is (SAI says "total buffer usage").
  double xon_threshold(const Port& in) const
  {
    const auto row = pfc_row(c_.pfc.rows, in.rate);
    return row ? double(row->xon) : -1; // -1: no XON_TH
  }
  double shared_of(const Port::Lane& in) const { return std::max(0.0, in.ingress_bytes - double(c_.pfc.reserve)); }
  bool admit(Port& in, int cls, double s);
  void release(Port& in, int cls, double s);
  void maybe_pause(int in_port, int cls, double now);
  void maybe_resume(int in_port, int cls, double now);
  void push_event(double t, EvKind k, int who, int cls = 0) { events_.push(Event{t, seq_++, k, who, cls}); }
  void on_cnp(Flow& f, double now);
  void run_timers(Flow& f, double until);
  void increase(Flow& f);
  double mark_probability(double q) const
  {
    if (!c_.ecn.enabled || q <= double(c_.ecn.kmin)) return 0;
    if (q > double(c_.ecn.kmax)) return 1;
    return c_.ecn.pmax * (q - double(c_.ecn.kmin)) / double(c_.ecn.kmax - c_.ecn.kmin);
  }
  double uniform() { return double(rng_() >> 11) * 0x1.0p-53; }

  const RoceConfig& c_;
  std::mt19937_64 rng_;
  double dt_ = 0;
  std::vector<Node> nodes_;
  std::vector<Port> ports_;
  std::map<int, Switch> switches_;
  std::vector<Flow> flows_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  uint64_t seq_ = 0;
  std::vector<int> host_ports_, switch_ports_, used_ports_;
  int hot_port_ = -1, victim_ = -1;
  std::vector<double> shares_; ///< a port's step split between its lanes (scratch)
  double marked_ = 0, cnps_ = 0, drops_ = 0;
};

void Fabric::build()
{
  const bool endless = c_.scenario == RoceScenario::LONGFLOWS;
  std::vector<double> offsets;
  auto start_of = [&](size_t i) {
    while (offsets.size() <= i)
      offsets.push_back(c_.start_jitter > 0 ? uniform() * c_.start_jitter : 0.0);
    return offsets[i];
  };
  if (c_.scenario == RoceScenario::VICTIM) {
    const int s1 = add_node("s1", true), s2 = add_node("s2", true);
    link(s1, s2);
    const int r = add_node("r", false), w = add_node("w", false), v = add_node("v", false);
    link(s2, r);
    link(s2, w);
    link(v, s1);
    std::vector<int> a, l;
    for (int i = 0; i < c_.senders; ++i) {
      a.push_back(add_node("a" + std::to_string(i), false));
      link(a.back(), s1);
    }
    for (int i = 0; i < c_.local; ++i) {
      l.push_back(add_node("l" + std::to_string(i), false));
      link(l.back(), s2);
    }
    size_t k = 0;
    for (int h : a)
      add_flow(h, r, {h, s1, s2, r}, start_of(k++), false);
    for (int h : l)
      add_flow(h, r, {h, s2, r}, start_of(k++), false);
    victim_ = int(flows_.size());
    add_flow(v, w, {v, s1, s2, w}, start_of(k++), false);
    flows_.back().cls = roce_classes(c_) - 1; // its own lossless priority when victim_priority is set
    hot_port_ = port_between(s2, r);
  } else if (c_.scenario == RoceScenario::ALLREDUCE) {
    // Leaf-spine: `leaves` leaves of n / leaves hosts each, one spine; each leaf's uplink carries its hosts' line
    // rate over the oversubscription. The ring's bandwidth phase: every rank streams 2(n-1)/n of the buffer to its
    // successor (NCCL pipelines chunks round the ring, so each ring link carries that much, all at once).
    const int n = c_.senders, per_leaf = n / c_.leaves;
    const int spine = add_node("sp", true);
    std::vector<int> leaf, rank_host(size_t(n), -1), leaf_of(size_t(n), 0);
    for (int l = 0; l < c_.leaves; ++l) {
      leaf.push_back(add_node("leaf" + std::to_string(l), true));
      link(leaf.back(), spine, c_.rate * per_leaf / c_.oversubscription);
    }
    for (int i = 0; i < n; ++i) {
      leaf_of[size_t(i)] = c_.interleaved ? i % c_.leaves : i / per_leaf;
      rank_host[size_t(i)] = add_node("g" + std::to_string(i), false);
      link(rank_host[size_t(i)], leaf[size_t(leaf_of[size_t(i)])]);
    }
    const double share = 2.0 * (n - 1) / n;
    for (int i = 0; i < n; ++i) {
      const int j = (i + 1) % n;
      const int a = rank_host[size_t(i)], b = rank_host[size_t(j)];
      const int la = leaf[size_t(leaf_of[size_t(i)])], lb = leaf[size_t(leaf_of[size_t(j)])];
      const std::vector<int> hops = la == lb ? std::vector<int>{a, la, b} : std::vector<int>{a, la, spine, lb, b};
      add_flow(a, b, hops, start_of(size_t(i)), false);
      flows_.back().wire_total *= share;
      flows_.back().to_send = flows_.back().wire_total;
    }
    hot_port_ = port_between(leaf[0], spine);
  } else {
    const int s0 = add_node("s0", true), r = add_node("r", false);
    link(s0, r);
    for (int i = 0; i < c_.senders; ++i) {
      const int h = add_node("h" + std::to_string(i), false);
      link(h, s0);
      double start = start_of(size_t(i));
      if (c_.scenario == RoceScenario::CONVERGE && i == 1) start += c_.start2;
      add_flow(h, r, {h, s0, r}, start, endless);
    }
    hot_port_ = port_between(s0, r);
  }
  // Switch accounting: headroom (three one-way BDPs) and a reserve per ingress port and lossless priority (a
  // SONiC switch reserves each lossless priority group's headroom; HPCC's MMU, with one priority, one per port).
  for (size_t n = 0; n < nodes_.size(); ++n)
    if (nodes_[n].is_switch) switches_[int(n)] = Switch{};
  const double classes = roce_classes(c_);
  for (auto& p : ports_)
    if (nodes_[size_t(p.to)].is_switch) {
      auto& s = switches_[p.to];
      s.total_headroom += headroom(p) * classes;
      s.total_reserve += double(c_.pfc.reserve) * classes;
    }
  for (size_t f = 0; f < flows_.size(); ++f)
    for (size_t h = 0; h < flows_[f].path.size(); ++h) {
      auto& p = ports_[size_t(flows_[f].path[h])];
      p.flows.push_back(int(f));
      p.hop_of.push_back(int(h));
    }
  for (auto& p : ports_) {
    p.next_k.assign(p.flows.size(), -1);
    for (size_t k = 0; k < p.flows.size(); ++k) {
      const auto& f = flows_[size_t(p.flows[k])];
      const size_t h = size_t(p.hop_of[k]);
      if (h + 1 >= f.path.size()) continue;
      const auto& next = ports_[size_t(f.path[h + 1])];
      for (size_t m = 0; m < next.flows.size(); ++m)
        if (next.flows[m] == p.flows[k]) p.next_k[k] = int(m);
    }
    if (p.flows.empty()) continue;  // a port no flow crosses (the reverse paths: CNPs and PAUSEs are events)
    p.line.resize(size_t(p.slots)); // only the ports flows cross get a delay line
    used_ports_.push_back(int(&p - ports_.data()));
    (nodes_[size_t(p.from)].is_switch ? switch_ports_ : host_ports_).push_back(int(&p - ports_.data()));
  }
  for (auto& f : flows_)
    f.mark_budget = -std::log(1 - uniform());
}

bool Fabric::admit(Port& port, int cls, double s)
{
  auto& sw = switches_[port.to];
  auto& in = port.lanes[size_t(cls)];
  const double thr = threshold(sw);
  // HPCC's admission, with or without PFC (without, nothing pauses the sender and the headroom overflows).
  if (s + in.hdrm_bytes > headroom(port) + EPS && s + shared_of(in) > thr + EPS) return false;
  // The chunk fills the port's reserve first, then the shared pool up to the threshold, then headroom (HPCC's MMU
  // admits packets whole; a fluid chunk is split where the packet boundary would fall on average).
  const double to_reserve = std::min(s, std::max(0.0, double(c_.pfc.reserve) - in.ingress_bytes));
  const double rest = s - to_reserve;
  const double to_shared = std::min(rest, std::max(0.0, thr - shared_of(in)));
  in.ingress_bytes += to_reserve + to_shared;
  sw.shared_used += to_shared;
  in.hdrm_bytes += rest - to_shared;
  return true;
}

void Fabric::release(Port& port, int cls, double s)
{
  auto& sw = switches_[port.to];
  auto& in = port.lanes[size_t(cls)];
  const double from_hdrm = std::min(in.hdrm_bytes, s);
  const double from_shared = std::min(s - from_hdrm, shared_of(in));
  in.hdrm_bytes -= from_hdrm;
  in.ingress_bytes = std::max(0.0, in.ingress_bytes - (s - from_hdrm));
  sw.shared_used = std::max(0.0, sw.shared_used - from_shared);
  if (in.hdrm_bytes < EPS) in.hdrm_bytes = 0;
}

void Fabric::maybe_pause(int in_port, int cls, double now)
{
  if (!c_.pfc.enabled) return;
  auto& port = ports_[size_t(in_port)];
  auto& in = port.lanes[size_t(cls)];
  if (in.pause_sent) return;
  // A lane holds bytes before it can pause (one without traffic in a full pool would never be resumed).
  if (in.hdrm_bytes > EPS || (in.ingress_bytes > EPS && shared_of(in) >= threshold(switches_[port.to]) - EPS)) {
    in.pause_sent = true;
    push_event(now + hop_time(port, c_.control_bytes), EvKind::PAUSE_AT_PORT, in_port, cls);
  }
}

void Fabric::maybe_resume(int in_port, int cls, double now)
{
  auto& port = ports_[size_t(in_port)];
  auto& in = port.lanes[size_t(cls)];
  if (!in.pause_sent || in.hdrm_bytes > EPS) return;
  const double shared = shared_of(in);
  // SAI: XON when the usage is at most max(XON_TH, the limit - XON_OFFSET_TH) and the headroom is empty.
  if (shared < EPS || (!c_.pfc.rows.empty() && shared <= xon_threshold(port) + EPS) ||
      shared + double(c_.pfc.resume_offset) <= threshold(switches_[port.to]) + EPS) {
    in.pause_sent = false;
    push_event(now + hop_time(port, c_.control_bytes), EvKind::RESUME_AT_PORT, in_port, cls);
  }
}

void Fabric::on_cnp(Flow& f, double now)
{
  f.alpha_cnp = f.dec_cnp = true;
  if (!f.first_cnp) return;
  f.alpha = 1;
  f.alpha_cnp = false;
  f.next_alpha = now + c_.dcqcn.t_alpha;
  f.next_dec = now + c_.dcqcn.t_dec + 1e-9; // after the alpha update of the same instant (HPCC rdma-hw.cc)
  f.rt = f.rc = c_.dcqcn.rate_on_first_cnp * f.rc;
  f.first_cnp = false;
}

void Fabric::increase(Flow& f)
{
  const auto& d = c_.dcqcn;
  const int F = d.fast_recovery;
  bool fast, hyper;
  if (d.byte_counter > 0) { // the DCQCN paper: both counters decide
    fast = std::max(f.stage, f.bc_stage) < F;
    hyper = std::min(f.stage, f.bc_stage) > F;
  } else { // the Mellanox variant: the timer's stage alone
    fast = f.stage < F;
    hyper = f.stage > F;
  }
  if (!fast) f.rt = std::min(c_.rate, f.rt + (hyper ? d.hai : d.ai));
  f.rc = (f.rc + f.rt) / 2;
}

void Fabric::run_timers(Flow& f, double until)
{
  const auto& d = c_.dcqcn;
  for (;;) {
    double t = std::numeric_limits<double>::infinity();
    int which = -1;
    if (f.next_alpha >= 0 && f.next_alpha < t) t = f.next_alpha, which = 0;
    if (f.next_dec >= 0 && f.next_dec < t) t = f.next_dec, which = 1;
    if (f.next_inc >= 0 && f.next_inc < t) t = f.next_inc, which = 2;
    if (which < 0 || t > until) return;
    if (which == 0) {
      f.alpha = (1 - d.g) * f.alpha + (f.alpha_cnp ? d.g : 0);
      f.alpha_cnp = false;
      f.next_alpha = t + d.t_alpha;
    } else if (which == 1) {
      f.next_dec = t + d.t_dec;
      if (f.dec_cnp) {
        // ClampTargetRate off (HPCC rdma-hw.cc): the target takes the current rate only if the rate has increased since
        // the last cut (a timer or a byte-counter stage); a cut right after a cut keeps the target.
        if (f.stage != 0 || f.bc_stage != 0) f.rt = f.rc;
        f.rc = std::max(d.min_rate, f.rc * (1 - f.alpha / 2));
        f.stage = 0;
        f.bc_stage = 0;
        f.bc_bytes = 0;
        f.dec_cnp = false;
        f.next_inc = t + d.t_inc;
      }
    } else {
      f.next_inc = t + d.t_inc;
      increase(f);
      ++f.stage;
    }
  }
}

Result<RoceResult> Fabric::run()
{
  const bool endless = c_.scenario == RoceScenario::LONGFLOWS;
  const double horizon = endless ? c_.duration : c_.stop;
  const uint64_t max_steps =
      endless ? uint64_t(std::max(1.0, std::round(horizon / dt_))) : uint64_t(std::ceil(horizon / dt_)) + 1;
  RoceResult out;
  out.hot_port = port_name(hot_port_);
  double queue_integral = 0, window_queue_integral = 0;
  size_t finished = 0;
  uint64_t step = 0;
  std::vector<double> host_offer(flows_.size(), 0);
  for (; step < max_steps; ++step) {
    const double t0 = double(step) * dt_, t1 = t0 + dt_;
    const size_t slot = size_t(step);
    // 1. Feedback that arrives during this step: marks at receivers (CNPs), CNPs at senders, PAUSE/RESUME at ports.
    while (!events_.empty() && events_.top().t < t1) {
      const Event e = events_.top();
      events_.pop();
      if (e.kind == EvKind::MARK_AT_RECEIVER) {
        auto& f = flows_[size_t(e.who)];
        if (c_.dcqcn.cnp_interval <= 0 || e.t - f.last_cnp >= c_.dcqcn.cnp_interval - 1e-12) {
          f.last_cnp = e.t;
          if (c_.dcqcn.cnp_interval > 0 && c_.dcqcn.enabled) cnps_ += 1;
          push_event(e.t + f.feedback_delay, EvKind::CNP_AT_SENDER, e.who);
        }
      } else if (e.kind == EvKind::CNP_AT_SENDER) {
        auto& f = flows_[size_t(e.who)];
        run_timers(f, e.t);
        if (c_.dcqcn.enabled && f.completion < 0) on_cnp(f, e.t);
      } else if (e.kind == EvKind::PAUSE_AT_PORT) {
        auto& lane = ports_[size_t(e.who)].lanes[size_t(e.cls)];
        lane.paused = true;
        ++lane.pause_frames;
      } else {
        ports_[size_t(e.who)].lanes[size_t(e.cls)].paused = false;
      }
    }
    for (auto& f : flows_)
      if (c_.dcqcn.enabled && f.completion < 0) run_timers(f, t1);
    // 2. Arrivals from every link's delay line: into the next switch's egress queue, or at the receiver.
    for (const int pi : used_ports_) {
      auto& p = ports_[size_t(pi)];
      auto& arriving = p.line[slot % size_t(p.slots)];
      if (arriving.empty()) continue;
      const bool to_switch = nodes_[size_t(p.to)].is_switch;
      for (auto [k, bytes] : arriving) {
        const int fi = p.flows[size_t(k)];
        auto& f = flows_[size_t(fi)];
        if (!to_switch) {
          const double before = f.delivered;
          f.delivered += bytes;
          if (endless && t1 > c_.warmup)
            f.window_bytes += bytes * std::clamp((std::min(t1, c_.duration) - c_.warmup) / dt_, 0.0, 1.0);
          if (!endless && f.completion < 0 && f.delivered >= f.wire_total * (1 - 1e-12) - 1e-3) {
            const double need = f.wire_total - before;
            f.completion = t0 + dt_ * std::clamp(need / bytes, 0.0, 1.0);
            ++finished;
          }
          continue;
        }
        if (!admit(p, f.cls, bytes)) {
          drops_ += bytes;
          continue;
        }
        auto& out_port = ports_[size_t(f.path[size_t(p.hop_of[size_t(k)]) + 1])];
        auto& lane = out_port.lanes[size_t(f.cls)];
        const int next_k = p.next_k[size_t(k)];
        if (!lane.fifo.empty() && lane.fifo.back().k == next_k && lane.fifo.back().step == step)
          lane.fifo.back().bytes += bytes;
        else
          lane.fifo.push_back({next_k, bytes, step});
        lane.queue += bytes;
        out_port.queue += bytes;
      }
      arriving.clear();
      if (to_switch)
        for (size_t cls = 0; cls < p.lanes.size(); ++cls)
          maybe_pause(pi, int(cls), t0);
    }
    // 3. Senders: each started flow offers its DCQCN rate; the NIC scales the offers down alike when they exceed its
    // line.
    for (const int pi : host_ports_) {
      auto& p = ports_[size_t(pi)];
      double want_total = 0;
      int active = 0;
      for (size_t k = 0; k < p.flows.size(); ++k) {
        auto& f = flows_[size_t(p.flows[k])];
        if (p.hop_of[k] != 0 || f.to_send <= EPS || t1 <= f.start || p.lanes[size_t(f.cls)].paused) {
          host_offer[size_t(p.flows[k])] = 0;
          continue;
        }
        const double live = std::min(1.0, (t1 - f.start) / dt_);
        const double rate = c_.dcqcn.enabled ? f.rc : c_.rate;
        const double want = std::min(f.to_send, rate / 8 * dt_ * live);
        host_offer[size_t(p.flows[k])] = want;
        want_total += want;
        ++active;
      }
      if (active == 0) continue;
      const double scale = want_total > p.bytes_per_step ? p.bytes_per_step / want_total : 1.0;
      auto& line = p.line[slot % size_t(p.slots)];
      for (size_t k = 0; k < p.flows.size(); ++k) {
        const int fi = p.flows[k];
        const double send = host_offer[size_t(fi)] * scale;
        if (send <= 0) continue;
        auto& f = flows_[size_t(fi)];
        f.to_send -= send;
        if (f.to_send < 1e-6) f.to_send = 0;
        line.emplace_back(int(k), send);
        if (c_.dcqcn.byte_counter > 0 && f.next_inc >= 0) { // counting from the first rate decrease
          f.bc_bytes += send;
          const double events = std::floor(f.bc_bytes / double(c_.dcqcn.byte_counter));
          f.bc_bytes -= events * double(c_.dcqcn.byte_counter);
          // Each event halves the gap to a target that grows by at most HAI: after 64 the rate is the target's.
          for (int e = 0; e < int(std::min(events, 64.0)); ++e) {
            increase(f);
            ++f.bc_stage;
          }
        }
      }
    }
    // 4. Switch egress ports serve their FIFO at line rate unless paused; ECN marks at dequeue.
    for (const int pi : switch_ports_) {
      auto& p = ports_[size_t(pi)];
      for (auto& lane : p.lanes)
        if (lane.paused) lane.paused_time += dt_;
      if (p.queue <= EPS) continue;
      // The line's step is shared by the lanes that are neither paused nor empty, round robin between them (HPCC's
      // qbb-net-device serves its queues in turn): equal shares, what one cannot use going to the others.
      shares_.assign(p.lanes.size(), 0.0);
      double left = p.bytes_per_step;
      for (int open = 0;;) {
        open = 0;
        for (size_t c = 0; c < p.lanes.size(); ++c)
          open += !p.lanes[c].paused && p.lanes[c].queue - shares_[c] > EPS ? 1 : 0;
        if (open == 0 || left <= EPS) break;
        const double each = left / open;
        for (size_t c = 0; c < p.lanes.size(); ++c) {
          auto& lane = p.lanes[c];
          if (lane.paused || lane.queue - shares_[c] <= EPS) continue;
          const double give = std::min(each, lane.queue - shares_[c]);
          shares_[c] += give;
          left -= give;
        }
      }
      auto& line = p.line[slot % size_t(p.slots)];
      for (size_t cls = 0; cls < p.lanes.size(); ++cls) {
        auto& lane = p.lanes[cls];
        // Serve the head of the FIFO: a FIFO delays every byte, and the marks it carries, by the queue ahead of it
        // (serving each flow in proportion to its backlog would feed congestion back a queueing delay too early).
        double budget = shares_[cls];
        double q_now = lane.queue;
        while (budget > EPS && !lane.fifo.empty()) {
          auto& head = lane.fifo.front();
          const double y = std::min(head.bytes, budget);
          const size_t k = size_t(head.k);
          head.bytes -= y;
          budget -= y;
          q_now -= y;
          if (head.bytes <= EPS) lane.fifo.pop_front();
          const int fi = p.flows[k];
          auto& f = flows_[size_t(fi)];
          line.emplace_back(int(k), y);
          const int in_port = f.path[size_t(p.hop_of[k]) - 1];
          release(ports_[size_t(in_port)], int(cls), y);
          maybe_resume(in_port, int(cls), t0);
          const double mark_p = mark_probability(std::max(0.0, q_now));
          if (mark_p > 0) {
            const double hazard = mark_p >= 1 ? std::numeric_limits<double>::infinity() : -std::log1p(-mark_p);
            const double frames = y / c_.frame_bytes;
            marked_ += frames * mark_p;
            if (c_.dcqcn.enabled && c_.dcqcn.cnp_interval <= 0) cnps_ += frames * mark_p;
            f.mark_budget -= frames * hazard;
            if (f.mark_budget <= 0) {
              f.mark_budget = -std::log(1 - uniform());
              push_event(t0 + f.to_receiver[size_t(p.hop_of[k])], EvKind::MARK_AT_RECEIVER, fi);
            }
          }
        }
        const double q_after = lane.fifo.empty() ? 0.0 : std::max(0.0, q_now);
        lane.queue = q_after < EPS ? 0 : q_after;
      }
      p.queue = 0;
      for (const auto& lane : p.lanes)
        p.queue += lane.queue;
    }
    for (const int pi : host_ports_)
      for (auto& lane : ports_[size_t(pi)].lanes)
        if (lane.paused) lane.paused_time += dt_;
    const auto& hot = ports_[size_t(hot_port_)];
    out.peak_queue = std::max(out.peak_queue, hot.queue);
    queue_integral += hot.queue * dt_;
    if (endless && t1 > c_.warmup)
      window_queue_integral += hot.queue * std::clamp(std::min(t1, c_.duration) - c_.warmup, 0.0, dt_);
    if (drops_ > 0) {
      return Error::at("", c_.pfc.enabled ? "buffer" : "pfc",
                       "a lossless run (the model has no loss recovery: RoCE's go-back-N is not modelled)",
                       "a switch dropped " + std::to_string(drops_) + " bytes by " + std::to_string(t1) + " s");
    }
    if (!endless && finished == flows_.size()) {
      ++step;
      break;
    }
  }
  out.steps = step;
  if (!endless && finished == flows_.size()) {
    // Every byte has left the switches: their accounting must be back where it started (as ns-3's reference checks).
    for (const auto& [node, sw] : switches_)
      if (sw.shared_used > 1)
        return Error::at("", "roce model", "a switch's shared pool empty once every flow finished",
                         nodes_[size_t(node)].name + " still counting " + std::to_string(sw.shared_used) + " bytes");
    for (const int pi : used_ports_)
      for (const auto& lane : ports_[size_t(pi)].lanes)
        if (lane.queue > 1 || lane.ingress_bytes > 1 || lane.hdrm_bytes > 1)
          return Error::at("", "roce model", "empty queues and ingress counters once every flow finished",
                           port_name(pi) + " holding " +
                               std::to_string(lane.queue + lane.ingress_bytes + lane.hdrm_bytes) + " bytes");
  }
  if (!endless && finished < flows_.size())
    return Error::at("", "stop", "every flow finished within " + std::to_string(c_.stop) + " s of simulated time",
                     std::to_string(flows_.size() - finished) + " of " + std::to_string(flows_.size()) +
                         " flows unfinished");
  const double ratio = double(c_.payload_bytes) / c_.frame_bytes;
  double window_sum = 0;
  for (size_t i = 0; i < flows_.size(); ++i) {
    const auto& f = flows_[i];
    RoceFlowResult fr;
    fr.src = nodes_[size_t(f.src)].name;
    fr.dst = nodes_[size_t(f.dst)].name;
    fr.bytes = uint64_t(std::llround((endless ? f.delivered : f.wire_total) * ratio));
    fr.start = f.start;
    fr.final_rate = c_.dcqcn.enabled ? f.rc : c_.rate;
    if (!endless) {
      fr.completion = f.completion;
      fr.mean_bps = double(fr.bytes) * 8 / std::max(1e-12, f.completion - f.start);
    } else {
      fr.window_bps = f.window_bytes * ratio * 8 / (c_.duration - c_.warmup);
      window_sum += fr.window_bps;
    }
    out.flows.push_back(fr);
  }
  if (!endless) {
    summarize(out);
    out.mean_queue = queue_integral / out.completion;
  } else {
    out.completion = c_.duration;
    out.first = c_.duration;
    out.window_bps = window_sum / double(flows_.size());
    out.mean_queue = window_queue_integral / (c_.duration - c_.warmup);
  }
  out.marked = marked_;
  out.cnps = cnps_;
  out.drops = drops_;
  for (const auto& p : ports_)
    for (size_t cls = 0; cls < p.lanes.size(); ++cls)
      if (p.lanes[cls].pause_frames > 0)
        out.pauses.push_back({port_name(int(&p - ports_.data())), p.lanes[cls].pause_frames, p.lanes[cls].paused_time,
                              cls == 0 ? 0 : c_.victim_priority});
  return out;
}

void Fabric::summarize(RoceResult& r) const
{
  double first = std::numeric_limits<double>::infinity(), last = 0;
  for (const auto& f : r.flows) {
    first = std::min(first, f.completion);
    last = std::max(last, f.completion);
  }
  r.completion = last;
  r.first = first;
  r.goodput_bps = double(c_.size) * double(r.flows.size()) * 8 / last;
  if (c_.scenario == RoceScenario::ALLREDUCE) {
    const double n = double(r.flows.size());
    r.algbw_bps = double(c_.size) * 8 / last;
    r.busbw_bps = r.algbw_bps * 2 * (n - 1) / n;
    r.goodput_bps = r.busbw_bps;
  }
  if (victim_ >= 0) {
    r.victim_completion = r.flows[size_t(victim_)].completion;
    r.victim_bps = r.flows[size_t(victim_)].mean_bps;
  }
}

RoceResult Fabric::max_min() const
{
  const double ratio = double(c_.payload_bytes) / c_.frame_bytes;
  const size_t nf = flows_.size();
  std::vector<double> left(nf), done(nf, -1);
  for (size_t i = 0; i < nf; ++i)
    left[i] = flows_[i].wire_total * ratio;
  RoceResult r;
  r.hot_port = port_name(hot_port_);
  const bool endless = c_.scenario == RoceScenario::LONGFLOWS;
  double now = 0;
  for (size_t guard = 0; guard < 4 * nf + 4; ++guard) {
    std::vector<size_t> active;
    double next_start = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < nf; ++i) {
      if (done[i] >= 0) continue;
      if (flows_[i].start <= now + 1e-15 || endless) // endless flows: the steady state, all of them running
        active.push_back(i);
      else
        next_start = std::min(next_start, flows_[i].start);
    }
    if (active.empty()) {
      if (!std::isfinite(next_start)) break;
      now = next_start;
      continue;
    }
    // Water-filling: raise every unfrozen flow alike until a port fills; freeze its flows; repeat.
    std::vector<double> rate(nf, 0), cap(ports_.size());
    for (size_t p = 0; p < ports_.size(); ++p)
      cap[p] = ports_[p].rate / 8 * ratio;
    std::vector<bool> frozen(nf, false);
    size_t unfrozen = active.size();
    while (unfrozen > 0) {
      std::vector<int> users(ports_.size(), 0);
      for (size_t i : active)
        if (!frozen[i])
          for (int p : flows_[i].path)
            ++users[size_t(p)];
      double inc = std::numeric_limits<double>::infinity();
      for (size_t p = 0; p < ports_.size(); ++p)
        if (users[p] > 0) inc = std::min(inc, cap[p] / users[p]);
      for (size_t i : active)
        if (!frozen[i]) rate[i] += inc;
      for (size_t p = 0; p < ports_.size(); ++p)
        cap[p] -= inc * users[p];
      for (size_t i : active) {
        if (frozen[i]) continue;
        for (int p : flows_[i].path)
          if (cap[size_t(p)] <= ports_[size_t(p)].rate * 1e-12) {
            frozen[i] = true;
            --unfrozen;
            break;
          }
      }
    }
    if (endless) { // the rates are the answer
      for (size_t i = 0; i < nf; ++i) {
        RoceFlowResult fr;
        fr.src = nodes_[size_t(flows_[i].src)].name;
        fr.dst = nodes_[size_t(flows_[i].dst)].name;
        fr.window_bps = rate[i] * 8;
        fr.final_rate = fr.window_bps;
        r.window_bps += fr.window_bps / double(nf);
        r.flows.push_back(fr);
      }
      r.completion = r.first = c_.duration;
      return r;
    }
    double dt = next_start - now;
    for (size_t i : active)
      dt = std::min(dt, left[i] / rate[i]);
    for (size_t i : active) {
      left[i] -= rate[i] * dt;
      if (left[i] <= 1e-9 * flows_[i].wire_total) done[i] = now + dt;
    }
    now += dt;
  }
  for (size_t i = 0; i < nf; ++i) {
    const auto& f = flows_[i];
    RoceFlowResult fr;
    fr.src = nodes_[size_t(f.src)].name;
    fr.dst = nodes_[size_t(f.dst)].name;
    fr.bytes = uint64_t(std::llround(f.wire_total * ratio));
    fr.start = f.start;
    fr.completion = done[i] + f.to_receiver[0]; // the last byte's trip: each hop's propagation and one frame
    fr.mean_bps = double(fr.bytes) * 8 / (fr.completion - fr.start);
    fr.final_rate = 0;
    r.flows.push_back(fr);
  }
  summarize(r);
  return r;
}

} // namespace

Result<RoceResult> simulate_roce(const RoceConfig& c)
{
  if (auto s = check_roce(c); !s) return s.error();
  Fabric fabric(c);
  return fabric.run();
}

Status check_roce_result(const RoceConfig& c, const RoceResult& r, const std::string& model)
{
  const double payload_line = c.rate * c.payload_bytes / c.frame_bytes;
  auto wrong = [&](const std::string& what) -> Status {
    return Error::at("", model, "a result that can be right", what);
  };
  if (!(std::isfinite(r.completion) && r.completion > 0)) return wrong("completion " + std::to_string(r.completion));
  for (const auto& f : r.flows) {
    const double rate = c.scenario == RoceScenario::LONGFLOWS ? f.window_bps : f.mean_bps;
    if (!(std::isfinite(rate) && rate > 0))
      return wrong("flow " + f.src + "->" + f.dst + " moved nothing (rate " + std::to_string(rate) + ")");
    if (rate > payload_line * (1 + 1e-6))
      return wrong("flow " + f.src + "->" + f.dst + " at " + std::to_string(rate / 1e9) +
                   " Gb/s, above the line's payload rate " + std::to_string(payload_line / 1e9));
  }
  if ((c.scenario == RoceScenario::INCAST || c.scenario == RoceScenario::CONVERGE) &&
      r.goodput_bps > payload_line * (1 + 1e-6))
    return wrong("goodput " + std::to_string(r.goodput_bps / 1e9) + " Gb/s above the hot port's payload rate");
  if (!(std::isfinite(r.mean_queue) && r.mean_queue >= 0 && r.peak_queue >= r.mean_queue - 1e-6))
    return wrong("queue figures (mean " + std::to_string(r.mean_queue) + ", peak " + std::to_string(r.peak_queue) +
                 ")");
  return {};
}

Result<RoceResult> max_min_roce(const RoceConfig& c)
{
  if (auto s = check_roce(c); !s) return s.error();
  Fabric fabric(c);
  return fabric.max_min();
}

Result<RoceResult> run_roce_model(const std::string& model, const RoceConfig& c)
{
  auto r = model == "flow" ? max_min_roce(c) : simulate_roce(c);
  if (!r.ok()) return r.error();
  if (auto st = check_roce_result(c, r.value(), model); !st.ok()) return st.error();
  return r;
}

double RoceResult::pause_frames() const
{
  double n = 0;
  for (const auto& p : pauses)
    n += double(p.frames);
  return n;
}

double RoceResult::longest_pause() const
{
  double t = 0;
  for (const auto& p : pauses)
    t = std::max(t, p.paused);
  return t;
}

} // namespace tp::models
