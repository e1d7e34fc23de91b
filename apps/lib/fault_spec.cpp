// Fault list of a scenario job (see fault_spec.hpp).
#include "apps/lib/fault_spec.hpp"

#include "core/common/number_rule.hpp"
#include "models/json_reader.hpp"
#include "models/network_models.hpp"

#include <cfloat>
#include <cmath>
#include <sstream>

namespace tp::frontend {

using json_input::fail;
using json_input::json;

namespace {

/// A time: a number of seconds, or a string "<number> <unit>" (s, ms, us, ns), or "forever" where allowed.
double read_time(json_input::Object& o, const std::string& key, double def, bool forever_ok)
{
  if (!o.has(key)) return def;
  const json& v = o.get(key);
  if (v.is_number()) {
    const double t = v.get<double>();
    if (!number_ok(t, 0, DBL_MAX)) fail(o.file(), o.field(key), "a time >= 0 (seconds)", v.dump()); // -0 too
    return t;
  }
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (forever_ok && s == "forever") return std::numeric_limits<double>::infinity();
    std::istringstream in(s);
    double x = 0;
    std::string unit;
    if (in >> x >> unit && !(in >> std::ws).good()) {
      auto si = models::to_si(x, unit, models::Dimension::TIME);
      if (si.ok() && number_ok(si.value(), 0, DBL_MAX)) return si.value();
    }
  }
  fail(o.file(), o.field(key),
       std::string("a time: seconds, or a string such as \"250 ms\"") + (forever_ok ? " or \"forever\"" : ""),
       v.dump());
}

} // namespace

sim::FaultPlan read_fault_plan(json_input::Object& job)
{
  sim::FaultPlan plan;
  const long seed = job.integer("seed", 0, std::numeric_limits<long>::max(), 1);
  plan.seed = uint64_t(seed);
  if (!job.has("faults")) return plan;
  const json& list = job.get("faults");
  if (!list.is_array()) fail(job.file(), job.field("faults"), "a list of fault objects", list.type_name());
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string path = job.field("faults") + "[" + std::to_string(i) + "]";
    if (!list[i].is_object()) fail(job.file(), path, "a fault object", list[i].dump());
    json_input::Object f(list[i], job.file(), path);
    sim::Fault x;
    x.where = path;
    const std::string type = f.str("type");
    bool known = false;
    for (const sim::FaultKind kind : sim::ALL_FAULT_KINDS)
      if (type == sim::to_string(kind)) {
        x.kind = kind;
        known = true;
      }
    if (!known) {
      const auto& names = models::fault_type_names();
      std::string one_of;
      for (size_t k = 0; k < names.size(); ++k)
        one_of += (k == 0 ? "" : k + 1 == names.size() ? " or " : ", ") + names[k];
      fail(f.file(), f.field("type"), one_of, "\"" + type + "\"");
    }
    x.step = int(f.integer("step", 1, 1000000, 1));
    x.at = read_time(f, "at", 0, false);
    switch (x.kind) {
    case sim::FaultKind::LINK_DOWN:
    case sim::FaultKind::PACKET_LOSS:
      x.host = f.str("host");
      x.nic = int(f.integer("nic", 0, 64, 0));
      x.duration = read_time(f, "duration", std::numeric_limits<double>::infinity(), true);
      if (x.kind == sim::FaultKind::PACKET_LOSS) {
        x.probability = f.number("probability", 0, 1);
        if (!(x.probability >= 0 && x.probability <= 1))
          fail(f.file(), f.field("probability"), "a probability per packet in [0, 1]", std::to_string(x.probability));
      }
      break;
    case sim::FaultKind::NO_RECEIVE:
      x.process = f.str("process");
      x.duration = read_time(f, "duration", std::numeric_limits<double>::infinity(), true);
      break;
    case sim::FaultKind::QP_ERROR:
    case sim::FaultKind::PROCESS_DEATH:
      x.process = f.str("process");
      break;
    case sim::FaultKind::HOST_DEATH:
      x.host = f.str("host");
      break;
    }
    if (!(x.duration > 0)) fail(f.file(), f.field("duration"), "a duration > 0", "0");
    f.finish();
    plan.faults.push_back(x);
  }
  return plan;
}

} // namespace tp::frontend
