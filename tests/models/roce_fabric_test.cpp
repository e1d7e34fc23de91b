// The RoCE congestion model (models/congestion/roce_fabric.hpp) and the DCQCN fluid fixed point
// (models/congestion/dcqcn_fluid.hpp): timing against closed forms written here where nothing queues, PFC keeping
// the fabric lossless and spreading pauses upstream (head-of-line blocking of a flow that never crosses the hot
// port), DCQCN's direction (fewer pauses, a shorter queue), the fluid fixed point against the model's long-lived
// flows, determinism, and the refusals. Agreement with packet-level ns-3 is the ctest entry `ns3:roce-agreement` and
// validation/cases/n2_roce_dcqcn.json.
#include "models/catalog.hpp"
#include "models/congestion/dcqcn_fluid.hpp"
#include "models/congestion/roce_fabric.hpp"
#include "models/network_models.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using tp::models::RoceConfig;
using tp::models::RoceScenario;
using tp::models::simulate_roce;

namespace {

RoceConfig base(RoceScenario s, int senders, uint64_t size, uint64_t buffer)
{
  RoceConfig c = tp::models::roce_hpcc_defaults(100e9);
  c.scenario = s;
  c.senders = senders;
  c.size = size;
  c.buffer = buffer;
  return c;
}

/// Seconds a link takes to carry `payload` bytes as data frames.
double wire_time(const RoceConfig& c, double payload)
{
  return payload / c.payload_bytes * c.frame_bytes * 8 / c.rate;
}

double pause_frames(const tp::models::RoceResult& r)
{
  double n = 0;
  for (const auto& p : r.pauses)
    n += double(p.frames);
  return n;
}

} // namespace

TEST_CASE("roce: one flow alone takes its wire time plus two hops, whatever the step", "[quick]")
{
  for (double step : {0.0, 85e-9, 1e-6}) {
    RoceConfig c = base(RoceScenario::INCAST, 1, 1000000, 32000000);
    c.step = step;
    auto r = simulate_roce(c);
    REQUIRE(r.ok());
    const double frame = c.frame_bytes * 8 / c.rate;
    const double expected = wire_time(c, 1e6) + 2 * (c.delay + frame);
    INFO("step " << step);
    CHECK(r->completion == Approx(expected).margin(2 * tp::models::roce_step(c)));
    CHECK(r->cnps == 0); // nothing queued, nothing marked
    CHECK(r->pauses.empty());
  }
}

TEST_CASE("roce: N flows without DCQCN keep the port busy: N wire times, all finishing together", "[quick]")
{
  RoceConfig c = base(RoceScenario::INCAST, 4, 1000000, 32000000);
  c.dcqcn.enabled = false;
  auto r = simulate_roce(c);
  REQUIRE(r.ok());
  const double frame = c.frame_bytes * 8 / c.rate;
  CHECK(r->completion == Approx(4 * wire_time(c, 1e6) + 2 * (c.delay + frame)).margin(2 * tp::models::roce_step(c)));
  CHECK(r->first > 0.95 * r->completion); // a FIFO served at line rate: nobody is left behind
  // The port held the backlog the senders pushed in: 3/4 of all bytes at the peak, minus what left meanwhile.
  CHECK(r->peak_queue > 0.7 * 3e6 * c.frame_bytes / c.payload_bytes);
}

TEST_CASE("roce: PFC keeps a shallow switch lossless, pausing every sender, at no cost in completion time")
{
  RoceConfig c = base(RoceScenario::INCAST, 16, 4000000, 2000000);
  c.dcqcn.enabled = false;
  auto r = simulate_roce(c);
  REQUIRE(r.ok());
  CHECK(r->drops == 0);
  CHECK(r->pauses.size() == 16); // every h*->s0 port
  for (const auto& p : r->pauses) {
    CHECK(p.port.rfind("h", 0) == 0);
    CHECK(p.frames > 0);
    CHECK(p.paused > 0);
  }
  CHECK(r->peak_queue < double(c.buffer));
  // The bottleneck never idles: the same completion as max-min's (which has no queue and no pause).
  CHECK(r->completion == Approx(tp::models::max_min_roce(c)->completion).epsilon(0.01));

  SECTION("without PFC the same switch drops, and the model says it cannot recover")
  {
    c.pfc.enabled = false;
    auto d = simulate_roce(c);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().got.find("dropped") != std::string::npos);
    CHECK(d.error().expected.find("go-back-N") != std::string::npos);
  }
}

