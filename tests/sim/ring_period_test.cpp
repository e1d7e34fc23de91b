// A ring whose routes repeat every period of ranks (identical hosts) timed folded onto one period
// (sim::ring_period_repeats, analytical_ring's `period`): the check on hand-made routes, and DGX A100 rings of one
// segment size on shared PCIe links folded onto two hosts against the same ring message by message on every rank.
#include "core/collectives/ring_schedule.hpp"
#include "core/common/isolated_run.hpp"
#include "models/catalog.hpp"
#include "sim/fabric_modes.hpp"
#include "sim/simulation.hpp"
#include "test_cluster.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

using namespace tp;

namespace {

/// `ranks` ranks in pairs: each rank holds a link of its own and its pair's link (both shared); rank r's latency
/// 1 us unless `latency` says otherwise for one rank.
sim::RingRoutes paired_routes(int ranks, int odd_rank = -1, double odd_latency = 0, double odd_rate = 0)
{
  sim::RingRoutes rr;
  for (int r = 0; r < ranks; ++r)
    rr.links.push_back({"own" + std::to_string(r), r == odd_rank && odd_rate > 0 ? odd_rate : 1e10, true});
  for (int r = 0; r < ranks / 2; ++r)
    rr.links.push_back({"pair" + std::to_string(r), 2e10, true});
  for (auto& kind : rr.routes)
    for (int r = 0; r < ranks; ++r) {
      sim::AnalyticalRoute route;
      route.links = {r, ranks + r / 2};
      route.latency = r == odd_rank && odd_latency > 0 ? odd_latency : 1e-6;
      kind.push_back(route);
    }
  return rr;
}

} // namespace

TEST_CASE("ring routes repeat a period only where every rank's route is its residue's, link for link", "[fabric][fold]")
{
  const double bytes = 4.0 * 16 * 1000; // one segment size on 16 ranks
  const sim::RingRoutes period = paired_routes(4);
  CHECK(sim::ring_period_repeats(paired_routes(16), period, bytes));
  CHECK(sim::ring_period_repeats(paired_routes(8), period, bytes));
  // Not a divisor, or no more than one period.
  CHECK_FALSE(sim::ring_period_repeats(paired_routes(10), period, bytes));
  CHECK_FALSE(sim::ring_period_repeats(paired_routes(4), period, bytes));
  // One rank unlike its residue: a longer latency, a slower link.
  CHECK_FALSE(sim::ring_period_repeats(paired_routes(16, 9, 2e-6), period, bytes));
  CHECK_FALSE(sim::ring_period_repeats(paired_routes(16, 9, 0, 5e9), period, bytes));
  // A link every rank holds (a switch's port): ranks of one residue share it in the ring but not in the period.
  sim::RingRoutes global = paired_routes(16);
  global.links.push_back({"switch", 1e11, true});
  for (auto& kind : global.routes)
    for (auto& route : kind)
      route.links.push_back(int(global.links.size()) - 1);
  sim::RingRoutes period_global = period;
  period_global.links.push_back({"switch", 1e11, true});
  for (auto& kind : period_global.routes)
    for (auto& route : kind)
      route.links.push_back(int(period_global.links.size()) - 1);
  CHECK_FALSE(sim::ring_period_repeats(global, period_global, bytes));
  // Pairs that straddle the period in the ring (ranks 3 and 4 share a link) but not in the period.
  sim::RingRoutes shifted = paired_routes(16);
  for (auto& kind : shifted.routes)
    for (int r = 0; r < 16; ++r)
      kind[size_t(r)].links[1] = 16 + ((r + 1) % 16) / 2;
  CHECK_FALSE(sim::ring_period_repeats(shifted, period, bytes));
  // A route whose delay differs at the segment's size.
  sim::RingRoutes delayed = paired_routes(16);
  for (auto& kind : delayed.routes)
    kind[5].delay = [](double b) { return b * 1e-12; };
  CHECK_FALSE(sim::ring_period_repeats(delayed, period, bytes));
}

