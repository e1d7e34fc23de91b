// Packet-level reference for RoCEv2 fabrics with PFC and DCQCN: an ns-3 program (Debian's libns3-dev 3.37) written
// independently of tensorpath's code, so that the flow-level congestion models (models/congestion/) can be checked
// against it. Prints one JSON object per run on stdout; errors go to stderr with a non-zero exit.
//
// Every link is an ns-3 PointToPointNetDevice pair on a PointToPointChannel (full duplex, rate R, delay d). No
// Internet stack: frames carry this file's own header (RoceHeader), are handed to the device one at a time by a
// per-port scheduler (control frames strictly before data, data FIFO, data held while the port is PFC-paused) and are
// received through Node::RegisterProtocolHandler. A data frame is 1062 bytes on the wire (1000 payload + 62 RoCEv2
// headers); CNP and PAUSE/RESUME frames are 64 bytes; PointToPointNetDevice adds its 2-byte PPP header, so the packet
// handed to it is 2 bytes short of the wire size. Preamble and inter-frame gap are not modelled.
//
// Switches are output queued with one shared buffer, admitted and PFC-paused per ingress port as the HPCC repository's
// switch MMU does (alibaba-edu/High-Precision-Congestion-Control, switch-mmu.cc / switch-node.cc): per-port reserve,
// headroom and a dynamic shared threshold (alpha = 1/8), ECN marked at dequeue (RED-like Kmin/Kmax/Pmax on the bytes
// left in the egress FIFO). Senders run DCQCN as that repository's "Mellanox" reaction point (rdma-hw.cc, cc_mode 1):
// alpha, rate-decrease and rate-increase timers, pacing at the current rate. The receiver returns one CNP per marked
// packet (or at most one per cnp_interval and flow). No retransmission: with PFC off a dropped frame leaves its flow
// unfinished, which the output reports.
//
// Scenarios: incast (N senders -> r through s0), victim (PFC head-of-line blocking over s1 -> s2), converge (two
// flows, the second starting later) and longflows (infinite flows; rates and queue averaged over a time window).
// Choices the brief left open: pacing uses the rate at the moment a frame is sent (a later rate change does not move
// the next send time); the optional byte counter counts wire bytes and runs only once the increase timer has been
// started by a first rate decrease; with it on, a decrease sets Rt = Rc when either increase counter is non-zero;
// with --dcqcn=0 switches still mark (counted in "marked") but receivers send no CNPs.
// Usage: roce_reference --scenario=incast|victim|converge|longflows [--name=value ...]; --help lists the flags.
// ROCE_TRACE_RATE=1 in the environment prints every DCQCN rate event on stderr (debugging).
#include <ns3/core-module.h>
#include <ns3/network-module.h>
#include <ns3/point-to-point-channel.h>
#include <ns3/point-to-point-net-device.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

using namespace ns3;

namespace {

constexpr uint32_t kPayload = 1000;      ///< payload bytes of a full data frame
constexpr uint32_t kDataOverhead = 62;   ///< Eth 14 + FCS 4 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4
constexpr uint32_t kControlWire = 64;    ///< CNP and PFC PAUSE/RESUME frames on the wire
constexpr uint32_t kPppHeader = 2;       ///< what PointToPointNetDevice prepends
constexpr uint16_t kProtocol = 0x0800;
constexpr int64_t kReserve = 4096;       ///< per ingress port (HPCC switch-mmu)
constexpr int64_t kResumeOffset = 3072;  ///< HPCC switch-mmu
constexpr int kThresholdShift = 3;       ///< dynamic threshold alpha = 1/8
constexpr uint64_t kInfinite = std::numeric_limits<uint64_t>::max();

enum class Kind : uint8_t { Data = 0, Cnp = 1, Pause = 2, Resume = 3 };

/// What travels through the fabric. A switch keeps these (not ns-3 packets) in its FIFOs and builds a fresh packet
/// carrying a RoceHeader when it hands the frame to a device.
struct Frame {
  Kind kind = Kind::Data;
  bool ce = false;
  uint32_t flow = 0;
  uint32_t src = 0, dst = 0; ///< node ids
  uint32_t seq = 0;          ///< frame index within the flow
  uint32_t payload = 0;      ///< payload bytes (data only)
  uint32_t wire = 0;         ///< bytes on the wire
  uint32_t ingress = 0;      ///< switch only: the local port the frame came in through
};

/// The header every frame carries: type, ECN-CE, flow id, source and destination node, sequence, payload length.
class RoceHeader : public Header {
public:
  Frame f;

