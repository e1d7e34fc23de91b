// Chrome trace-event JSON (see chrome_trace_writer.hpp).
#include "traces/chrome_trace_writer.hpp"

namespace tp::traces {

using json = nlohmann::json;

int ChromeTraceWriter::process(const std::string& name)
{
  auto it = pid_of_.find(name);
  if (it != pid_of_.end()) return it->second;
  const int id = int(pid_of_.size()) + 1;
  pid_of_[name] = id;
  events_.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", id}, {"args", {{"name", name}}}});
  return id;
}

void ChromeTraceWriter::sort_process(int pid, int index)
{
  events_.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"args", {{"sort_index", index}}}});
}

int ChromeTraceWriter::track(int pid, const std::string& name)
{
  auto key = std::make_pair(pid, name);
  auto it = tid_of_.find(key);
  if (it != tid_of_.end()) return it->second;
  const int id = int(tid_of_.size()) + 1;
  tid_of_[key] = id;
  events_.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", id}, {"args", {{"name", name}}}});
  return id;
}

int ChromeTraceWriter::shared_track(const std::string& name)
{
  auto it = shared_tid_of_.find(name);
  if (it != shared_tid_of_.end()) return it->second;
  const int id = int(shared_tid_of_.size()) + 1;
  shared_tid_of_[name] = id;
  for (int pid = 1; pid <= int(pid_of_.size()); ++pid)
    events_.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", id}, {"args", {{"name", name}}}});
  return id;
}

void ChromeTraceWriter::span(int pid, int tid, const std::string& name, const std::string& cat, double start,
                             double duration, json args)
{
  events_.push_back({{"ph", "X"},
                     {"name", name},
                     {"cat", cat},
                     {"pid", pid},
                     {"tid", tid},
                     {"ts", start * 1e6},
                     {"dur", duration * 1e6},
                     {"args", std::move(args)}});
}

void ChromeTraceWriter::async_span(int pid, int tid, const std::string& name, const std::string& cat, double start,
                                   double end, json args)
{
  const uint64_t id = next_async_id_++;
  events_.push_back({{"ph", "b"},
                     {"name", name},
                     {"cat", cat},
                     {"id", id},
                     {"pid", pid},
                     {"tid", tid},
                     {"ts", start * 1e6},
                     {"args", std::move(args)}});
  events_.push_back(
      {{"ph", "e"}, {"name", name}, {"cat", cat}, {"id", id}, {"pid", pid}, {"tid", tid}, {"ts", end * 1e6}});
}

void ChromeTraceWriter::counter(int pid, const std::string& name, const std::string& series, double time, double value)
{
  events_.push_back({{"ph", "C"}, {"name", name}, {"pid", pid}, {"ts", time * 1e6}, {"args", {{series, value}}}});
}

std::string ChromeTraceWriter::text(const json& other_data) const
{
  json doc = {{"traceEvents", events_}, {"displayTimeUnit", "ms"}};
  if (!other_data.is_null()) doc["otherData"] = other_data;
  return doc.dump();
}

} // namespace tp::traces
