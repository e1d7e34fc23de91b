// Capacity questions over sweep rows: targets, filters, ranking by cost, bottlenecks, bad input.
#include "apps/lib/plan.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

using namespace tp;

namespace {

std::string rows_file(const std::string& text)
{
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tp-plan-" + std::to_string(::getpid()) + ".jsonl")).string();
  std::ofstream(path) << text;
  return path;
}

const char* const ROWS =
    R"({"point":0,"params":{"nic":"a","transport":"grpc"},"metrics":{"scaling_efficiency":0.95,"step_ms":100,"path_compute_ms":60,"path_network_ms":40}}
{"point":1,"params":{"nic":"b","transport":"grpc"},"metrics":{"scaling_efficiency":0.97,"step_ms":90,"path_compute_ms":60,"path_network_ms":30}}
{"point":2,"params":{"nic":"a","transport":"gdr"},"metrics":{"scaling_efficiency":0.80,"step_ms":130,"path_compute_ms":50,"path_network_ms":80}}
{"point":3,"params":{"nic":"c","transport":"gdr"},"error":"worker killed by signal 11"}
{"point":4,"params":{"nic":"c","transport":"grpc"},"metrics":{"scaling_efficiency":0.99,"step_ms":80}}
)";

double cost(const frontend::PlanRow& r)
{
  return r.param("nic") == "a" ? 40 : r.param("nic") == "b" ? 100 : 200;
}

} // namespace

TEST_CASE("plan: options that reach the target come first, cheapest first, each with its bottleneck", "[plan]")
{
  auto rows = frontend::read_plan_rows(rows_file(ROWS));
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 5);
  frontend::PlanQuery q;
  REQUIRE(frontend::parse_target("scaling_efficiency>=0.9", q).ok());
  auto opts = frontend::rank_options(rows.value(), q, cost);
  REQUIRE(opts.size() == 4);     // the error row is not an option
  CHECK(opts[0].row.point == 0); // cheapest that meets (40)
  CHECK(opts[1].row.point == 1); // 100
  CHECK(opts[2].row.point == 4); // 200
  CHECK(opts[3].row.point == 2); // does not meet
  CHECK_FALSE(opts[3].meets);
  CHECK(opts[0].bottleneck == "compute (60 %)");
  CHECK(opts[3].bottleneck == "network (62 %)");
  CHECK(opts[2].bottleneck.empty()); // no breakdown in that row
  const std::string table = frontend::plan_table(opts, q, 10);
  CHECK(table.find("3 reach scaling_efficiency >= 0.9") != std::string::npos);
  q.where = {{"transport", "gdr"}};
  opts = frontend::rank_options(rows.value(), q, cost);
  REQUIRE(opts.size() == 1);
  CHECK(frontend::plan_table(opts, q, 10).find("none; the closest") != std::string::npos);
}

TEST_CASE("plan: lower-is-better targets rank by the metric when nothing meets them", "[plan]")
{
  auto rows = frontend::read_plan_rows(rows_file(ROWS));
  REQUIRE(rows.ok());
  frontend::PlanQuery q;
  REQUIRE(frontend::parse_target("step_ms<50", q).ok());
  CHECK(q.op == "<");
  CHECK(q.value == 50);
  auto opts = frontend::rank_options(rows.value(), q, cost);
  REQUIRE(opts.size() == 4);
  CHECK(opts[0].row.point == 4); // 80 ms: the closest
  CHECK(opts[3].row.point == 2);
}

TEST_CASE("plan: bad targets and bad rows are refused with the reason", "[plan]")
{
  frontend::PlanQuery q;
  CHECK_FALSE(frontend::parse_target("scaling_efficiency", q).ok());
  CHECK_FALSE(frontend::parse_target(">=0.9", q).ok());
  CHECK_FALSE(frontend::parse_target("x>=fast", q).ok());
  const std::string path = rows_file("{\"point\":0}\nnot json\n");
  auto r = frontend::read_plan_rows(path);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find(path) != std::string::npos);
  CHECK(r.error().message().find("line 2") != std::string::npos);
}

TEST_CASE("scripts/plot.py draws PNGs from sweep rows and refuses a bad rows file", "[plot]")
{
  if (std::system("/usr/bin/python3 -c 'import matplotlib' > /dev/null 2>&1") != 0) {
    WARN("skipped: Debian's python3-matplotlib is not installed (scripts/setup.sh installs it)");
    return;
  }
  const std::string rows = rows_file(ROWS);
  const std::string png = rows + ".png";
  const std::string plot = std::string(TENSORPATH_SOURCE_DIR) + "/scripts/plot.py";
  for (const std::string kind : {"bars --x nic --series transport --y step_ms", "breakdown --x transport"}) {
    std::filesystem::remove(png);
    const std::string cmd = "/usr/bin/python3 " + plot + " " + kind.substr(0, kind.find(' ')) + " " + rows +
                            kind.substr(kind.find(' ')) + " --out " + png + " > /dev/null 2>&1";
    INFO(cmd);
    CHECK(std::system(cmd.c_str()) == 0);
    CHECK(std::filesystem::file_size(png) > 1000);
  }
  const std::string bad = rows_file("{\"point\": 0, \"metrics\": {}}\n{oops\n");
  CHECK(std::system(("/usr/bin/python3 " + plot + " bars " + bad + " --out " + png + " > /dev/null 2>&1").c_str()) !=
        0);
}