  static TypeId GetTypeId()
  {
    static TypeId tid = TypeId("tensorpath::RoceHeader").SetParent<Header>().AddConstructor<RoceHeader>();
    return tid;
  }
  TypeId GetInstanceTypeId() const override { return GetTypeId(); }
  uint32_t GetSerializedSize() const override { return 20; }
  void Serialize(Buffer::Iterator i) const override
  {
    i.WriteU8(uint8_t(f.kind));
    i.WriteU8(f.ce ? 1 : 0);
    i.WriteHtonU32(f.flow);
    i.WriteHtonU32(f.src);
    i.WriteHtonU32(f.dst);
    i.WriteHtonU32(f.seq);
    i.WriteHtonU16(uint16_t(f.payload));
  }
  uint32_t Deserialize(Buffer::Iterator i) override
  {
    f.kind = Kind(i.ReadU8());
    f.ce = i.ReadU8() != 0;
    f.flow = i.ReadNtohU32();
    f.src = i.ReadNtohU32();
    f.dst = i.ReadNtohU32();
    f.seq = i.ReadNtohU32();
    f.payload = i.ReadNtohU16();
    return GetSerializedSize();
  }
  void Print(std::ostream& os) const override
  {
    os << "kind=" << int(f.kind) << " ce=" << f.ce << " flow=" << f.flow << " " << f.src << "->" << f.dst
       << " seq=" << f.seq << " payload=" << f.payload;
  }
};

[[noreturn]] void fail(const std::string& what)
{
  std::fprintf(stderr, "roce_reference: %s\n", what.c_str());
  std::exit(1);
}

// ---------------------------------------------------------------------------------------------------------------
// Parameters

struct Params {
  std::string scenario = "incast";
  uint32_t senders = 8;
  uint32_t local = 0;
  uint64_t size = 1000000;
  double rate_gbps = 100;
  double delay_us = 1;
  int64_t buffer = 32000000;
  bool dcqcn = true, ecn = true, pfc = true;
  std::string profile = "hpcc";
  double kmin = 400000, kmax = 1600000, pmax = 0.2;
  double t_alpha_us = 1, t_dec_us = 4, t_inc_us = 300;
  double g = 1.0 / 256;
  uint32_t fast_recovery = 1;
  double ai_mbps = 20, hai_mbps = 200, min_rate_gbps = 1;
  double rate_on_first_cnp = 1.0;
  double cnp_interval_us = 0;
  uint64_t byte_counter = 0;
  double start2 = 0.0005, duration = 0.05, warmup = 0.02;
  uint64_t seed = 1;
  double jitter_ns = 0;
  double stop = 1;
};

void apply_profile(Params& p)
{
  if (p.profile == "hpcc") {
    p.t_alpha_us = 1, p.t_dec_us = 4, p.t_inc_us = 300, p.g = 1.0 / 256, p.fast_recovery = 1;
    p.ai_mbps = 20, p.hai_mbps = 200, p.min_rate_gbps = 1, p.rate_on_first_cnp = 1.0, p.cnp_interval_us = 0;
    p.byte_counter = 0, p.kmin = 400000, p.kmax = 1600000, p.pmax = 0.2;
  } else { // paper: DCQCN SIGCOMM'15 / Zhu et al. CoNEXT'16 at 40 Gb/s
    p.t_alpha_us = 55, p.t_dec_us = 50, p.t_inc_us = 55, p.g = 1.0 / 256, p.fast_recovery = 5;
    p.ai_mbps = 40, p.hai_mbps = 400, p.min_rate_gbps = 1, p.rate_on_first_cnp = 1.0, p.cnp_interval_us = 50;
    p.byte_counter = 10000000, p.kmin = 5000, p.kmax = 200000, p.pmax = 0.01;
  }
}

[[noreturn]] void bad_flag(const std::string& name, const std::string& why)
{
  std::fprintf(stderr, "roce_reference: --%s: %s (see --help)\n", name.c_str(), why.c_str());
  std::exit(2);
}

double parse_double(const std::string& name, const std::string& v)
{
  // Accepts a decimal number or a fraction a/b (e.g. --g=1/256).
  const auto slash = v.find('/');
  if (slash != std::string::npos)
    return parse_double(name, v.substr(0, slash)) / parse_double(name, v.substr(slash + 1));
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(x)) bad_flag(name, "'" + v + "' is not a number");
  return x;
}

uint64_t parse_uint(const std::string& name, const std::string& v)
{
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos)
    bad_flag(name, "'" + v + "' is not a non-negative integer");
  errno = 0;
  const unsigned long long x = std::strtoull(v.c_str(), nullptr, 10);
  if (errno) bad_flag(name, "'" + v + "' is out of range");
  return x;
}

bool parse_bool(const std::string& name, const std::string& v)
{
  if (v == "0") return false;
  if (v == "1") return true;
  bad_flag(name, "'" + v + "' must be 0 or 1");
}

const char* kUsage =
    "roce_reference: packet-level RoCEv2 + PFC + DCQCN reference on ns-3. One JSON object on stdout.\n"
    "  --scenario=incast|victim|converge|longflows   --senders=N (8)   --local=M (victim, 0)\n"
    "  --size=BYTES (1000000)  --rate=GBPS (100)  --delay=US (1)  --buffer=BYTES (32000000)\n"
    "  --dcqcn=0|1 (1)  --ecn=0|1 (1)  --pfc=0|1 (1)  --profile=hpcc|paper (hpcc)\n"
    "  --kmin=B --kmax=B --pmax=P  --t-alpha=US --t-dec=US --t-inc=US --g=G (or a/b) --fast-recovery=F\n"
    "  --ai=MBPS --hai=MBPS --min-rate=GBPS --rate-on-first-cnp=X --cnp-interval=US --byte-counter=BYTES\n"
    "  --start2=S (converge, 0.0005)  --duration=S --warmup=S (longflows, 0.05 / 0.02)\n"
    "  --seed=N (1)  --jitter=NS (0)  --stop=S (hard stop, 1)\n";

