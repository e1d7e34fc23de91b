// Transfer records: wait() is the unattributed time, and the JSON and CSV writers produce parseable output
// with every record, including text that needs escaping.
#include "core/transports/transfer_record.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sstream>

using namespace tp::transports;

namespace {

TransferRecord sample(const std::string& error)
{
  TransferRecord r;
  r.transport = "verbs_v2";
  r.side = Side::CONSUMER;
  r.step = 7;
  r.key = "/job:ps/replica:0/task:0/device:CPU:0;1;/job:worker/replica:0/task:0/device:GPU:0;w\"1;0:0";
  r.local_task = "/job:worker/replica:0/task:0";
  r.peer_task = "/job:ps/replica:0/task:0";
  r.bytes = 4096;
  r.src_location = "numa0";
  r.dst_location = "gpu0";
  r.ok = error.empty();
  r.error = error;
  r.t_start = 1.0;
  r.t_end = 1.5;
  r.add(Phase::COPY, 0.1);
  r.add(Phase::WIRE, 0.25);
  r.copies = 2;
  r.registrations = 1;
  return r;
}

/// Splits one CSV line into fields (RFC 4180 quoting).
std::vector<std::string> csv_fields(const std::string& line)
{
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

} // namespace

TEST_CASE("transfer record wait is the time outside the phases", "[records]")
{
  const auto r = sample("");
  CHECK(r.total() == Approx(0.5));
  CHECK(r.wait() == Approx(0.15));
}

TEST_CASE("transfer log JSON parses and keeps every field", "[records]")
{
  TransferLog log;
  log.add(sample(""));
  log.add(sample("remote access error on \"rkey\" 0x1234"));
  const auto j = nlohmann::json::parse(log.to_json());
  REQUIRE(j.size() == 2);
  CHECK(j[0]["key"] == sample("").key);
  CHECK(j[0]["ok"] == true);
  CHECK(j[1]["ok"] == false);
  CHECK(j[1]["error"] == "remote access error on \"rkey\" 0x1234");
  CHECK(j[0]["seconds"]["wire"].get<double>() == Approx(0.25));
  CHECK(j[0]["seconds"]["wait"].get<double>() == Approx(0.15));
  CHECK(j[0]["copies"] == 2);
  CHECK(j[0]["registrations"] == 1);
}

TEST_CASE("transfer log CSV has one row per record with the header's columns", "[records]")
{
  TransferLog log;
  log.add(sample(""));
  log.add(sample("bad \"rkey\", peer said no"));
  const auto header = csv_fields(TransferLog::csv_header().substr(0, TransferLog::csv_header().size() - 1));
  std::istringstream in(log.to_csv());
  std::string line;
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line))
    rows.push_back(csv_fields(line));
  REQUIRE(rows.size() == 2);
  for (const auto& row : rows)
    REQUIRE(row.size() == header.size());
  auto col = [&](const std::string& name) {
    return size_t(std::find(header.begin(), header.end(), name) - header.begin());
  };
  CHECK(rows[0][col("key")] == sample("").key);
  CHECK(rows[1][col("error")] == "bad \"rkey\", peer said no");
  CHECK(rows[1][col("ok")] == "0");
  CHECK(std::stod(rows[0][col("wait_s")]) == Approx(0.15));
  CHECK(rows[0][col("copies")] == "2");
}

TEST_CASE("transfer record sides print as consumer and producer and parse back", "[records]")
{
  CHECK(std::string(to_string(Side::CONSUMER)) == "consumer");
  CHECK(std::string(to_string(Side::PRODUCER)) == "producer");
  for (Side s : {Side::CONSUMER, Side::PRODUCER}) {
    auto back = parse_side(to_string(s));
    REQUIRE(back.ok());
    CHECK(back.value() == s);
  }
  auto bad = parse_side("Consumer");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message() == "side: expected consumer or producer, got \"Consumer\"");
  TransferLog log;
  TransferRecord r = sample("");
  r.side = Side::PRODUCER;
  log.add(r);
  CHECK(log.to_json().find("\"side\": \"producer\"") != std::string::npos);
  CHECK(log.to_csv().rfind("verbs_v2,producer,7,", 0) == 0);
}
