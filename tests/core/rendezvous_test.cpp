// Rendezvous keys and the local table's TensorFlow semantics.
#include "core/rendezvous/local_rendezvous.hpp"

#include <catch2/catch.hpp>

using namespace tp;
using namespace tp::rendezvous;

namespace {
ParsedKey key(const std::string& edge)
{
  return parse_key(create_key("/job:worker/replica:0/task:0/device:GPU:0", 0xabc,
                              "/job:ps/replica:0/task:0/device:CPU:0", edge))
      .value();
}
Tensor tensor(int64_t n)
{
  Tensor t;
  t.dtype = DataType::FLOAT;
  t.shape.dims = {n};
  return t;
}
} // namespace

TEST_CASE("Rendezvous keys parse into their five fields and round-trip", "[quick]")
{
  const std::string k = create_key("/job:worker/replica:0/task:1/device:GPU:0", 0x0f3a,
                                   "/job:ps/replica:0/task:0/device:CPU:0", "edge_42_grad/w", 3, 7);
  CHECK(k == "/job:worker/replica:0/task:1/device:GPU:0;0000000000000f3a;/job:ps/replica:0/task:0/"
             "device:CPU:0;edge_42_grad/w;3:7");
  auto p = parse_key(k);
  REQUIRE(p.ok());
  CHECK(p->src.job == "worker");
  CHECK(p->src.task == 1);
  CHECK(p->src.type == "GPU");
  CHECK(p->src_incarnation == 0x0f3a);
  CHECK(p->dst.task_name() == "/job:ps/replica:0/task:0");
  CHECK(p->edge_name == "edge_42_grad/w");
  CHECK(p->frame_id == 3);
  CHECK(p->iter_id == 7);
  CHECK_FALSE(p->src.same_address_space(p->dst));
}

TEST_CASE("Malformed keys are InvalidArgument errors naming the bad field", "[quick]")
{
  auto fields = parse_key("a;b;c");
  REQUIRE_FALSE(fields.ok());
  CHECK(fields.error().code == "InvalidArgument");
  auto dev = parse_key("/job:w/replica:0/task:x/device:CPU:0;1;/job:ps/replica:0/task:0/device:CPU:0;e;0:0");
  REQUIRE_FALSE(dev.ok());
  CHECK(dev.error().message().find("src_device") != std::string::npos);
  auto inc = parse_key("/job:w/replica:0/task:0/device:CPU:0;xyz;/job:ps/replica:0/task:0/device:CPU:0;e;0:0");
  REQUIRE_FALSE(inc.ok());
  CHECK(inc.error().message().find("src_incarnation") != std::string::npos);
  auto fr = parse_key("/job:w/replica:0/task:0/device:CPU:0;1;/job:ps/replica:0/task:0/device:TPU:0;e;0:0");
  REQUIRE_FALSE(fr.ok());
  CHECK(fr.error().message().find("dst_device") != std::string::npos);
  CHECK_FALSE(parse_key("/job:w/replica:0/task:0/device:CPU:0;1;/job:ps/replica:0/task:0/device:CPU:0;;0:0").ok());
  CHECK_FALSE(parse_key("/job:w/replica:0/task:0/device:CPU:0;1;/job:ps/replica:0/task:0/device:CPU:0;e;0").ok());
}

TEST_CASE("Send is passive, RecvAsync takes a parked tensor or waits for the Send", "[quick]")
{
  LocalRendezvous r;
  REQUIRE(r.send(key("a"), tensor(4), false).ok());
  CHECK(r.pending_sends() == 1);
  int got = 0;
  r.recv_async(key("a"), [&](Result<RecvOutcome> o) {
    REQUIRE(o.ok());
    got = int(o->tensor.shape.num_elements());
  });
  CHECK(got == 4);
  CHECK(r.pending_sends() == 0);
  // receiver first: it waits, the Send hands the tensor over synchronously
  bool dead = false;
  r.recv_async(key("b"), [&](Result<RecvOutcome> o) { dead = o.ok() && o->is_dead; });
  CHECK(r.pending_receivers() == 1);
  REQUIRE(r.send(key("b"), Tensor{}, true).ok());
  CHECK(dead);
  CHECK(r.pending_receivers() == 0);
}

TEST_CASE("Items of one key are FIFO, different keys do not mix", "[quick]")
{
  LocalRendezvous r;
  std::vector<int64_t> order;
  auto cb = [&](Result<RecvOutcome> o) { order.push_back(o->tensor.shape.num_elements()); };
  r.recv_async(key("k"), cb);
  r.recv_async(key("k"), cb);
  REQUIRE(r.send(key("other"), tensor(99), false).ok());
  REQUIRE(r.send(key("k"), tensor(1), false).ok());
  REQUIRE(r.send(key("k"), tensor(2), false).ok());
  CHECK(order == std::vector<int64_t>{1, 2});
  CHECK(r.pending_sends() == 1);
}

TEST_CASE("Abort fails pending receivers and every later call, cancel fails one waiter", "[quick]")
{
  LocalRendezvous r;
  std::string first, second, later;
  const uint64_t w1 = r.recv_async(key("x"), [&](Result<RecvOutcome> o) { first = o.ok() ? "ok" : o.error().code; });
  r.recv_async(key("y"), [&](Result<RecvOutcome> o) { second = o.ok() ? "ok" : o.error().code; });
  CHECK(r.cancel(w1));
  CHECK(first == "Cancelled");
  CHECK_FALSE(r.cancel(w1));
  r.start_abort(Error::status("Aborted", "step failed"));
  CHECK(second == "Aborted");
  CHECK_FALSE(r.send(key("z"), tensor(1), false).ok());
  r.recv_async(key("z"), [&](Result<RecvOutcome> o) { later = o.ok() ? "ok" : o.error().code; });
  CHECK(later == "Aborted");
}
