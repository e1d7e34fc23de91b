// The TCP incast model (models/congestion/tcp_incast.hpp): exact timing where nothing is lost (checked against
// closed forms written here, not taken from the model), drops and time-outs where the port overflows, the
// mechanisms' direction (a longer minimum RTO, a deeper buffer), determinism, and its refusals. Its agreement with
// packet-level ns-3 is the ctest entry `ns3:incast-agreement` and validation/cases/n1_tcp_incast.json.
#include "models/congestion/tcp_incast.hpp"
#include "models/network_models.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using tp::models::IncastConfig;
using tp::models::simulate_tcp_incast;

namespace {

/// When the sender's first data segment starts on its link: the handshake's SYN and SYN-ACK (a SYN's size) over two
/// links each way (the SYN behind `k` other senders' SYNs at the port), then the handshake's last ACK on its link.
double handshake(const IncastConfig& c, int k)
{
  const double ack_wire = double(c.header_bytes + c.framing_bytes) / c.link_rate;
  const double syn_wire = double(c.syn_bytes + c.framing_bytes) / c.link_rate;
  return 4 * c.link_delay + (4 + k) * syn_wire + ack_wire;
}

double wire(const IncastConfig& c, uint64_t payload)
{
  return double(payload + uint64_t(c.header_bytes + c.framing_bytes)) / c.link_rate;
}

} // namespace

TEST_CASE("incast: one sender whose window holds every segment takes the store-and-forward time, to the bit")
{
  IncastConfig c;
  c.senders = 1;
  c.bytes_per_sender = 100 * 1448 + 100; // 100 full segments and a short one
  c.initial_window = 1000;
  c.buffer_bytes = 1 << 20;
  auto r = simulate_tcp_incast(c);
  REQUIRE(r.ok());
  // The sender's link serializes the 101 packets back to back; the port stores and forwards each: the 100th full
  // packet arrives one delay after the sender sent it and occupies the port for one more packet time, the short one
  // arrives meanwhile and follows it; one more delay to the receiver.
  const double expected = handshake(c, 0) + 101 * wire(c, 1448) + wire(c, 100) + 2 * c.link_delay;
  CHECK(r->completion == Approx(expected).epsilon(1e-12));
  CHECK(r->drops == 0);
  CHECK(r->timeouts == 0);
  CHECK(r->segments_sent == 101);
  CHECK(r->peak_queue_bytes == 0);
}

TEST_CASE("incast: senders whose windows fit the port share it exactly: the port is never idle")
{
  IncastConfig c;
  c.senders = 4;
  c.bytes_per_sender = 40 * 1448;
  c.initial_window = 40;
  c.buffer_bytes = 4 << 20;
  auto r = simulate_tcp_incast(c);
  REQUIRE(r.ok());
  CHECK(r->drops == 0);
  CHECK(r->timeouts == 0);
  // The first packet reaches the port after the first sender's handshake, its serialization and a delay; from then
  // on the port sends 160 packets without a gap (each later sender's SYN stagger is far below a packet time).
  const double first_arrival = handshake(c, 0) + wire(c, 1448) + c.link_delay;
  CHECK(r->completion == Approx(first_arrival + 160 * wire(c, 1448) + c.link_delay).epsilon(1e-9));
  const double payload_rate = c.link_rate * 1448 / double(1448 + c.header_bytes + c.framing_bytes);
  CHECK(r->goodput < payload_rate);
  CHECK(r->goodput > 0.9 * payload_rate);
  // The buffer held all but the packet on the wire and the one in the transmitter's queue at its fullest.
  CHECK(r->peak_queue_bytes > 100 * 1500);
  CHECK(r->peak_queue_bytes <= 160 * 1500);
}

TEST_CASE("incast: a shallow port drops, and a sender that cannot learn of its loss waits for the minimum RTO")
{
  IncastConfig c;
  c.senders = 32;
  c.bytes_per_sender = 1000000;
  c.buffer_bytes = 32768;
  auto r = simulate_tcp_incast(c);
  REQUIRE(r.ok());
  CHECK(r->drops > 0);
  CHECK(r->timeouts > 0);
  CHECK(r->completion >= c.min_rto);
  CHECK(r->peak_queue_bytes <= c.buffer_bytes);
  // Goodput collapses far below the flow model's (which shares the port without loss).
  const auto flow = tp::models::max_min_incast(c);
  CHECK(r->goodput < 0.2 * flow.goodput);

  SECTION("a longer minimum RTO makes the collapse longer")
  {
    IncastConfig slow = c;
    slow.min_rto = 1.0;
    auto s = simulate_tcp_incast(slow);
    REQUIRE(s.ok());
    CHECK(s->completion >= 1.0);
    CHECK(s->completion > r->completion);
  }
  SECTION("a port deep enough for every initial window loses nothing")
  {
    IncastConfig deep = c;
    deep.buffer_bytes = 64ull << 20;
    auto d = simulate_tcp_incast(deep);
    REQUIRE(d.ok());
    CHECK(d->drops == 0);
    CHECK(d->timeouts == 0);
    CHECK(d->completion < 0.05);
  }
}