TEST_CASE("roce: a paused trunk blocks a victim flow whose own port is idle (PFC head-of-line blocking)")
{
  RoceConfig c = base(RoceScenario::VICTIM, 4, 2000000, 2000000);
  c.local = 4; // senders beside r make s2->r the bottleneck; s2 then pauses s1->s2
  c.dcqcn.enabled = false;
  auto r = simulate_roce(c);
  REQUIRE(r.ok());
  bool trunk_paused = false;
  for (const auto& p : r->pauses)
    trunk_paused |= p.port == "s1->s2" && p.frames > 0;
  CHECK(trunk_paused);
  // Max-min gives v what s1->s2 has left after the four a-flows' 1/8 of s2->r each: half the link.
  const auto mm = tp::models::max_min_roce(c).value();
  CHECK(mm.victim_bps > 0.45 * c.rate * c.payload_bytes / c.frame_bytes);
  CHECK(r->victim_bps < 0.3 * mm.victim_bps);
}

TEST_CASE("roce: a victim in a PFC priority of its own is not stopped by the others' PAUSE frames")
{
  RoceConfig c = base(RoceScenario::VICTIM, 4, 2000000, 2000000);
  c.local = 4;
  c.dcqcn.enabled = false;
  auto same = simulate_roce(c);
  c.victim_priority = 3;
  auto own = simulate_roce(c);
  REQUIRE(same.ok());
  REQUIRE(own.ok());
  CHECK(own->drops == 0);
  // s2 still pauses the trunk, but only priority 0, the a-flows' class; nothing pauses the trunk in priority 3.
  bool trunk_paused_0 = false, trunk_paused_3 = false;
  for (const auto& p : own->pauses) {
    trunk_paused_0 |= p.port == "s1->s2" && p.priority == 0 && p.frames > 0;
    trunk_paused_3 |= p.port == "s1->s2" && p.priority == 3;
    CHECK((p.priority == 0 || p.priority == 3));
  }
  CHECK(trunk_paused_0);
  CHECK_FALSE(trunk_paused_3);
  for (const auto& p : same->pauses)
    CHECK(p.priority == 0);
  // The victim gets at least what max-min leaves it on the trunk (half the link), not the third of it it keeps
  // when the a-flows' pauses hold it in the same queue.
  const auto mm = tp::models::max_min_roce(c).value();
  CHECK(own->victim_bps > 0.9 * mm.victim_bps);
  CHECK(own->victim_bps > 3 * same->victim_bps);
  // Every byte of both classes arrives: the a-flows finish no later than max-min's (r's port is their bottleneck).
  CHECK(own->completion < 1.02 * mm.completion);

  // The priority belongs to the victim scenario and to 0..7.
  RoceConfig wrong = base(RoceScenario::INCAST, 4, 1000000, 2000000);
  wrong.victim_priority = 3;
  auto e = tp::models::check_roce(wrong);
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().field == "victim_priority");
  c.victim_priority = 8;
  CHECK_FALSE(tp::models::check_roce(c).ok());
  CHECK(tp::models::roce_field_scenario("victim_priority", RoceScenario::INCAST) == "victim");
}

TEST_CASE("roce: DCQCN reacts to ECN: fewer PAUSE frames and a shorter queue than PFC alone")
{
  RoceConfig c = base(RoceScenario::INCAST, 16, 4000000, 2000000);
  auto with = simulate_roce(c);
  c.dcqcn.enabled = false;
  auto without = simulate_roce(c);
  REQUIRE(with.ok());
  REQUIRE(without.ok());
  CHECK(with->cnps > 0);
  CHECK(without->cnps == 0);
  CHECK(pause_frames(*with) < 0.8 * pause_frames(*without));
  CHECK(with->mean_queue < 0.8 * without->mean_queue);
  for (const auto& f : with->flows)
    CHECK(f.final_rate < c.rate); // cut at least once
}

TEST_CASE("roce: the same seed gives the same run, and ECN draws are what a seed changes", "[quick]")
{
  RoceConfig c = base(RoceScenario::INCAST, 8, 1000000, 32000000);
  auto a = simulate_roce(c);
  auto b = simulate_roce(c);
  c.seed = 2;
  auto other = simulate_roce(c);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(other.ok());
  CHECK(a->completion == b->completion);
  CHECK(a->cnps == b->cnps);
  CHECK(a->completion != other->completion);
  c.ecn.enabled = false;
  c.dcqcn.enabled = false;
  auto x = simulate_roce(c);
  c.seed = 1;
  auto y = simulate_roce(c);
  REQUIRE(x.ok());
  REQUIRE(y.ok());
  CHECK(x->completion == y->completion);
}

