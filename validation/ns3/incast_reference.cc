// Packet-level reference for TCP incast (issue 19): N senders, each on its own link to one switch, push S bytes
// each to one receiver at the same instant; the switch's port toward the receiver holds B bytes (drop-tail). Built
// on Debian's ns-3 (libns3-dev 3.37), independent of tensorpath's code, so that the flow-level incast model
// (models/congestion/tcp_incast.hpp) can be checked against it. Prints one JSON object per run on stdout.
//
// The TCP is ns-3's NewReno with SACK, set to Linux's defaults where ns-3's differ (docs/network-models.md):
// 200 ms minimum RTO (Linux TCP_RTO_MIN), 10-segment initial window (RFC 6928, Linux since 2.6.39), MSS 1448
// (a 1500-byte MTU with TCP timestamps, which ns-3 sends by default: 1448 + 20 + 20 + 12).
// Every segment is acknowledged (Linux's quick-ack mode while a connection starts); said as an assumption.
#include <ns3/applications-module.h>
#include <ns3/core-module.h>
#include <ns3/internet-module.h>
#include <ns3/network-module.h>
#include <ns3/point-to-point-module.h>
#include <ns3/traffic-control-module.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <vector>

using namespace ns3;

namespace {

struct Counters {
  uint64_t drops = 0;
  uint64_t drop_bytes = 0;
  uint32_t peak_queue_bytes = 0;
  uint64_t timeouts = 0;
  uint64_t fast_retransmits = 0;
  std::map<uint32_t, uint64_t> received; ///< bytes by sender index
  std::vector<double> finished;          ///< per sender: when its last byte reached the receiver's socket
  uint64_t size = 0;
  std::map<Address, uint32_t> sender_of; ///< sender by its address (IPv4 + port)
};

Counters counters;

// --trace: one line per event on stderr, in the form `tensorpath incast --trace` writes, so that the two runs can be
// put side by side (validation/ns3/compare_incast_traces.py): what decides a time-out is which segments the port
// admits and what each sender sends then. "tx|drop <ns> <sender> <segment>" (a drop of segment -1 is the handshake's
// last ACK), "ack <ns> <sender> <segments acknowledged>", "state <ns> <sender> <CA_OPEN|CA_DISORDER|...>"; ns since
// the senders start, senders from 1.
bool trace = false;
uint32_t trace_mss = 1448;
constexpr double START_S = 0.001; // the senders' start (the sink listens from 0)

long long trace_ns()
{
  return (long long)((Simulator::Now().GetSeconds() - START_S) * 1e9 + 0.5);
}
long long segment_of(SequenceNumber32 seq)
{
  return (long long)(seq.GetValue() - 1) / trace_mss; // the SYN took sequence number 0
}

void on_drop(Ptr<const QueueDiscItem> item)
{
  ++counters.drops;
  counters.drop_bytes += item->GetSize();
  if (!trace) return;
  auto ip = DynamicCast<const Ipv4QueueDiscItem>(item);
  TcpHeader tcp;
  if (!ip || !item->GetPacket()->PeekHeader(tcp)) return;
  const bool no_data = item->GetPacket()->GetSize() == tcp.GetSerializedSize(); // the handshake's last ACK
  std::fprintf(stderr, "drop %lld %u %lld\n", trace_ns(), (ip->GetHeader().GetSource().Get() >> 8) & 0xffff,
               no_data ? -1LL : segment_of(tcp.GetSequenceNumber()));
}

std::map<uint32_t, uint32_t> last_ack; ///< per sender

void on_ack_rx(uint32_t sender, Ptr<const Packet>, const TcpHeader& h, Ptr<const TcpSocketBase>)
{
  // The receiver closing: a FIN that acknowledges nothing new is not traced (the flow-level model has no FIN
  // exchange); one that carries the last data's ACK is.
  const bool fin_only = (h.GetFlags() & TcpHeader::FIN) && h.GetAckNumber().GetValue() <= last_ack[sender];
  last_ack[sender] = std::max(last_ack[sender], h.GetAckNumber().GetValue());
  if (fin_only) return;
  // Segments acknowledged; the FIN's sequence number is not a segment of data.
  const long long all = (long long)((counters.size + trace_mss - 1) / trace_mss);
  const long long acked = std::min(all, (long long)(h.GetAckNumber().GetValue() - 1 + trace_mss - 1) / trace_mss);
  std::fprintf(stderr, "ack %lld %u %lld\n", trace_ns(), sender, acked);
}

uint32_t syn_bytes = 0; ///< the first sender's SYN, IP packet: the size the flow-level model must give its SYNs

void on_ip_tx(Ptr<const Packet> p, Ptr<Ipv4>, uint32_t)
{
  if (syn_bytes == 0) syn_bytes = p->GetSize(); // the first packet a sender sends is its SYN
}

void on_tx(uint32_t sender, Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>)
{
  if (p->GetSize() > 0)
    std::fprintf(stderr, "tx %lld %u %lld\n", trace_ns(), sender, segment_of(h.GetSequenceNumber()));
}

void on_queue_bytes(uint32_t, uint32_t now)
{
  if (now > counters.peak_queue_bytes) counters.peak_queue_bytes = now;
}

void on_rx(Ptr<const Packet> p, const Address& from)
{
  const auto a = InetSocketAddress::ConvertFrom(from);
  const uint32_t i = (a.GetIpv4().Get() >> 8) & 0xffff; // sender i is 10.<i / 256>.<i % 256>.1 (below)
  auto& got = counters.received[i];
  got += p->GetSize();
  if (got >= counters.size && counters.finished[i] < 0) counters.finished[i] = Simulator::Now().GetSeconds();
}

std::vector<uint64_t> timeouts_of; ///< per sender

void on_cong_state(uint32_t sender, TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t to)
{
  if (trace) std::fprintf(stderr, "state %lld %u %s\n", trace_ns(), sender, TcpSocketState::TcpCongStateName[to]);
  if (to == TcpSocketState::CA_LOSS) {
    ++counters.timeouts;
    ++timeouts_of[sender];
  }
  if (to == TcpSocketState::CA_RECOVERY) ++counters.fast_retransmits;
}

void watch_socket(Ptr<BulkSendApplication> app, uint32_t sender)
{
  Ptr<Socket> s = app->GetSocket();
  if (s) s->TraceConnectWithoutContext("CongState", MakeBoundCallback(&on_cong_state, sender));
  if (s && trace) {
    s->TraceConnectWithoutContext("Tx", MakeBoundCallback(&on_tx, sender));
    s->TraceConnectWithoutContext("Rx", MakeBoundCallback(&on_ack_rx, sender));
  }
}

} // namespace

