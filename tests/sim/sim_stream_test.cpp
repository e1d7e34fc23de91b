// Byte streams between simulated processes: connect, ordered delivery, refusal, close.
#include "sim/simulation.hpp"
#include "test_cluster.hpp"

using namespace tp;

TEST_CASE("Messages arrive in order, after the stack and wire latencies", "[quick]")
{
  auto s = sim::Simulation::create(test::test_cluster(2)).value();
  auto* a = s->add_process("node0", "a").value();
  auto* b = s->add_process("node1", "b").value();
  std::vector<std::string> got;
  std::vector<double> at;
  StreamPtr server;
  REQUIRE(b->streams()
              .listen(5000,
                      [&](StreamPtr c) {
                        server = c;
                        c->set_receive_handler([&](Message m) {
                          got.emplace_back(m.bytes.begin(), m.bytes.end());
                          at.push_back(b->runtime().now());
                        });
                      })
              .ok());
  CHECK_FALSE(b->streams().listen(5000, [](StreamPtr) {}).ok()); // port taken
  double connected = -1;
  a->streams().connect("b", 5000, [&](Result<StreamPtr> r) {
    REQUIRE(r.ok());
    connected = a->runtime().now();
    StreamPtr c = r.value();
    Message big;
    big.bytes = {'b', 'i', 'g'};
    big.extra_wire_bytes = 10 << 20; // a simulated 10 MiB payload behind three real bytes
    c->send(big);
    c->send(Message{{'s', 'm', 'a', 'l', 'l'}, 0});
  });
  s->run();
  const auto h = test::test_host();
  CHECK(connected >= 2 * h.tcp.stack_latency);
  REQUIRE(got == std::vector<std::string>{"big", "small"});
  CHECK(at[0] - connected > double(10 << 20) / h.nics[0].nic.wire_goodput()); // the virtual payload costs wire time
  CHECK(at[1] >= at[0]);
}

TEST_CASE("Connecting to a port nobody listens on is refused, close reaches the peer", "[quick]")
{
  auto s = sim::Simulation::create(test::test_cluster(2)).value();
  auto* a = s->add_process("node0", "a").value();
  auto* b = s->add_process("node1", "b").value();
  std::string refused;
  a->streams().connect("b", 1234, [&](Result<StreamPtr> r) { refused = r.ok() ? "connected?" : r.error().message(); });
  std::string unknown;
  a->streams().connect("nobody", 1234, [&](Result<StreamPtr> r) { unknown = r.ok() ? "?" : r.error().message(); });
  bool closed = false;
  StreamPtr accepted; // the server keeps its end of the connection (a dropped end is gone, with its handlers)
  REQUIRE(b->streams()
              .listen(7,
                      [&](StreamPtr c) {
                        accepted = c;
                        c->set_close_handler([&](Status st) { closed = st.ok(); });
                      })
              .ok());
  a->streams().connect("b", 7, [&](Result<StreamPtr> r) {
    REQUIRE(r.ok());
    r.value()->close();
    r.value()->send(Message{{1}, 0}, [&](Status st) { CHECK_FALSE(st.ok()); });
  });
  s->run();
  CHECK(refused.find("connection refused") != std::string::npos);
  CHECK(unknown.find("nobody") != std::string::npos);
  CHECK(closed);
}