TEST_CASE("roce: two flows converge to fair shares after the second starts")
{
  RoceConfig c = base(RoceScenario::CONVERGE, 2, 25000000, 32000000);
  auto r = simulate_roce(c);
  REQUIRE(r.ok());
  REQUIRE(r->flows.size() == 2);
  CHECK(r->flows[1].start == Approx(c.start2));
  // Both share the port until the first ends: the port's busy time is the two flows' wire time, give or take the
  // idle time DCQCN's cuts leave (it under-fills the port with HPCC's 300 us increase timer).
  const double busy = 2 * wire_time(c, 25e6);
  CHECK(r->completion > busy);
  CHECK(r->completion < 1.25 * busy);
}

TEST_CASE("roce: long-lived flows settle where the DCQCN fluid model's fixed point puts the queue")
{
  for (int n : {2, 4, 8}) {
    RoceConfig c = base(RoceScenario::LONGFLOWS, n, 1000000, 32000000);
    c.rate = 40e9;
    c.dcqcn = tp::models::dcqcn_paper_profile();
    c.ecn = tp::models::ecn_paper_profile();
    auto r = simulate_roce(c);
    REQUIRE(r.ok());
    tp::models::DcqcnFluidInput in;
    in.flows = n;
    in.capacity = c.rate;
    auto fp = tp::models::dcqcn_fixed_point(in);
    REQUIRE(fp.ok());
    REQUIRE(fp->on_slope);
    INFO(n << " flows: model " << r->mean_queue << " B, fixed point " << fp->queue << " B");
    CHECK(r->mean_queue == Approx(fp->queue).epsilon(0.25));
    CHECK(r->window_bps == Approx(fp->rate * c.payload_bytes / c.frame_bytes).epsilon(0.03));
  }
}

TEST_CASE("dcqcn fixed point: more flows need more marking, a longer queue and a larger alpha", "[quick]")
{
  tp::models::DcqcnFluidInput in;
  double last_p = 0, last_q = 0, last_alpha = 0;
  for (int n : {1, 2, 4, 8}) {
    in.flows = n;
    auto fp = tp::models::dcqcn_fixed_point(in);
    REQUIRE(fp.ok());
    CHECK(fp->p > last_p);
    CHECK(fp->queue > last_q);
    CHECK(fp->alpha > last_alpha);
    CHECK(fp->target > fp->rate); // the target sits above the rate it recovers toward
    CHECK(fp->rate == Approx(in.capacity / n));
    last_p = fp->p, last_q = fp->queue, last_alpha = fp->alpha;
  }
  in.flows = 0;
  CHECK_FALSE(tp::models::dcqcn_fixed_point(in).ok());
  in.flows = 2;
  in.kmax = in.kmin;
  CHECK_FALSE(tp::models::dcqcn_fixed_point(in).ok());
}

TEST_CASE("roce: impossible configurations and results are refused, naming the field", "[quick]")
{
  auto field_of = [](RoceConfig c) { return tp::models::check_roce(c).error().field; };
  RoceConfig c = base(RoceScenario::INCAST, 8, 1000000, 32000000);
  REQUIRE(tp::models::check_roce(c).ok());
  auto bad = c;
  bad.senders = 0;
  CHECK(field_of(bad) == "senders");
  bad = c;
  bad.scenario = RoceScenario::CONVERGE;
  CHECK(field_of(bad) == "senders"); // converge has two flows
  bad = c;
  bad.local = 2; // only the victim scenario has local senders
  CHECK(field_of(bad) == "local");
  bad = c;
  bad.ecn.kmax = bad.ecn.kmin - 1;
  CHECK(field_of(bad) == "kmax");
  bad = c;
  bad.step = 1e-12;
  CHECK(field_of(bad) == "step");
  bad = c;
  bad.rate = std::nan("");
  CHECK(field_of(bad) == "config");
  bad = c;
  bad.scenario = RoceScenario::LONGFLOWS;
  bad.warmup = bad.duration;
  CHECK(field_of(bad) == "warmup");
  bad = c;
  bad.dcqcn.min_rate = 2 * c.rate;
  CHECK(field_of(bad) == "min_rate");

  auto r = simulate_roce(c);
  REQUIRE(r.ok());
  auto wrong = r.value();
  wrong.flows[0].mean_bps = 2 * c.rate;
  CHECK_FALSE(tp::models::check_roce_result(c, wrong, "roce").ok());
  wrong = r.value();
  wrong.flows[0].mean_bps = 0;
  CHECK_FALSE(tp::models::check_roce_result(c, wrong, "roce").ok());
  CHECK(tp::models::check_roce_result(c, r.value(), "roce").ok());
}