int main(int argc, char** argv)
{
  uint32_t senders = 8;
  uint64_t size = 1000000;
  uint32_t buffer = 128 * 1024;
  std::string rate = "10Gbps";
  double link_delay_us = 1.0;
  double min_rto_ms = 200;
  uint32_t initial_cwnd = 10;
  uint32_t mss = 1448;
  uint32_t seed = 1;
  double jitter_ns = 0;
  uint32_t stagger_ns = 0;

  CommandLine cmd;
  cmd.Usage("TCP incast, packet level: N senders push S bytes each through one switch port of B bytes.");
  cmd.AddValue("senders", "number of senders (1..4096)", senders);
  cmd.AddValue("size", "bytes each sender sends", size);
  cmd.AddValue("buffer", "bytes the switch port toward the receiver holds (drop-tail)", buffer);
  cmd.AddValue("rate", "every link's rate, ns-3 DataRate syntax (10Gbps)", rate);
  cmd.AddValue("delay", "every link's propagation delay, microseconds", link_delay_us);
  cmd.AddValue("min-rto", "TCP minimum retransmission time-out, milliseconds (Linux: 200)", min_rto_ms);
  cmd.AddValue("init-cwnd", "TCP initial window, segments (Linux: 10)", initial_cwnd);
  cmd.AddValue("mss", "TCP segment payload, bytes", mss);
  cmd.AddValue("seed", "ns-3 random seed (start jitter)", seed);
  cmd.AddValue("jitter", "each sender starts at an offset drawn uniformly from [0, jitter) ns (0: all at once)",
               jitter_ns);
  cmd.AddValue("stagger", "sender i (from 1) starts (i - 1) x stagger ns after the first, before any jitter",
               stagger_ns);
  cmd.AddValue("trace",
               "print every data segment sent, ACK received, drop at the port and congestion state change on "
               "stderr (tensorpath incast --trace's lines)",
               trace);
  cmd.Parse(argc, argv);
  trace_mss = mss;
  if (senders < 1 || senders > 4096 || size < 1 || buffer < 1500 || mss < 100 || mss > 9000 || initial_cwnd < 1 ||
      !(jitter_ns >= 0) || jitter_ns > 1e9 || stagger_ns > 1000000) {
    std::fprintf(stderr, "incast_reference: senders in 1..4096, size >= 1, buffer >= 1500, mss in 100..9000, "
                         "init-cwnd >= 1, jitter in 0..1e9 ns, stagger in 0..1e6 ns\n");
    return 2;
  }
  RngSeedManager::SetSeed(seed);

  Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpNewReno"));
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
  Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(initial_cwnd));
  Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(4 << 20));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(4 << 20));
  Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MicroSeconds(int64_t(min_rto_ms * 1000))));
  Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));

  NodeContainer hosts;
  hosts.Create(senders + 1); // node 0 receives
  Ptr<Node> sw = CreateObject<Node>();
  InternetStackHelper stack;
  stack.Install(hosts);
  stack.Install(sw);

  PointToPointHelper p2p;
  p2p.SetDeviceAttribute("DataRate", StringValue(rate));
  p2p.SetChannelAttribute("Delay", TimeValue(NanoSeconds(int64_t(link_delay_us * 1000))));
  // A port's buffer is a FIFO queue disc in front of a one-packet transmitter (ns-3 drops silently when a device
  // queue without a queue disc is full, so the buffer must be the queue disc). Senders' and other ports hold
  // everything (no loss before the bottleneck); the switch's port toward the receiver holds B bytes.
  p2p.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
  TrafficControlHelper deep, shallow;
  deep.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::BYTES, 1u << 30)));
  shallow.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::BYTES, buffer)));

  Ipv4AddressHelper ip;
  Ptr<QueueDisc> bottleneck;
  Ipv4Address receiver_address;
  for (uint32_t i = 0; i <= senders; ++i) {
    NetDeviceContainer d = p2p.Install(hosts.Get(i), sw);
    deep.Install(d.Get(0));
    if (i == 0) {
      bottleneck = shallow.Install(d.Get(1)).Get(0); // the switch's side
      bottleneck->TraceConnectWithoutContext("Drop", MakeCallback(&on_drop));
      bottleneck->TraceConnectWithoutContext("BytesInQueue", MakeCallback(&on_queue_bytes));
    } else {
      deep.Install(d.Get(1));
    }
    char net[32];
    std::snprintf(net, sizeof net, "10.%u.%u.0", i / 256, i % 256);
    ip.SetBase(net, "255.255.255.0");
    Ipv4InterfaceContainer a = ip.Assign(d);
    if (i == 0) receiver_address = a.GetAddress(0);
  }
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();
  hosts.Get(1)->GetObject<Ipv4L3Protocol>()->TraceConnectWithoutContext("Tx", MakeCallback(&on_ip_tx));

  counters.size = size;
  counters.finished.assign(senders + 1, -1);
  timeouts_of.assign(senders + 1, 0);
  const uint16_t port = 5001;
  PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
  ApplicationContainer sink_app = sink.Install(hosts.Get(0));
  sink_app.Start(Seconds(0));
  DynamicCast<PacketSink>(sink_app.Get(0))->TraceConnectWithoutContext("Rx", MakeCallback(&on_rx));

  Ptr<UniformRandomVariable> offset = CreateObject<UniformRandomVariable>();
  std::vector<int64_t> offsets_ns; ///< each sender's start after the first possible one: printed, so that the
                                   ///< flow-level model can run the same starts (tensorpath incast --reference)
  for (uint32_t i = 1; i <= senders; ++i) {
    BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(receiver_address, port));
    bulk.SetAttribute("MaxBytes", UintegerValue(size));
    bulk.SetAttribute("SendSize", UintegerValue(mss));
    ApplicationContainer app = bulk.Install(hosts.Get(i));
    // Sender i at (i - 1) x stagger after the first (all after the sink listens), plus an offset in [0, jitter).
    const int64_t jitter = int64_t(jitter_ns > 0 ? offset->GetValue(0, jitter_ns) : 0);
    offsets_ns.push_back(int64_t(i - 1) * stagger_ns + jitter);
    const Time start = Seconds(START_S) + NanoSeconds(offsets_ns.back());
    app.Start(start);
    Simulator::Schedule(start + NanoSeconds(1), &watch_socket, DynamicCast<BulkSendApplication>(app.Get(0)), i);
  }

  const auto wall0 = std::chrono::steady_clock::now();
  Simulator::Stop(Seconds(600));
  Simulator::Run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();

  double last = 0, first = 1e300;
  uint32_t done = 0;
  for (uint32_t i = 1; i <= senders; ++i)
    if (counters.finished[i] >= 0) {
      ++done;
      last = std::max(last, counters.finished[i] - START_S);
      first = std::min(first, counters.finished[i] - START_S);
    }
  Simulator::Destroy();
  if (done != senders) {
    std::fprintf(stderr, "incast_reference: %u of %u senders finished within 600 simulated seconds\n", done, senders);
    return 1;
  }
  std::printf("{\"model\": \"ns3\", \"senders\": %u, \"size\": %llu, \"buffer\": %u, \"rate\": \"%s\", "
              "\"delay_us\": %g, \"min_rto_ms\": %g, \"init_cwnd\": %u, \"mss\": %u, \"jitter_ns\": %g, "
              "\"stagger_ns\": %u, \"seed\": %u, "
              "\"completion_s\": %.9g, \"first_s\": %.9g, \"goodput_gbps\": %.6g, \"drops\": %llu, "
              "\"timeouts\": %llu, \"fast_retransmits\": %llu, \"peak_queue_bytes\": %u, \"syn_bytes\": %u, "
              "\"wall_s\": %.6g, ",
              senders, (unsigned long long)size, buffer, rate.c_str(), link_delay_us, min_rto_ms, initial_cwnd, mss,
              jitter_ns, stagger_ns, seed, last, first, double(senders) * double(size) * 8 / last / 1e9,
              (unsigned long long)counters.drops, (unsigned long long)counters.timeouts,
              (unsigned long long)counters.fast_retransmits, counters.peak_queue_bytes, syn_bytes, wall);
  std::printf("\"start_offsets_ns\": [");
  for (size_t k = 0; k < offsets_ns.size(); ++k)
    std::printf("%s%lld", k ? ", " : "", (long long)offsets_ns[k]);
  std::printf("], \"per_sender\": [");
  for (uint32_t i = 1; i <= senders; ++i)
    std::printf("%s{\"completion_s\": %.9g, \"timeouts\": %llu}", i > 1 ? ", " : "", counters.finished[i] - START_S,
                (unsigned long long)timeouts_of[i]);
  std::printf("]}\n");
  return 0;
}