TEST_CASE("incast: losses that later segments reveal are repaired by fast retransmit, without a time-out")
{
  // 4 senders of 1 MB into 256 KiB: slow start overshoots the port, the senders see SACKs above their holes.
  IncastConfig c;
  c.senders = 4;
  c.bytes_per_sender = 1000000;
  c.buffer_bytes = 262144;
  auto r = simulate_tcp_incast(c);
  REQUIRE(r.ok());
  CHECK(r->drops > 0);
  CHECK(r->fast_retransmits > 0);
  CHECK(r->timeouts == 0);
  CHECK(r->completion < c.min_rto);
  uint64_t resent = 0;
  for (const auto& s : r->per_sender)
    resent += s.retransmitted_segments;
  CHECK(resent >= r->drops); // every drop was sent again (some resends may be lost again)
  // Every transmission is a first one or a counted resend: 691 segments per sender, none sent twice unnoticed.
  CHECK(r->segments_sent == 4 * 691 + resent);
}

TEST_CASE("incast: the same configuration gives the same answer")
{
  IncastConfig c;
  c.senders = 16;
  c.bytes_per_sender = 65536;
  c.buffer_bytes = 32768;
  auto a = simulate_tcp_incast(c);
  auto b = simulate_tcp_incast(c);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->completion == b->completion);
  CHECK(a->drops == b->drops);
  CHECK(a->timeouts == b->timeouts);
}

TEST_CASE("incast: configurations that cannot run are refused, naming the field")
{
  auto refused = [](IncastConfig c, const std::string& field) {
    auto r = simulate_tcp_incast(c);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().field == field);
  };
  IncastConfig c;
  c.senders = 0;
  refused(c, "senders");
  c = IncastConfig{};
  c.buffer_bytes = 1000; // less than one packet
  refused(c, "buffer");
  c = IncastConfig{};
  c.bytes_per_sender = 0;
  refused(c, "size");
  c = IncastConfig{};
  c.link_rate = 0;
  refused(c, "rate");
  c = IncastConfig{};
  c.initial_window = 0;
  refused(c, "init_cwnd");
  c = IncastConfig{};
  c.senders = 600; // 600 SYNs of 60 bytes do not fit a 32 KiB port
  c.buffer_bytes = 32768;
  refused(c, "buffer");
  c = IncastConfig{};
  c.ns3_quirks = true;
  c.link_rate = 1e15 / 8; // an ACK would take 0.43 ps: nothing on ns-3's 1 ns clock
  refused(c, "rate");
  c = IncastConfig{};
  c.start_stagger = 1e-6; // 8 senders over 7 us: beyond twice the 1 us link delay
  refused(c, "stagger");
}

TEST_CASE("network models: the registry names each model's jobs and refuses the others with a reason")
{
  auto flow = tp::models::network_model_for("flow", "transfer");
  REQUIRE(flow.ok());
  CHECK(flow.value()->name == "flow");
  CHECK(tp::models::network_model_for("tcp-incast", "incast").ok());
  CHECK(tp::models::network_model_for("nccl", "collective").ok());

  CHECK(tp::models::network_model_for("tcp-incast", "training").ok()); // ps mode (the scenario parser checks it)
  auto wrong_job = tp::models::network_model_for("tcp-incast", "transfer");
  REQUIRE_FALSE(wrong_job.ok());
  CHECK(wrong_job.error().got.find("only incast, training") != std::string::npos);

  auto typo = tp::models::network_model_for("flwo", "transfer");
  REQUIRE_FALSE(typo.ok());
  CHECK(typo.error().got.find("did you mean \"flow\"") != std::string::npos);

  auto ns3 = tp::models::network_model_for("ns3", "transfer");
  REQUIRE_FALSE(ns3.ok());
  CHECK(ns3.error().got.find("ns-3 binding") != std::string::npos);

  for (const auto& m : tp::models::network_models()) {
    CHECK_FALSE(m.summary.empty());
    CHECK((m.unavailable.empty() == !m.jobs.empty()));
  }
}