TEST_CASE("roce: the registry runs roce and training jobs on roce, and nothing else", "[quick]")
{
  CHECK(tp::models::network_model_for("roce", "roce", "network_model").ok());
  CHECK(tp::models::network_model_for("flow", "roce", "network_model").ok());
  CHECK(tp::models::network_model_for("roce", "training", "network_model").ok()); // allreduce (the parser checks)
  auto refused = tp::models::network_model_for("roce", "transfer", "network_model");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().got.find("only roce, training") != std::string::npos);
  CHECK_FALSE(tp::models::network_model_for("tcp-incast", "roce", "network_model").ok());
}

TEST_CASE("roce: a ring allreduce on a 2:1 oversubscribed leaf-spine: half the bus bandwidth when every hop crosses "
          "the spine, all of it leaf by leaf")
{
  RoceConfig c = base(RoceScenario::ALLREDUCE, 16, 16000000, 4000000);
  c.dcqcn.enabled = false;
  const double payload_line = c.rate * c.payload_bytes / c.frame_bytes;
  // Max-min, closed form: each leaf's uplink (8 x 100 Gb/s / 2) carries its 8 ranks' streams: 50 Gb/s each; a
  // stream is 2(n-1)/n of the buffer; its last byte crosses four hops.
  const double frame = c.frame_bytes * 8 / c.rate, uplink_frame = c.frame_bytes * 8 / (c.rate * 8 / 2);
  const double stream = 2.0 * 15 / 16 * 16e6;
  const double expected = stream * 8 / (payload_line / 2) + 2 * (c.delay + frame) + 2 * (c.delay + uplink_frame);
  const auto mm = tp::models::max_min_roce(c).value();
  CHECK(mm.completion == Approx(expected).epsilon(1e-6));
  CHECK(mm.busbw_bps == Approx(16e6 * 8 / expected * 2 * 15 / 16).epsilon(1e-9));
  auto pfc = simulate_roce(c);
  REQUIRE(pfc.ok());
  CHECK(pfc->completion == Approx(mm.completion).epsilon(0.02)); // PFC loses no bandwidth on the uplinks
  CHECK(pause_frames(*pfc) > 0);
  CHECK(pfc->mean_queue > 0.5 * c.buffer / 8); // the uplink's queue sits near the PFC threshold
  c.dcqcn.enabled = true;
  auto dcqcn = simulate_roce(c);
  REQUIRE(dcqcn.ok());
  CHECK(dcqcn->mean_queue < 0.5 * pfc->mean_queue);
  CHECK(pause_frames(*dcqcn) < pause_frames(*pfc));
  c.interleaved = false; // ranks leaf by leaf: two ring hops cross the spine, far below the uplinks' rate
  auto local = simulate_roce(c);
  REQUIRE(local.ok());
  CHECK(local->busbw_bps == Approx(payload_line).epsilon(0.01));
  CHECK(local->pauses.empty());
}

TEST_CASE("roce: a switch profile's lossless pool and alpha set when PFC pauses", "[quick]")
{
  // 16 senders, no DCQCN: the hot port's queue grows until PFC pauses the ingress ports. The pause threshold is
  // alpha x the pool's free bytes: a small pool pauses sooner and so more often than a large one.
  RoceConfig c = base(RoceScenario::INCAST, 16, 1000000, 32000000);
  c.dcqcn.enabled = false;
  auto profile = [](uint64_t pool, double alpha) {
    tp::models::SwitchProfile sw{"test-switch", 1e-7, tp::models::SwitchBuffer{}};
    sw.buffer->lossy_pool = pool;
    sw.buffer->lossy_alpha = 1;
    sw.buffer->lossless_pool = pool;
    sw.buffer->lossless_alpha = alpha;
    return sw;
  };
  RoceConfig small = c, large = c;
  REQUIRE(tp::models::apply_switch_buffer(profile(400000, 1), small).ok());
  REQUIRE(tp::models::apply_switch_buffer(profile(64000000, 1), large).ok());
  CHECK(small.shared_pool == 400000);
  CHECK(small.pfc.threshold_shift == 0);
  CHECK(small.switch_name == "test-switch");
  auto rs = simulate_roce(small);
  auto rl = simulate_roce(large);
  REQUIRE(rs.ok());
  REQUIRE(rl.ok());
  CHECK(rs->drops == 0);
  CHECK(pause_frames(rs.value()) > 0);
  CHECK(pause_frames(rl.value()) == 0); // 64 MB at alpha 1 holds 16 MB of burst without a pause
  CHECK(rs->peak_queue < rl->peak_queue);

  RoceConfig eighth = c;
  REQUIRE(tp::models::apply_switch_buffer(profile(64000000, 0.125), eighth).ok());
  CHECK(eighth.pfc.threshold_shift == 3);

  // A profile without a lossless pool, or with an alpha above 1, is refused naming the profile.
  RoceConfig d = c;
  tp::models::SwitchProfile plain{"plain", 1e-7, {}};
  auto e = tp::models::apply_switch_buffer(plain, d);
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().file == "plain");
  CHECK(d.shared_pool == 0);
  auto two = tp::models::apply_switch_buffer(profile(1000000, 2), d);
  REQUIRE_FALSE(two.ok());
  CHECK(two.error().field == "buffer.lossless_alpha");
  // A pool below a frame per port cannot work.
  RoceConfig tiny = c;
  tiny.shared_pool = 1000;
  auto t = tp::models::check_roce(tiny);
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().field == "shared_pool");
}