namespace {

struct FoldRow {
  double bytes = 0, whole = 0, folded = 0;
  uint64_t whole_timed = 0, folded_timed = 0; ///< messages each call timed one by one
};

/// DGX A100 rings of `hosts` hosts x 8 GPU ranks on every host, timed whole and with the period of the first
/// `period_hosts` hosts' ranks (doubled: twice as many), for each size (one simulation per process: in a child).
std::vector<FoldRow> dgx_folds(int hosts, int period_hosts, const std::vector<double>& sizes)
{
  auto r = run_isolated([&]() -> Result<std::string> {
    auto host = models::Catalog().host("dgx-a100-8gpu");
    if (!host.ok()) return host.error();
    auto simr = sim::Simulation::create(test::test_cluster(size_t(hosts), host.value()));
    if (!simr.ok()) return simr.error();
    std::vector<sim::RankEndpoint> every, once, twice;
    for (int h = 0; h < hosts; ++h)
      for (int g = 0; g < 8; ++g) {
        every.push_back({size_t(h), Location::gpu(g)});
        if (h < period_hosts) once.push_back(every.back());
        if (h < 2 * period_hosts) twice.push_back(every.back());
      }
    const sim::DataPath dp = sim::mpi_data_path(sim::AllreduceJob{}.options);
    const auto adds = sim::ring_adds(host.value(), Location::gpu(0));
    const auto& pf = simr.value()->platform();
    const auto rr_every = sim::ring_routes(pf, every, dp);
    const sim::RingPeriod period{sim::ring_routes(pf, once, dp), sim::ring_routes(pf, twice, dp)};
    std::ostringstream o;
    o.precision(17);
    for (double bytes : sizes) {
      bool cf = true;
      const auto whole = sim::analytical_ring(rr_every, bytes, adds, &cf);
      if (cf) return Error::msg("a closed form where routes share links");
      const auto folded = sim::analytical_ring(rr_every, bytes, adds, nullptr, 0, &period);
      o << bytes << ' ' << whole.seconds << ' ' << folded.seconds << ' ' << whole.simulated_messages << ' '
        << folded.simulated_messages << '\n';
    }
    return o.str();
  });
  REQUIRE(r.ok());
  std::vector<FoldRow> out;
  std::istringstream in(r.value());
  for (FoldRow f; in >> f.bytes >> f.whole >> f.folded >> f.whole_timed >> f.folded_timed;)
    out.push_back(f);
  REQUIRE(out.size() == sizes.size());
  return out;
}

} // namespace

TEST_CASE("a ring of one segment size on shared links folded onto two hosts equals it on every rank", "[fabric][fold]")
{
  // DGX A100 hosts x 8 GPU ranks (their hops share PCIe links: message by message), latency- to bandwidth-bound, one
  // segment size each, folded onto the first two hosts' ranks (checked against four): measured equal to the bit on
  // every row; bounded at 1e-12. Two segment sizes are not folded (the whole ring's time and messages).
  for (int hosts : {8, 12, 32}) {
    const int n = 8 * hosts;
    const auto rows = dgx_folds(hosts, 2, {4.0 * n * 9, 4.0 * n * 1024, 4.0 * n * 65536, 4.0 * n * 1024 + 4});
    for (const FoldRow& f : rows) {
      INFO(n << " ranks, " << f.bytes << " bytes: every rank " << f.whole << " s, folded " << f.folded << " s, "
             << f.folded_timed << " messages timed");
      REQUIRE(f.whole > 0);
      if (collectives::ring_segment_sizes(f.bytes, n).one_size()) {
        CHECK(std::abs(f.folded / f.whole - 1) <= 1e-12);
        CHECK(f.folded_timed <= 2 * uint64_t(n - 1) * 48 + 2 * collectives::ring_steady_tries_messages(32, n));
      } else {
        CHECK(f.folded == f.whole);
        CHECK(f.folded_timed == f.whole_timed);
      }
    }
  }
}

TEST_CASE("a ring folded onto a period its ties do not repeat falls back to every rank", "[fabric][fold]")
{
  // On DGX A100 rings the messages that tie on shared links settle into a pattern of two hosts: a fold onto three
  // hosts differs from the whole ring (measured up to 0.26 %), and from a fold onto six. That disagreement sends the
  // ring whole: the result is the whole ring's, with both folds' messages timed on top. Where four hosts do not
  // divide the ring (6 and 10 hosts), the two-host period cannot be checked and is not used.
  for (int hosts : {12, 24}) {
    const int n = 8 * hosts;
    const std::vector<double> sizes{4.0 * n * 1024, 4.0 * n * 65536};
    for (const FoldRow& f : dgx_folds(hosts, 3, sizes)) {
      INFO(n << " ranks, " << f.bytes << " bytes, period of three hosts: every rank " << f.whole << " s, folded "
             << f.folded << " s, " << f.folded_timed << " messages timed");
      CHECK(f.folded == f.whole);
      CHECK(f.folded_timed > f.whole_timed);
    }
  }
  for (int hosts : {6, 10})
    for (const FoldRow& f : dgx_folds(hosts, 2, {4.0 * 8 * hosts * 1024})) {
      CHECK(f.folded == f.whole);
      CHECK(f.folded_timed == f.whole_timed);
    }
}
