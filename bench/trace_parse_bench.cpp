// Trace parsing speed: a synthetic 50 MB TF timeline (the size of a few hundred thousand op events) parsed by the
// strict parser every user file goes through (core/common/json_strict.hpp: a key given twice is refused) against
// nlohmann's json::parse in the same run, and the whole TF timeline reader against both. Goal: the strict parser
// within 10 % of json::parse.
#include "core/common/json_strict.hpp"
#include "traces/trace.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

using namespace tp;

namespace {

template <class F> double best_of(int runs, F&& f)
{
  double best = 1e300;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

} // namespace

int main()
{
  std::string text = R"({"traceEvents": [)";
  for (int d = 0; d < 4; ++d)
    text += R"({"ph": "M", "name": "process_name", "pid": )" + std::to_string(d) +
            R"(, "args": {"name": "/job:worker/replica:0/task:0/device:GPU:)" + std::to_string(d) + R"( Compute"}},)";
  size_t events = 0;
  while (text.size() < 50u << 20) {
    text += R"({"ph": "X", "cat": "Op", "name": "Conv2D_)" + std::to_string(events) + R"(", "pid": )" +
            std::to_string(events % 4) + R"(, "tid": 0, "ts": )" + std::to_string(1000 + 3 * events) +
            R"(, "dur": 2.5, "args": {"name": "conv)" + std::to_string(events) + R"(", "op": "Conv2D"}},)";
    ++events;
  }
  text.back() = ']';
  text += "}";
  std::printf("Trace parsing: a %.1f MB TF timeline, %zu op events (best of 3)\n\n", double(text.size()) / 1e6, events);
  size_t n1 = 0, n2 = 0, n3 = 0;
  const double plain = best_of(3, [&] { n1 = nlohmann::json::parse(text)["traceEvents"].size(); });
  const double strict = best_of(3, [&] { n2 = json_strict::parse(text)["traceEvents"].size(); });
  const double reader = best_of(3, [&] {
    auto t = traces::parse_tf_timeline(text, "bench.json");
    n3 = t.ok() ? t->ops.size() : 0;
  });
  if (n1 != n2 || n3 != events) {
    std::fprintf(stderr, "mismatch: %zu %zu %zu\n", n1, n2, n3);
    return 1;
  }
  std::printf("  json::parse             %7.2f s  (reference)\n", plain);
  std::printf("  json_strict::parse      %7.2f s  %.2fx\n", strict, strict / plain);
  std::printf("  parse_tf_timeline       %7.2f s  %.2fx (strict parse + reading every event)\n", reader,
              reader / plain);
  return 0;
}