TEST_CASE("roce: a switch profile's PFC rows give each port its speed's headroom and XON", "[quick]")
{
  using tp::models::SwitchBuffer;
  const std::vector<SwitchBuffer::PfcRow> rows = {{40e9, 29696, 19456}, {100e9, 30720, 19456}};
  // A port takes its speed's row, else the next faster one's; none above the fastest.
  CHECK(tp::models::pfc_row(rows, 40e9)->xoff == 29696);
  CHECK(tp::models::pfc_row(rows, 25e9)->xoff == 29696);
  CHECK(tp::models::pfc_row(rows, 80e9)->xoff == 30720);
  CHECK(tp::models::pfc_row(rows, 100e9)->xoff == 30720);
  // An aggregate faster than every row is parallel ports of the fastest: 250 Gb/s is three 100 Gb/s ports.
  CHECK(tp::models::pfc_row(rows, 250e9)->xoff == 3 * 30720);
  CHECK(tp::models::pfc_row(rows, 250e9)->xon == 3 * 19456);
  CHECK_FALSE(tp::models::pfc_row({}, 40e9));

  auto sn2100 = tp::models::Catalog().network_switch("mellanox-sn2100");
  REQUIRE(sn2100.ok());
  RoceConfig c = base(RoceScenario::INCAST, 16, 1000000, 32000000);
  c.dcqcn.enabled = false;
  REQUIRE(tp::models::apply_switch_buffer(sn2100.value(), c).ok());
  REQUIRE(c.pfc.rows.size() == 5);
  CHECK(c.pfc.resume_offset == 0); // SONiC sets no XON_OFFSET_TH on Mellanox
  c.shared_pool = 400000;          // a pool that fills: the pauses use the rows' headroom
  auto r = simulate_roce(c);
  REQUIRE(r.ok());
  CHECK(r->drops == 0);
  CHECK(pause_frames(r.value()) > 0);
  // 30720 bytes of headroom hold what arrives during a PAUSE over 1 us links, not over 5 us ones (127 KB at 100 Gb/s):
  // the model refuses rather than drop.
  c.delay = 5e-6;
  auto st = tp::models::check_roce(c);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().field == "delay");
  CHECK(st.error().expected.find("XOFF_TH") != std::string::npos);
  // An allreduce fabric's 160 Gb/s uplink aggregate on 40 Gb/s hosts runs, its headroom that of two 100G ports.
  RoceConfig ring = base(RoceScenario::ALLREDUCE, 8, 1000000, 32000000);
  ring.rate = 40e9;
  ring.oversubscription = 1;
  REQUIRE(tp::models::apply_switch_buffer(sn2100.value(), ring).ok());
  CHECK(tp::models::check_roce(ring).ok());
  CHECK(simulate_roce(ring).ok());
}

TEST_CASE("roce: a lane without traffic is never paused, even in a full pool", "[quick]")
{
  // The victim's own priority carries nothing through the l-ports and a-ports but v's: with a pool that fills, a
  // PAUSE for an idle lane would never be resumed.
  RoceConfig c = base(RoceScenario::VICTIM, 8, 1000000, 32000000);
  c.local = 8;
  c.dcqcn.enabled = false;
  c.victim_priority = 3;
  c.shared_pool = 60000;
  c.pfc.threshold_shift = 0;
  auto r = simulate_roce(c);
  REQUIRE(r.ok());
  CHECK(r->drops == 0);
  for (const auto& p : r->pauses) {
    INFO(p.port << " priority " << p.priority);
    if (p.priority == 3) CHECK((p.port == "v->s1" || p.port == "s1->s2"));
  }
}