TEST_CASE("network models: the fault types each injects are data, its words agree, and a refusal says what fits")
{
  using tp::models::check_faults_supported;
  const auto& all = tp::models::fault_type_names();
  REQUIRE(all.size() == 6);
  for (const auto& m : tp::models::network_models()) {
    INFO(m.name);
    // Each listed type is a known one, in the documented order; the words name none (the list is put in front).
    size_t at = 0;
    for (const auto& t : m.fault_types) {
      auto it = std::find(all.begin() + std::ptrdiff_t(at), all.end(), t);
      CHECK(it != all.end());
      at = size_t(it - all.begin());
    }
    CHECK_FALSE(m.faults.empty());
    for (const auto& t : all)
      CHECK(m.faults.find(t) == std::string::npos);
    const std::string text = tp::models::injected_faults_text(m);
    CHECK(text.rfind(m.fault_types.empty() ? std::string("none (") : m.fault_types[0] + ", ", 0) == 0);
    // A model that injects a fault honours at least one job.
    if (!m.fault_types.empty()) CHECK_FALSE(m.jobs.empty());
  }
  auto injects = [](const std::string& name) {
    for (const auto& m : tp::models::network_models())
      if (m.name == name) return m.fault_types;
    return std::vector<std::string>{"?"};
  };
  CHECK(injects("flow") == all);
  for (const char* none : {"analytical", "nccl", "tcp-incast", "roce", "ns3"})
    CHECK(injects(none).empty());

  CHECK(check_faults_supported("flow", "training", all).ok());
  CHECK(check_faults_supported("analytical", "training", {}).ok()); // no faults: nothing to refuse

  auto a = check_faults_supported("analytical", "training", {"packet_loss", "link_down"});
  REQUIRE_FALSE(a.ok());
  CHECK(a.error().field == "faults[0].type");
  CHECK(a.error().got == "\"packet_loss\" on network model \"analytical\"");
  CHECK(a.error().expected.find("it injects none (its rings") != std::string::npos);
  CHECK(a.error().expected.find("network model \"flow\" injects packet_loss into a training job") != std::string::npos);

  auto n = check_faults_supported("nccl", "collective", {"host_death"});
  REQUIRE_FALSE(n.ok());
  CHECK(n.error().expected.find("no registered network model injects host_death into a collective job") !=
        std::string::npos);

  auto unknown = check_faults_supported("flwo", "training", {"link_down"});
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().field == "network_model");
}

TEST_CASE("incast: start jitter delays each sender by its drawn offset, the same for the same seed")
{
  IncastConfig c;
  c.senders = 1;
  c.bytes_per_sender = 100000;
  c.buffer_bytes = 1 << 20;
  auto at_once = simulate_tcp_incast(c);
  REQUIRE(at_once.ok());
  c.start_jitter = 1e-6;
  c.seed = 7;
  auto a = simulate_tcp_incast(c);
  auto b = simulate_tcp_incast(c);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->completion == b->completion);
  // One sender alone: the whole run shifts by its offset, which lies in [0, 1 us).
  CHECK(a->completion >= at_once->completion);
  CHECK(a->completion < at_once->completion + 1e-6);

  c.start_jitter = 2; // more than the model allows
  auto refused = simulate_tcp_incast(c);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().field == "jitter");
}

TEST_CASE("incast: with ns-3's clock every transmission time is rounded to the nanosecond, half away from zero")
{
  // One sender whose window holds everything, at 40 Gb/s: a 1502-byte packet takes 300.4 ns, rounded to 300; a SYN
  // (56 + 2 bytes) 11.6 -> 12; an ACK (52 + 2) 10.8 -> 11. Worked here from the rule, not read from the model.
  IncastConfig c;
  c.senders = 1;
  c.bytes_per_sender = 50 * 1448;
  c.initial_window = 100;
  c.buffer_bytes = 1 << 20;
  c.link_rate = 40e9 / 8;
  c.syn_bytes = 56;
  c.ns3_quirks = true;
  auto r = simulate_tcp_incast(c);
  REQUIRE(r.ok());
  const double ns = 1e-9, syn = 12 * ns, ack = 11 * ns, packet = 300 * ns;
  const double data_start = 4 * c.link_delay + 4 * syn + ack; // then 50 packets back to back, stored and forwarded
  CHECK(r->completion == Approx(data_start + 50 * packet + packet + 2 * c.link_delay).epsilon(1e-12));
  // The goodput check allows the half nanosecond the rounding gains per packet (it exceeds the line's payload rate).
  CHECK(r->goodput > 0);

  SECTION("without ns-3's quirks the clock is 1 ps: the same run takes the exact times")
  {
    c.ns3_quirks = false;
    auto e = simulate_tcp_incast(c);
    REQUIRE(e.ok());
    const double w = 1502 / c.link_rate, s = 58 / c.link_rate, a = 54 / c.link_rate;
    CHECK(e->completion == Approx(4 * c.link_delay + 4 * s + a + 51 * w + 2 * c.link_delay).epsilon(1e-9));
  }
}

