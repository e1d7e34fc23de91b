// Pinning the emulator's threads: round-robin over the allowed cores while on, nothing while off, the report says
// when threads share cores, and a scoped pin gives the thread its cores back.
#include "emulator/core_pinning.hpp"

#include <catch2/catch.hpp>

#include <pthread.h>
#include <sched.h>

#include <thread>

using namespace tp;

namespace {

/// The calling thread's CPUs; empty if they cannot be read. No Catch2 assertion here: it runs on threads of the
/// test (Catch2's assertions are for the test's own thread), which check the result afterwards.
std::vector<int> my_cores()
{
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

} // namespace

TEST_CASE("pinning: threads take the allowed cores round-robin while on, none while off", "[quick]")
{
  const std::vector<int> cores = emu::allowed_cores();
  REQUIRE_FALSE(cores.empty());
  emu::set_thread_pinning(false);
  int off = 0;
  std::thread([&] { off = emu::pin_this_thread(); }).join();
  CHECK(off == -1);
  CHECK(emu::pinning_report().describe() == "threads not pinned");

  emu::set_thread_pinning(true);
  const int n = int(cores.size()) + 1; // one more thread than cores: the first core twice
  std::vector<int> got(static_cast<size_t>(n), -2);
  std::vector<std::vector<int>> affinity(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k)
    std::thread([&, k] {
      got[size_t(k)] = emu::pin_this_thread();
      affinity[size_t(k)] = my_cores();
    }).join();
  for (int k = 0; k < n; ++k) {
    CHECK(got[size_t(k)] == cores[size_t(k) % cores.size()]);
    CHECK(affinity[size_t(k)] == std::vector<int>{got[size_t(k)]});
  }
  const auto rep = emu::pinning_report();
  CHECK(rep.threads == n);
  CHECK(rep.cores == int(cores.size()));
  CHECK(rep.shared());
  CHECK(rep.describe().find("share cores") != std::string::npos);
  emu::set_thread_pinning(false);
}

TEST_CASE("pinning: the starting thread chooses the cores, so they follow the start order", "[quick]")
{
  const std::vector<int> cores = emu::allowed_cores();
  emu::set_thread_pinning(true);
  // Cores reserved in order by the starter; the threads then pin themselves in any order.
  const int n = 2 * int(cores.size());
  std::vector<int> reserved;
  for (int k = 0; k < n; ++k)
    reserved.push_back(emu::reserve_core());
  std::vector<std::vector<int>> affinity(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int k = n - 1; k >= 0; --k) // started last-first
    threads.emplace_back([&, k] {
      emu::pin_this_thread_to(reserved[size_t(k)]);
      affinity[size_t(k)] = my_cores();
    });
  for (auto& t : threads)
    t.join();
  for (int k = 0; k < n; ++k) {
    CHECK(reserved[size_t(k)] == cores[size_t(k) % cores.size()]);
    CHECK(affinity[size_t(k)] == std::vector<int>{reserved[size_t(k)]});
  }
  emu::set_thread_pinning(false);
  CHECK(emu::reserve_core() == -1);
}

TEST_CASE("pinning: asked for more threads than cores, it stays off and says why", "[quick]")
{
  const int cores = int(emu::allowed_cores().size());
  emu::set_thread_pinning(true, cores + 1);
  CHECK_FALSE(emu::thread_pinning());
  int got = 0;
  std::thread([&] { got = emu::pin_this_thread(); }).join();
  CHECK(got == -1);
  const std::string why = emu::pinning_report().describe();
  CHECK(why.find("threads not pinned: " + std::to_string(cores) + " core") == 0);
  CHECK(why.find(std::to_string(cores + 1) + " threads") != std::string::npos);
  emu::set_thread_pinning(true, cores);
  CHECK(emu::thread_pinning());
  emu::set_thread_pinning(false);
}

TEST_CASE("pinning: a scoped pin binds the thread, then gives it its cores back", "[quick]")
{
  if (emu::allowed_cores().size() < 2) {
    WARN("one allowed CPU: a pin cannot be told from no pin here");
    return;
  }
  std::vector<int> before, during, after;
  std::thread([&] {
    before = my_cores();
    emu::set_thread_pinning(true);
    {
      emu::ScopedPin pin;
      during = my_cores();
    }
    emu::set_thread_pinning(false);
    after = my_cores();
  }).join();
  REQUIRE(before.size() > 1);
  CHECK(during.size() == 1);
  CHECK(after == before);
}