Params parse_args(int argc, char** argv)
{
  Params p;
  std::vector<std::pair<std::string, std::string>> kv;
  for (int a = 1; a < argc; ++a) {
    std::string s = argv[a];
    if (s == "--help" || s == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (s.rfind("--", 0) != 0 || s.find('=') == std::string::npos) {
      std::fprintf(stderr, "roce_reference: '%s': arguments are --name=value (see --help)\n", s.c_str());
      std::exit(2);
    }
    const auto eq = s.find('=');
    kv.emplace_back(s.substr(2, eq - 2), s.substr(eq + 1));
  }
  // The profile first: it sets the defaults that the other flags then override, in any order.
  for (auto& [k, v] : kv)
    if (k == "profile") {
      if (v != "hpcc" && v != "paper") bad_flag(k, "'" + v + "' must be hpcc or paper");
      p.profile = v;
    }
  apply_profile(p);
  for (auto& [k, v] : kv) {
    if (k == "profile") continue;
    else if (k == "scenario") {
      if (v != "incast" && v != "victim" && v != "converge" && v != "longflows")
        bad_flag(k, "'" + v + "' must be incast, victim, converge or longflows");
      p.scenario = v;
    } else if (k == "senders") {
      const uint64_t n = parse_uint(k, v);
      if (n < 1 || n > 4096) bad_flag(k, "must be in 1..4096");
      p.senders = uint32_t(n);
    } else if (k == "local") {
      const uint64_t n = parse_uint(k, v);
      if (n > 4096) bad_flag(k, "must be in 0..4096");
      p.local = uint32_t(n);
    } else if (k == "size") {
      p.size = parse_uint(k, v);
      if (p.size < 1 || p.size > (uint64_t(1) << 42)) bad_flag(k, "must be in 1..2^42 bytes");
    } else if (k == "rate") {
      p.rate_gbps = parse_double(k, v);
      if (!(p.rate_gbps > 0) || p.rate_gbps > 10000) bad_flag(k, "must be in (0, 10000] Gb/s");
    } else if (k == "delay") {
      p.delay_us = parse_double(k, v);
      if (!(p.delay_us >= 0.001) || p.delay_us > 1e6) bad_flag(k, "must be in [0.001, 1e6] us");
    } else if (k == "buffer") {
      const uint64_t b = parse_uint(k, v);
      if (b < 10000 || b > (uint64_t(1) << 40)) bad_flag(k, "must be in 10000..2^40 bytes");
      p.buffer = int64_t(b);
    } else if (k == "dcqcn") p.dcqcn = parse_bool(k, v);
    else if (k == "ecn") p.ecn = parse_bool(k, v);
    else if (k == "pfc") p.pfc = parse_bool(k, v);
    else if (k == "kmin") p.kmin = parse_double(k, v);
    else if (k == "kmax") p.kmax = parse_double(k, v);
    else if (k == "pmax") p.pmax = parse_double(k, v);
    else if (k == "t-alpha") p.t_alpha_us = parse_double(k, v);
    else if (k == "t-dec") p.t_dec_us = parse_double(k, v);
    else if (k == "t-inc") p.t_inc_us = parse_double(k, v);
    else if (k == "g") p.g = parse_double(k, v);
    else if (k == "fast-recovery") {
      const uint64_t f = parse_uint(k, v);
      if (f > 1000000) bad_flag(k, "must be in 0..1000000");
      p.fast_recovery = uint32_t(f);
    } else if (k == "ai") p.ai_mbps = parse_double(k, v);
    else if (k == "hai") p.hai_mbps = parse_double(k, v);
    else if (k == "min-rate") p.min_rate_gbps = parse_double(k, v);
    else if (k == "rate-on-first-cnp") p.rate_on_first_cnp = parse_double(k, v);
    else if (k == "cnp-interval") p.cnp_interval_us = parse_double(k, v);
    else if (k == "byte-counter") p.byte_counter = parse_uint(k, v);
    else if (k == "start2") p.start2 = parse_double(k, v);
    else if (k == "duration") p.duration = parse_double(k, v);
    else if (k == "warmup") p.warmup = parse_double(k, v);
    else if (k == "seed") p.seed = parse_uint(k, v);
    else if (k == "jitter") p.jitter_ns = parse_double(k, v);
    else if (k == "stop") p.stop = parse_double(k, v);
    else {
      std::fprintf(stderr, "roce_reference: unknown flag --%s (see --help)\n", k.c_str());
      std::exit(2);
    }
  }
  if (!(p.kmin >= 0)) bad_flag("kmin", "must be >= 0");
  if (!(p.kmax >= p.kmin)) bad_flag("kmax", "must be >= kmin");
  if (!(p.pmax >= 0 && p.pmax <= 1)) bad_flag("pmax", "must be in [0, 1]");
  if (!(p.t_alpha_us >= 0.001)) bad_flag("t-alpha", "must be >= 0.001 us");
  if (!(p.t_dec_us >= 0.001)) bad_flag("t-dec", "must be >= 0.001 us");
  if (!(p.t_inc_us >= 0.001)) bad_flag("t-inc", "must be >= 0.001 us");
  if (!(p.g > 0 && p.g <= 1)) bad_flag("g", "must be in (0, 1]");
  if (!(p.ai_mbps >= 0)) bad_flag("ai", "must be >= 0");
  if (!(p.hai_mbps >= 0)) bad_flag("hai", "must be >= 0");
  if (!(p.min_rate_gbps > 0 && p.min_rate_gbps <= p.rate_gbps)) bad_flag("min-rate", "must be in (0, rate]");
  if (!(p.rate_on_first_cnp > 0 && p.rate_on_first_cnp <= 1)) bad_flag("rate-on-first-cnp", "must be in (0, 1]");
  if (!(p.cnp_interval_us >= 0)) bad_flag("cnp-interval", "must be >= 0");
  if (!(p.start2 >= 0 && p.start2 < 1e3)) bad_flag("start2", "must be in [0, 1000) s");
  if (!(p.jitter_ns >= 0 && p.jitter_ns <= 1e9)) bad_flag("jitter", "must be in [0, 1e9] ns");
  if (!(p.stop > 0 && p.stop <= 1e4)) bad_flag("stop", "must be in (0, 1e4] s");
  if (p.scenario == "longflows") {
    if (!(p.duration > 0 && p.duration <= 1e3)) bad_flag("duration", "must be in (0, 1000] s");
    if (!(p.warmup >= 0 && p.warmup < p.duration)) bad_flag("warmup", "must be in [0, duration)");
  }
  if (p.scenario == "converge" && p.start2 >= p.stop) bad_flag("start2", "must be before --stop");
  if (p.local > 0 && p.scenario != "victim") bad_flag("local", "only the victim scenario has local senders");
  return p;
}

// ---------------------------------------------------------------------------------------------------------------
// The fabric

/// Time-weighted statistics of a FIFO's data bytes inside a window [from, to].
struct QueueStat {
  double from = 0, to = std::numeric_limits<double>::infinity();
  double last_t = 0;
  int64_t last_q = 0;
  double area = 0;
  int64_t peak = 0;
  void update(double now, int64_t q)
  {
    const double a = std::max(last_t, from), b = std::min(now, to);
    // last_q held over [last_t, now]; a value that lasted no time (a frame that enters an idle port's FIFO and
    // leaves it at the same instant) does not count as queue.
    if (b > a) {
      area += double(last_q) * (b - a);
      peak = std::max(peak, last_q);
    }
    last_t = now;
    last_q = q;
  }
  double mean(double end) const
  {
    const double a = from, b = std::min(end, to);
    return b > a ? area / (b - a) : 0;
  }
};

struct Port {
  uint32_t node = 0, peer = 0; ///< owner and the node at the other end
  uint32_t peer_port = 0;      ///< the port id at the other end
  Ptr<PointToPointNetDevice> dev;
  std::deque<Frame> ctrl; ///< CNP / PAUSE / RESUME: strictly before data
  std::deque<Frame> data; ///< switch egress FIFO
  int64_t data_bytes = 0;
  bool busy = false;
  // Egress side: paused by the node downstream.
  bool paused = false;
  double paused_since = 0;
  uint64_t pause_frames = 0;
  double paused_s = 0;
  // Ingress side (switch only): MMU counters for the bytes that came in through this port.
  int64_t ingress_bytes = 0, hdrm_bytes = 0;
  bool pause_sent = false;
  QueueStat* stat = nullptr; ///< the hot port only
  EventId wake;              ///< host: next paced send
};

struct SimNode {
  std::string name;
  bool is_switch = false;
  std::vector<uint32_t> ports; ///< port ids
  std::vector<int32_t> route;  ///< switch: destination node -> port id
  int64_t shared_used = 0;
  int64_t total_headroom = 0, total_reserve = 0;
  std::vector<uint32_t> flows_out; ///< host: flows it sends
  size_t rr = 0;
};

struct Flow {
  uint32_t id = 0, src = 0, dst = 0;
  uint64_t size = 0; ///< kInfinite for longflows
  double start = 0;
  bool started = false;
  uint64_t sent = 0, received = 0;
  uint32_t next_seq = 0, expect_seq = 0;
  double done = -1;
  Time next_avail;
  // DCQCN reaction point
  double rc = 0, rt = 0, alpha = 1;
  bool alpha_cnp = false, dec_cnp = false, first_cnp = true, increasing = false;
  uint32_t stage = 0, bc_stage = 0;
  uint64_t bc_bytes = 0;
  EventId alpha_ev, dec_ev, inc_ev;
  // DCQCN notification point (at the receiver)
  double last_cnp = -1;
  uint64_t window_received0 = 0, window_received1 = 0;
};

class Fabric {
public:
  explicit Fabric(const Params& p)
      : P(p), line_bps(p.rate_gbps * 1e9), rate(uint64_t(std::llround(p.rate_gbps * 1e9))),
        headroom(int64_t(std::llround(3.0 * p.rate_gbps * 1e9 / 8 * p.delay_us * 1e-6))), jitter_rng(p.seed),
        ecn_rng(p.seed ^ 0x9e3779b97f4a7c15ULL)
  {
  }

  const Params& P;
  double line_bps;
  DataRate rate;
  int64_t headroom;
  std::mt19937_64 jitter_rng, ecn_rng;
  std::vector<SimNode> nodes;
  std::vector<Port> ports;
  std::vector<Flow> flows;
  std::vector<Ptr<Node>> ns_nodes;
  std::unordered_map<const NetDevice*, uint32_t> port_of_dev;
  uint64_t marked = 0, cnps = 0, drops = 0, drop_bytes = 0;
  uint32_t finished = 0, finite_flows = 0;
  QueueStat hot, trunk; ///< the hot port's FIFO; victim: also s1->s2's
  int32_t hot_port = -1, trunk_port = -1;
  bool trace = std::getenv("ROCE_TRACE_RATE") != nullptr; ///< debugging: every DCQCN rate event on stderr

  void trace_rate(const Flow& f, const char* what) const
  {
    if (trace)
      std::fprintf(stderr, "%.9f flow %u %s rc %.6g rt %.6g alpha %.6g stage %u bc_stage %u\n",
                   Simulator::Now().GetSeconds(), f.id, what, f.rc / 1e9, f.rt / 1e9, f.alpha, f.stage, f.bc_stage);
  }
  double last_rx = 0; ///< when the last data frame reached a host

  uint32_t add_node(const std::string& name, bool is_switch)
  {
    SimNode n;
    n.name = name;
    n.is_switch = is_switch;
    nodes.push_back(n);
    ns_nodes.push_back(CreateObject<Node>());
    return uint32_t(nodes.size() - 1);
  }

  uint32_t make_port(uint32_t node, uint32_t peer)
  {
    Port pt;
    pt.node = node;
    pt.peer = peer;
    pt.dev = CreateObject<PointToPointNetDevice>();
    pt.dev->SetAddress(Mac48Address::Allocate());
    pt.dev->SetDataRate(rate);
    Ptr<DropTailQueue<Packet>> q = CreateObject<DropTailQueue<Packet>>();
    q->SetMaxSize(QueueSize("100000p")); // fed one frame at a time: never more than one waits here
    pt.dev->SetQueue(q);
    ns_nodes[node]->AddDevice(pt.dev);
    ports.push_back(pt);
    const uint32_t id = uint32_t(ports.size() - 1);
    port_of_dev[PeekPointer(pt.dev)] = id;
    nodes[node].ports.push_back(id);
    ns_nodes[node]->RegisterProtocolHandler(MakeCallback(&Fabric::receive, this), kProtocol, pt.dev, false);
    return id;
  }

  void link(uint32_t a, uint32_t b)
  {
    const uint32_t pa = make_port(a, b), pb = make_port(b, a);
    ports[pa].peer_port = pb;
    ports[pb].peer_port = pa;
    Ptr<PointToPointChannel> ch = CreateObject<PointToPointChannel>();
    ch->SetAttribute("Delay", TimeValue(PicoSeconds(std::llround(P.delay_us * 1e6))));
    ports[pa].dev->Attach(ch);
    ports[pb].dev->Attach(ch);
  }

  /// Routes (every switch: destination node -> port) by breadth-first search; the topologies are trees.
  void build_routes()
  {
    const size_t n = nodes.size();
    for (uint32_t s = 0; s < n; ++s) {
      if (!nodes[s].is_switch) continue;
      auto& sw = nodes[s];
      sw.route.assign(n, -1);
      sw.total_headroom = headroom * int64_t(sw.ports.size());
      sw.total_reserve = kReserve * int64_t(sw.ports.size());
      for (uint32_t first : sw.ports) {
        std::vector<uint32_t> stack{ports[first].peer};
        std::vector<bool> seen(n, false);
        seen[s] = true;
        while (!stack.empty()) {
          const uint32_t x = stack.back();
          stack.pop_back();
          if (seen[x]) continue;
          seen[x] = true;
          sw.route[x] = int32_t(first);
          for (uint32_t q : nodes[x].ports) stack.push_back(ports[q].peer);
        }
      }
    }
  }

  uint32_t port_between(uint32_t a, uint32_t b) const
  {
    for (uint32_t q : nodes[a].ports)
      if (ports[q].peer == b) return q;
    fail("no link between " + nodes[a].name + " and " + nodes[b].name);
  }

  std::string port_name(uint32_t q) const { return nodes[ports[q].node].name + "->" + nodes[ports[q].peer].name; }

  void add_flow(uint32_t src, uint32_t dst, uint64_t size, double start)
  {
    Flow f;
    f.id = uint32_t(flows.size());
    f.src = src;
    f.dst = dst;
    f.size = size;
    f.start = start;
    f.rc = f.rt = line_bps;
    if (size != kInfinite) ++finite_flows;
    nodes[src].flows_out.push_back(f.id);
    flows.push_back(f);
  }

  void schedule_starts()
  {
    for (auto& f : flows) {
      const uint32_t id = f.id;
      Simulator::Schedule(Seconds(f.start), [this, id] {
        flows[id].started = true;
        flows[id].next_avail = Simulator::Now();
        try_send(nodes[flows[id].src].ports[0]);
      });
    }
  }

  // ---- ports -------------------------------------------------------------------------------------------------

  void set_queue(Port& pt, int64_t delta)
  {
    pt.data_bytes += delta;
    if (pt.data_bytes < 0) fail("negative egress queue at " + port_name(uint32_t(&pt - ports.data())));
    if (pt.stat) pt.stat->update(Simulator::Now().GetSeconds(), pt.data_bytes);
    static const bool trace_queue = std::getenv("ROCE_TRACE_QUEUE") != nullptr;
    static double next_print = 0;
    if (trace_queue && pt.stat && Simulator::Now().GetSeconds() >= next_print) {
      std::fprintf(stderr, "%.6f queue %lld\n", Simulator::Now().GetSeconds(), (long long)pt.data_bytes);
      next_print = Simulator::Now().GetSeconds() + 5e-6;
    }
  }

  void transmit(uint32_t q, const Frame& f)
  {
    Port& pt = ports[q];
    RoceHeader h;
    h.f = f;
    Ptr<Packet> pkt = Create<Packet>(f.wire - kPppHeader - h.GetSerializedSize());
    pkt->AddHeader(h);
    if (!pt.dev->Send(pkt, pt.dev->GetBroadcast(), kProtocol)) fail("device refused a frame at " + port_name(q));
    pt.busy = true;
    // The device's own transmit-complete event is scheduled inside Send at the same instant, so it runs first.
    Simulator::Schedule(rate.CalculateBytesTxTime(f.wire), &Fabric::tx_done, this, q);
  }

  void tx_done(uint32_t q)
  {
    ports[q].busy = false;
    try_send(q);
  }

  /// Hands the next frame to the port's device if it is idle: control first, then data unless paused.
  void try_send(uint32_t q)
  {
    Port& pt = ports[q];
    if (pt.busy) return;
    if (!pt.ctrl.empty()) {
      const Frame f = pt.ctrl.front();
      pt.ctrl.pop_front();
      transmit(q, f);
      return;
    }
    if (pt.paused) return;
    SimNode& n = nodes[pt.node];
    if (n.is_switch) {
      if (pt.data.empty()) return;
      Frame f = pt.data.front();
      pt.data.pop_front();
      set_queue(pt, -int64_t(f.wire));
      mmu_release(pt.node, f.ingress, f.wire);
      if (P.ecn && !f.ce && should_mark(pt.data_bytes)) {
        f.ce = true;
        ++marked;
      }
      transmit(q, f);
      return;
    }
    host_send_data(q);
  }

  bool should_mark(int64_t q)
  {
    const double b = double(q);
    if (b <= P.kmin) return false;
    if (b > P.kmax) return true;
    const double prob = P.pmax * (b - P.kmin) / (P.kmax - P.kmin);
    return std::uniform_real_distribution<double>(0.0, 1.0)(ecn_rng) < prob;
  }

  void send_control(uint32_t q, Kind kind, uint32_t flow, uint32_t src, uint32_t dst)
  {
    Frame f;
    f.kind = kind;
    f.flow = flow;
    f.src = src;
    f.dst = dst;
    f.wire = kControlWire;
    ports[q].ctrl.push_back(f);
    try_send(q);
  }

  // ---- switch MMU (HPCC switch-mmu semantics) ---------------------------------------------------------------

  int64_t threshold(const SimNode& sw) const
  {
    const int64_t t = P.buffer - sw.total_headroom - sw.total_reserve - sw.shared_used;
    return t > 0 ? (t >> kThresholdShift) : 0;
  }
  static int64_t shared_used_of(const Port& in) { return std::max<int64_t>(0, in.ingress_bytes - kReserve); }

  bool mmu_admit(uint32_t s, uint32_t in, int64_t bytes)
  {
    SimNode& sw = nodes[s];
    Port& pi = ports[in];
    if (bytes + pi.hdrm_bytes > headroom && bytes + shared_used_of(pi) > threshold(sw)) return false;
    const int64_t now_in = pi.ingress_bytes + bytes;
    if (now_in <= kReserve) {
      pi.ingress_bytes += bytes;
    } else if (now_in - kReserve > threshold(sw)) {
      pi.hdrm_bytes += bytes;
    } else {
      pi.ingress_bytes += bytes;
      sw.shared_used += std::min(bytes, now_in - kReserve);
    }
    if (P.pfc && !pi.pause_sent && (pi.hdrm_bytes > 0 || shared_used_of(pi) >= threshold(sw))) {
      pi.pause_sent = true;
      send_control(in, Kind::Pause, 0, s, pi.peer);
    }
    return true;
  }

  void mmu_release(uint32_t s, uint32_t in, int64_t bytes)
  {
    SimNode& sw = nodes[s];
    Port& pi = ports[in];
    const int64_t from_hdrm = std::min(pi.hdrm_bytes, bytes);
    const int64_t from_shared = std::min(bytes - from_hdrm, std::max<int64_t>(0, pi.ingress_bytes - kReserve));
    pi.hdrm_bytes -= from_hdrm;
    pi.ingress_bytes -= bytes - from_hdrm;
    sw.shared_used -= from_shared;
    if (pi.hdrm_bytes < 0 || pi.ingress_bytes < 0 || sw.shared_used < 0)
      fail("negative MMU counter at " + sw.name + " ingress " + port_name(in));
    if (P.pfc && pi.pause_sent && pi.hdrm_bytes == 0 &&
        (shared_used_of(pi) == 0 || shared_used_of(pi) + kResumeOffset <= threshold(sw))) {
      pi.pause_sent = false;
      send_control(in, Kind::Resume, 0, s, pi.peer);
    }
  }

  // ---- receive ------------------------------------------------------------------------------------------------

  void receive(Ptr<NetDevice> dev, Ptr<const Packet> pkt, uint16_t, const Address&, const Address&,
               NetDevice::PacketType)
  {
    const auto it = port_of_dev.find(PeekPointer(dev));
    if (it == port_of_dev.end()) fail("a frame arrived on an unknown device");
    const uint32_t q = it->second;
    RoceHeader h;
    pkt->PeekHeader(h);
    Frame f = h.f;
    f.wire = pkt->GetSize() + kPppHeader;
    const uint32_t expect_wire = f.kind == Kind::Data ? f.payload + kDataOverhead : kControlWire;
    if (f.wire != expect_wire) fail("a frame arrived with the wrong size");
    Port& pt = ports[q];
    const double now = Simulator::Now().GetSeconds();
    if (f.kind == Kind::Pause) {
      ++pt.pause_frames;
      if (!pt.paused) {
        pt.paused = true;
        pt.paused_since = now;
      }
      return;
    }
    if (f.kind == Kind::Resume) {
      if (pt.paused) {
        pt.paused = false;
        pt.paused_s += now - pt.paused_since;
        try_send(q);
      }
      return;
    }
    SimNode& n = nodes[pt.node];
    if (n.is_switch) {
      const int32_t out = n.route[f.dst];
      if (out < 0) fail("no route at " + n.name);
      if (f.kind == Kind::Cnp) {
        ports[out].ctrl.push_back(f);
        try_send(uint32_t(out));
        return;
      }
      if (!mmu_admit(pt.node, q, f.wire)) {
        ++drops;
        drop_bytes += f.payload;
        return;
      }
      f.ingress = q;
      ports[out].data.push_back(f);
      set_queue(ports[out], int64_t(f.wire));
      try_send(uint32_t(out));
      return;
    }
    if (f.dst != pt.node) fail("a frame reached the wrong host " + n.name);
    Flow& fl = flows.at(f.flow);
    if (f.kind == Kind::Cnp) {
      on_cnp(fl);
      return;
    }
    // Data at the receiver: consumed at line rate.
    if (f.seq != fl.expect_seq) {
      // Only a drop upstream (PFC off) can open a gap: the flow can no longer finish.
      if (drops == 0) fail("out-of-order frame without a drop");
    }
    fl.expect_seq = f.seq + 1;
    fl.received += f.payload;
    last_rx = now;
    if (f.ce && P.ecn && P.dcqcn) {
      const double iv = P.cnp_interval_us * 1e-6;
      if (!(iv > 0 && fl.last_cnp >= 0 && now - fl.last_cnp < iv)) {
        fl.last_cnp = now;
        ++cnps;
        send_control(q, Kind::Cnp, fl.id, pt.node, fl.src);
      }
    }
    if (fl.size != kInfinite && fl.received >= fl.size && fl.done < 0) {
      if (fl.received != fl.size) fail("flow received more bytes than its size");
      fl.done = now;
      if (++finished == finite_flows && P.scenario != "longflows") {
        Simulator::Stop();
      }
    }
  }

  // ---- host: sender NIC and DCQCN reaction point -----------------------------------------------------------

  void host_send_data(uint32_t q)
  {
    SimNode& n = nodes[ports[q].node];
    const Time now = Simulator::Now();
    const size_t m = n.flows_out.size();
    Time earliest = Time::Max();
    for (size_t k = 0; k < m; ++k) {
      Flow& f = flows[n.flows_out[(n.rr + k) % m]];
      if (!f.started || f.sent >= f.size) continue;
      if (f.next_avail > now) {
        earliest = std::min(earliest, f.next_avail);
        continue;
      }
      n.rr = (n.rr + k + 1) % m;
      Frame fr;
      fr.kind = Kind::Data;
      fr.flow = f.id;
      fr.src = f.src;
      fr.dst = f.dst;
      fr.seq = f.next_seq++;
      fr.payload = uint32_t(std::min<uint64_t>(kPayload, f.size - f.sent));
      fr.wire = fr.payload + kDataOverhead;
      f.sent += fr.payload;
      // Pacing (HPCC RateBound): the next frame may start wire*8/Rc after this one.
      const Time line_gap = rate.CalculateBytesTxTime(fr.wire);
      f.next_avail = now + (f.rc >= line_bps ? line_gap
                                             : std::max(line_gap, PicoSeconds(std::llround(fr.wire * 8.0 / f.rc * 1e12))));
      if (f.sent >= f.size) stop_timers(f);
      else if (P.dcqcn && P.byte_counter > 0 && f.increasing) {
        f.bc_bytes += fr.wire;
        while (f.bc_bytes >= P.byte_counter) {
          f.bc_bytes -= P.byte_counter;
          rate_increase(f, true);
        }
      }
      transmit(q, fr);
      return;
    }
    if (earliest != Time::Max()) {
      Simulator::Cancel(ports[q].wake);
      ports[q].wake = Simulator::Schedule(earliest - now, &Fabric::try_send, this, q);
    }
  }

  void stop_timers(Flow& f)
  {
    Simulator::Cancel(f.alpha_ev);
    Simulator::Cancel(f.dec_ev);
    Simulator::Cancel(f.inc_ev);
  }

  Time us(double x) const { return PicoSeconds(std::llround(x * 1e6)); }

  void on_cnp(Flow& f)
  {
    if (!P.dcqcn || f.sent >= f.size) return;
    f.alpha_cnp = f.dec_cnp = true;
    if (f.first_cnp) {
      f.alpha = 1;
      f.alpha_cnp = false;
      f.alpha_ev = Simulator::Schedule(us(P.t_alpha_us), &Fabric::alpha_timer, this, f.id);
      f.dec_ev = Simulator::Schedule(us(P.t_dec_us) + NanoSeconds(1), &Fabric::dec_timer, this, f.id);
      f.rt = f.rc = P.rate_on_first_cnp * f.rc;
      f.first_cnp = false;
      trace_rate(f, "first-cnp");
    }
  }

  void alpha_timer(uint32_t id)
  {
    Flow& f = flows[id];
    f.alpha = (1 - P.g) * f.alpha + (f.alpha_cnp ? P.g : 0.0);
    f.alpha_cnp = false;
    f.alpha_ev = Simulator::Schedule(us(P.t_alpha_us), &Fabric::alpha_timer, this, id);
  }

  void dec_timer(uint32_t id)
  {
    Flow& f = flows[id];
    f.dec_ev = Simulator::Schedule(us(P.t_dec_us), &Fabric::dec_timer, this, id);
    if (!f.dec_cnp) return;
    // ClampTargetRate off: the target follows the current rate only if the rate rose since the last decrease.
    if (f.stage != 0 || f.bc_stage != 0) f.rt = f.rc;
    f.rc = std::max(P.min_rate_gbps * 1e9, f.rc * (1 - f.alpha / 2));
    f.stage = 0;
    f.bc_stage = 0;
    f.bc_bytes = 0;
    f.dec_cnp = false;
    f.increasing = true;
    Simulator::Cancel(f.inc_ev);
    f.inc_ev = Simulator::Schedule(us(P.t_inc_us), &Fabric::inc_timer, this, id);
    trace_rate(f, "decrease");
  }

  void inc_timer(uint32_t id)
  {
    Flow& f = flows[id];
    f.inc_ev = Simulator::Schedule(us(P.t_inc_us), &Fabric::inc_timer, this, id);
    rate_increase(f, false);
  }

  void rate_increase(Flow& f, bool by_bytes)
  {
    const uint32_t F = P.fast_recovery;
    int phase; // 0 fast recovery, 1 additive, 2 hyper
    if (P.byte_counter == 0) {
      phase = f.stage < F ? 0 : (f.stage == F ? 1 : 2);
    } else {
      const uint32_t hi = std::max(f.stage, f.bc_stage), lo = std::min(f.stage, f.bc_stage);
      phase = hi < F ? 0 : (lo > F ? 2 : 1);
    }
    if (phase == 1) f.rt = std::min(line_bps, f.rt + P.ai_mbps * 1e6);
    if (phase == 2) f.rt = std::min(line_bps, f.rt + P.hai_mbps * 1e6);
    f.rc = (f.rc + f.rt) / 2;
    if (by_bytes) ++f.bc_stage;
    else ++f.stage;
    trace_rate(f, by_bytes ? (phase == 0 ? "bytes-fast" : phase == 1 ? "bytes-additive" : "bytes-hyper")
                           : (phase == 0 ? "timer-fast" : phase == 1 ? "timer-additive" : "timer-hyper"));
  }
};

// ---------------------------------------------------------------------------------------------------------------
// Output

std::string num(double x)
{
  if (!std::isfinite(x)) return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.9g", x);
  return b;
}

std::string quote(const std::string& s) { return "\"" + s + "\""; }

} // namespace

