// The one writer of Chrome trace-event JSON (chrome://tracing, Perfetto) that the training report (`tensorpath train
// --trace`, `run --trace`) and the replay (`tensorpath replay --chrome`) write through: processes and tracks named on
// first use, complete spans ("X") and async span pairs ("b"/"e"), times given in seconds and written in
// microseconds, and counters ("C"). Tests: tests/traces/chrome_trace_writer_test.cpp.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace tp::traces {

class ChromeTraceWriter {
public:
  /// The process named `name`: numbered from 1 in the order of first use, its name written then.
  int process(const std::string& name);
  /// Where the process `pid` sorts among the processes (Perfetto orders by it).
  void sort_process(int pid, int index);
  /// The track named `name` in process `pid`: numbered from 1 over all processes in the order of first use.
  int track(int pid, const std::string& name);
  /// The track named `name` with one number in every process named so far (for processes shown side by side).
  int shared_track(const std::string& name);

  /// A complete span ("X"): `start` and `duration` in seconds.
  void span(int pid, int tid, const std::string& name, const std::string& cat, double start, double duration,
            nlohmann::json args);
  /// An async span ("b" with its args, then "e"), for spans that overlap on one track; each pair gets the next id.
  void async_span(int pid, int tid, const std::string& name, const std::string& cat, double start, double end,
                  nlohmann::json args);

  /// A counter sample ("C"): from `time` (seconds) on, series `series` of the counter `name` in process `pid` is
  /// `value` (Perfetto draws one track per counter name and process).
  void counter(int pid, const std::string& name, const std::string& series, double time, double value);

  /// The document: the events in the order written, milliseconds as display unit, and `other_data` (when not
  /// null) as "otherData".
  std::string text(const nlohmann::json& other_data = nullptr) const;

private:
  nlohmann::json events_ = nlohmann::json::array();
  std::map<std::string, int> pid_of_;
  std::map<std::pair<int, std::string>, int> tid_of_;
  std::map<std::string, int> shared_tid_of_;
  uint64_t next_async_id_ = 1;
};

} // namespace tp::traces
