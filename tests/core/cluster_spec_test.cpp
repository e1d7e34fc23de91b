// transports::ClusterSpec: copies share one map (every task of a job holds the job's), and a change to one copy is
// its own (copy on write).
#include "core/transports/transport.hpp"

#include <catch2/catch.hpp>

using tp::transports::ClusterSpec;

TEST_CASE("ClusterSpec copies read the same entries and a change to one leaves the others", "[quick]")
{
  ClusterSpec a{{"/job:worker/replica:0/task:0", "w0"}};
  a["/job:ps/replica:0/task:0"] = "ps0";
  const ClusterSpec b = a; // shares a's map
  ClusterSpec c = a;
  CHECK(b.size() == 2);
  CHECK(b.at("/job:ps/replica:0/task:0") == "ps0");
  CHECK(&*b.find("/job:ps/replica:0/task:0") == &*a.find("/job:ps/replica:0/task:0")); // one map, not a copy
  c["/job:worker/replica:0/task:1"] = "w1";                                            // c copies before it changes
  c["/job:ps/replica:0/task:0"] = "elsewhere";
  CHECK(c.size() == 3);
  CHECK(a.size() == 2);
  CHECK(b.size() == 2);
  CHECK(a.at("/job:ps/replica:0/task:0") == "ps0");
  CHECK(b.count("/job:worker/replica:0/task:1") == 0);
  CHECK(c.at("/job:ps/replica:0/task:0") == "elsewhere");
  const ClusterSpec empty;
  CHECK(empty.empty());
  CHECK(empty.find("x") == empty.end());
}