int main(int argc, char** argv)
{
  const Params P = parse_args(argc, argv);
  Time::SetResolution(Time::PS);

  Fabric fab(P);
  const bool victim = P.scenario == "victim";
  const bool longflows = P.scenario == "longflows";
  const uint64_t size = longflows ? kInfinite : P.size;
  uint32_t recv = 0, victim_flow = 0, hot_sw = 0;
  if (victim) {
    const uint32_t s1 = fab.add_node("s1", true), s2 = fab.add_node("s2", true);
    fab.link(s1, s2);
    recv = fab.add_node("r", false);
    fab.link(s2, recv);
    const uint32_t w = fab.add_node("w", false);
    fab.link(s2, w);
    const uint32_t v = fab.add_node("v", false);
    fab.link(v, s1);
    std::vector<uint32_t> srcs;
    for (uint32_t i = 0; i < P.senders; ++i) {
      srcs.push_back(fab.add_node("a" + std::to_string(i), false));
      fab.link(srcs.back(), s1);
    }
    for (uint32_t j = 0; j < P.local; ++j) {
      srcs.push_back(fab.add_node("l" + std::to_string(j), false));
      fab.link(srcs.back(), s2);
    }
    victim_flow = 0;
    fab.add_flow(v, w, size, 0);
    for (uint32_t s : srcs) fab.add_flow(s, recv, size, 0);
    hot_sw = s2;
  } else {
    const uint32_t s0 = fab.add_node("s0", true);
    recv = fab.add_node("r", false);
    fab.link(s0, recv);
    const uint32_t n = P.scenario == "converge" ? 2 : P.senders;
    std::uniform_real_distribution<double> offset(0.0, P.jitter_ns > 0 ? P.jitter_ns : 1.0);
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t h = fab.add_node("h" + std::to_string(i), false);
      fab.link(h, s0);
      double start = 0;
      if (P.scenario == "converge") start = i == 1 ? P.start2 : 0;
      else if (P.jitter_ns > 0) start = offset(fab.jitter_rng) * 1e-9;
      fab.add_flow(h, recv, size, start);
    }
    hot_sw = s0;
  }
  fab.build_routes();
  fab.hot_port = int32_t(fab.port_between(hot_sw, recv));
  if (longflows) {
    fab.hot.from = P.warmup;
    fab.hot.to = P.duration;
  }
  fab.ports[fab.hot_port].stat = &fab.hot;
  if (victim) {
    fab.trunk_port = int32_t(fab.port_between(0, 1)); // s1 -> s2
    fab.ports[fab.trunk_port].stat = &fab.trunk;
  }
  fab.schedule_starts();
  if (longflows) {
    Simulator::Schedule(Seconds(P.warmup), [&fab] {
      for (auto& f : fab.flows) f.window_received0 = f.received;
    });
  }
  Simulator::Stop(Seconds(longflows ? P.duration : P.stop));

  const auto wall0 = std::chrono::steady_clock::now();
  Simulator::Run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  // The end of the run: the last flow's completion, the window's end (longflows), or, when some flow cannot finish
  // (a drop with PFC off), the last data frame's arrival (not --stop: nothing moves after it).
  const double t_end = longflows || fab.finished == fab.finite_flows ? Simulator::Now().GetSeconds() : fab.last_rx;
  for (auto& f : fab.flows) f.window_received1 = f.received;
  fab.hot.update(t_end, fab.ports[fab.hot_port].data_bytes);
  if (victim) fab.trunk.update(t_end, fab.ports[fab.trunk_port].data_bytes);

  // ---- results and sanity checks ----
  const double payload_line_gbps = P.rate_gbps * double(kPayload) / double(kPayload + kDataOverhead);
  const bool all_done = !longflows && fab.finished == fab.finite_flows;
  double completion = std::numeric_limits<double>::quiet_NaN(), first = completion;
  double last_any = 0, first_any = std::numeric_limits<double>::infinity();
  uint64_t done_bytes = 0;
  for (auto& f : fab.flows)
    if (f.done >= 0) {
      last_any = std::max(last_any, f.done);
      first_any = std::min(first_any, f.done);
      done_bytes += f.size;
      if (f.received != f.size) fail("flow " + std::to_string(f.id) + " finished with received != size");
      const double g = double(f.size) * 8 / (f.done - f.start) / 1e9;
      if (g > payload_line_gbps * (1 + 1e-9)) fail("a flow's mean rate is above the payload line rate");
    }
  if (all_done) completion = last_any;
  if (std::isfinite(first_any)) first = first_any;
  const double goodput = all_done ? double(done_bytes) * 8 / completion / 1e9 : std::numeric_limits<double>::quiet_NaN();
  // Every destination takes its bytes through one link: its aggregate payload rate cannot beat the line.
  std::map<uint32_t, std::pair<uint64_t, double>> per_dst; // bytes, last completion
  double first_start = std::numeric_limits<double>::infinity();
  for (auto& f : fab.flows) first_start = std::min(first_start, f.start);
  for (auto& f : fab.flows)
    if (f.done >= 0) {
      per_dst[f.dst].first += f.size;
      per_dst[f.dst].second = std::max(per_dst[f.dst].second, f.done);
    }
  for (auto& [d, bl] : per_dst)
    if (double(bl.first) * 8 / (bl.second - first_start) / 1e9 > payload_line_gbps * (1 + 1e-9))
      fail("goodput into " + fab.nodes[d].name + " is above the payload line rate");
  if (all_done) {
    for (auto& n : fab.nodes)
      if (n.is_switch && n.shared_used != 0) fail("switch " + n.name + " holds shared bytes after every flow ended");
    for (size_t q = 0; q < fab.ports.size(); ++q)
      if (fab.ports[q].ingress_bytes != 0 || fab.ports[q].hdrm_bytes != 0 || !fab.ports[q].data.empty())
        fail("port " + fab.port_name(uint32_t(q)) + " holds data after every flow ended");
  }
  const double window = P.duration - P.warmup;
  double window_sum = 0;
  if (longflows) {
    for (auto& f : fab.flows) window_sum += double(f.window_received1 - f.window_received0) * 8 / window / 1e9;
    // One frame per flow of slack: the window's edges cut frames.
    const double slack = double(fab.flows.size()) * kPayload * 8 / window / 1e9;
    if (window_sum > payload_line_gbps + slack + 1e-9) fail("window rate above the payload line rate");
  }
  if (P.pfc && fab.drops > 0)
    std::fprintf(stderr, "roce_reference: warning: %llu frames dropped with PFC on (a lossless fabric should not)\n",
                 (unsigned long long)fab.drops);
  if (!longflows && !all_done)
    std::fprintf(stderr,
                 "roce_reference: %u of %u flows did not finish (hard stop at %g s; last data frame at %g s; "
                 "drops: %llu)\n",
                 fab.finite_flows - fab.finished, fab.finite_flows, P.stop, t_end, (unsigned long long)fab.drops);

  // ---- JSON ----
  std::string o = "{\"model\": \"ns3\", \"scenario\": " + quote(P.scenario);
  auto kvn = [&o](const char* k, double v) { o += std::string(", \"") + k + "\": " + num(v); };
  auto kvs = [&o](const char* k, const std::string& v) { o += std::string(", \"") + k + "\": " + v; };
  kvn("senders", P.scenario == "converge" ? 2 : P.senders);
  kvn("local", P.local);
  kvn("size", double(P.size));
  kvn("rate_gbps", P.rate_gbps);
  kvn("delay_us", P.delay_us);
  kvn("buffer", double(P.buffer));
  kvn("dcqcn", P.dcqcn);
  kvn("ecn", P.ecn);
  kvn("pfc", P.pfc);
  kvs("profile", quote(P.profile));
  kvn("kmin", P.kmin);
  kvn("kmax", P.kmax);
  kvn("pmax", P.pmax);
  kvn("t_alpha_us", P.t_alpha_us);
  kvn("t_dec_us", P.t_dec_us);
  kvn("t_inc_us", P.t_inc_us);
  kvn("g", P.g);
  kvn("fast_recovery", P.fast_recovery);
  kvn("ai_mbps", P.ai_mbps);
  kvn("hai_mbps", P.hai_mbps);
  kvn("min_rate_gbps", P.min_rate_gbps);
  kvn("rate_on_first_cnp", P.rate_on_first_cnp);
  kvn("cnp_interval_us", P.cnp_interval_us);
  kvn("byte_counter", double(P.byte_counter));
  kvn("seed", double(P.seed));
  kvn("jitter_ns", P.jitter_ns);
  kvn("start2", P.start2);
  kvn("duration", P.duration);
  kvn("warmup", P.warmup);
  kvn("stop", P.stop);
  kvn("headroom", double(fab.headroom));
  kvn("reserve", double(kReserve));
  kvn("resume_offset", double(kResumeOffset));
  kvn("completion_s", completion);
  kvn("first_s", first);
  kvn("goodput_gbps", longflows ? window_sum : goodput);
  kvn("end_s", t_end);
  o += ", \"flows\": [";
  for (size_t i = 0; i < fab.flows.size(); ++i) {
    const Flow& f = fab.flows[i];
    o += i ? ", " : "";
    o += "{\"src\": " + quote(fab.nodes[f.src].name) + ", \"dst\": " + quote(fab.nodes[f.dst].name);
    o += ", \"bytes\": " + num(double(f.size == kInfinite ? f.received : f.size));
    o += ", \"received\": " + num(double(f.received));
    o += ", \"start_s\": " + num(f.start);
    o += ", \"completion_s\": " + num(f.done >= 0 ? f.done : std::numeric_limits<double>::quiet_NaN());
    o += ", \"mean_gbps\": " +
         num(f.done >= 0 ? double(f.size) * 8 / (f.done - f.start) / 1e9 : std::numeric_limits<double>::quiet_NaN());
    if (longflows) o += ", \"window_gbps\": " + num(double(f.window_received1 - f.window_received0) * 8 / window / 1e9);
    o += ", \"final_rate_gbps\": " + num(f.rc / 1e9) + "}";
  }
  o += "]";
  kvs("hot_port", quote(fab.port_name(uint32_t(fab.hot_port))));
  kvn("peak_queue_bytes", double(fab.hot.peak));
  kvn("mean_queue_bytes", fab.hot.mean(t_end));
  kvn("marked", double(fab.marked));
  kvn("cnps", double(fab.cnps));
  kvn("drops", double(fab.drops));
  o += ", \"pauses\": {";
  bool any = false;
  for (size_t q = 0; q < fab.ports.size(); ++q) {
    Port& pt = fab.ports[q];
    if (pt.pause_frames == 0) continue;
    if (pt.paused) pt.paused_s += t_end - pt.paused_since;
    o += any ? ", " : "";
    any = true;
    o += quote(fab.port_name(uint32_t(q))) + ": {\"frames\": " + num(double(pt.pause_frames)) +
         ", \"paused_s\": " + num(pt.paused_s) + "}";
  }
  o += "}";
  if (victim) {
    kvs("trunk_port", quote(fab.port_name(uint32_t(fab.trunk_port))));
    kvn("trunk_peak_queue_bytes", double(fab.trunk.peak));
    kvn("trunk_mean_queue_bytes", fab.trunk.mean(t_end));
    const Flow& v = fab.flows[victim_flow];
    kvn("victim_completion_s", v.done >= 0 ? v.done : std::numeric_limits<double>::quiet_NaN());
    kvn("victim_gbps",
        v.done >= 0 ? double(v.size) * 8 / (v.done - v.start) / 1e9 : std::numeric_limits<double>::quiet_NaN());
  }
  if (longflows) {
    kvn("window_rate_gbps", window_sum / double(fab.flows.size()));
    kvn("window_queue_bytes", fab.hot.mean(t_end));
  }
  kvn("wall_s", wall);
  o += "}";
  std::printf("%s\n", o.c_str());
  Simulator::Destroy();
  return 0;
}