TEST_CASE("incast: the handshakes' last ACKs cross the port, and the late senders' ones queue among early data")
{
  // 32 senders start together: their SYNs leave the port one SYN time (49.6 ns) apart, so the last ones' ACKs reach
  // the port after the first sender's first data segment (1.2 us after its ACK) and wait in the buffer behind it.
  IncastConfig c;
  c.senders = 32;
  c.bytes_per_sender = 5 * 1448;
  c.buffer_bytes = 8 << 20;
  auto r = simulate_tcp_incast(c);
  REQUIRE(r.ok());
  CHECK(r->drops == 0);
  const uint64_t acks_bytes = r->peak_queue_bytes % 1500; // data packets are 1500 bytes, ACKs 52
  CHECK(acks_bytes > 0);
  CHECK(acks_bytes % 52 == 0);
}

TEST_CASE("incast: the trace reports every transmission, drop and time-out the result counts")
{
  IncastConfig c;
  c.senders = 8;
  c.bytes_per_sender = 65536;
  c.buffer_bytes = 32768;
  uint64_t tx = 0, drops = 0, losses = 0, syn_acks = 0;
  double last = -1;
  bool in_order = true;
  c.trace = [&](const tp::models::IncastTraceEvent& e) {
    using K = tp::models::IncastTraceEvent::Kind;
    in_order = in_order && e.time >= last;
    last = e.time;
    tx += e.kind == K::TX;
    drops += e.kind == K::DROP;
    losses += e.kind == K::STATE && std::string(e.state) == "CA_LOSS";
    syn_acks += e.kind == K::ACK && e.segment == 0;
    CHECK(e.sender >= 1);
    CHECK(e.sender <= 8);
  };
  auto r = simulate_tcp_incast(c);
  REQUIRE(r.ok());
  REQUIRE(r->drops > 0);
  CHECK(in_order);
  CHECK(tx == r->segments_sent);
  CHECK(drops == r->drops); // a dropped handshake ACK counts in both
  CHECK(losses == r->timeouts);
  CHECK(syn_acks >= 8);
}

TEST_CASE("incast: given start offsets replace the jitter, and a list of the wrong length is refused")
{
  IncastConfig c;
  c.senders = 1;
  c.bytes_per_sender = 100000;
  c.buffer_bytes = 1 << 20;
  auto at_once = simulate_tcp_incast(c);
  REQUIRE(at_once.ok());
  c.start_offsets = {500e-9};
  c.start_jitter = 1e-6; // ignored beside the offsets
  auto later = simulate_tcp_incast(c);
  REQUIRE(later.ok());
  CHECK(later->completion == Approx(at_once->completion + 500e-9).epsilon(1e-12));
  c.start_offsets = {0, 0};
  auto wrong = simulate_tcp_incast(c);
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().field == "start_offsets");
  c.start_offsets = {3e-6}; // beyond twice the 1 us link delay
  REQUIRE_FALSE(simulate_tcp_incast(c).ok());
}

TEST_CASE("incast: goodput over time adds up to every sender's bytes, and a time-out shows as bins with nothing")
{
  IncastConfig c;
  c.senders = 4;
  c.bytes_per_sender = 65536;
  c.buffer_bytes = 32768; // three senders time out (docs/network-models.md)
  c.goodput_bin = 1e-3;
  auto r = simulate_tcp_incast(c);
  REQUIRE(r.ok());
  REQUIRE(r->timeouts > 0);
  REQUIRE_FALSE(r->goodput_series.empty());
  double bytes = 0;
  for (const double g : r->goodput_series)
    bytes += g * c.goodput_bin;
  CHECK(bytes == Approx(4.0 * 65536).epsilon(1e-12));
  // The last bin holds the last delivery; the run waited 200 ms for its time-outs with nothing delivered.
  CHECK(r->goodput_series.size() == size_t(std::floor(r->completion / c.goodput_bin)) + 1);
  CHECK(r->goodput_series.back() > 0);
  CHECK(std::count(r->goodput_series.begin(), r->goodput_series.end(), 0.0) > 150);
  c.goodput_bin = -1;
  auto refused = simulate_tcp_incast(c);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().field == "goodput_bin");
}
