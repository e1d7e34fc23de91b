// The device contract suite (tests/device/device_contract_cases.hpp) on the simulated NIC (sim/sim_device): both
// ends are processes of one simulation on the synthetic test cluster (tests/sim/test_cluster.hpp); run() runs the
// simulation until it is idle, and times are simulated times.
#include "tests/sim/test_cluster.hpp"

#include "tests/device/device_pair.hpp"

#include <memory>

namespace tp::test {
namespace {

class SimPair final : public DevicePair {
public:
  explicit SimPair(const PairOptions& o) : o_(o), p_(verbs_options(o))
  {
    backend = "the simulated device";
    data[0] = p_.bufa.data;
    data[1] = p_.bufb.data;
    addr[0] = p_.bufa.addr;
    addr[1] = p_.bufb.addr;
    size = p_.bufb.size;
    mr[0] = p_.mra;
    mr[1] = p_.mrb;
    p_.cqb->set_handler([this](const verbs::WorkCompletion& wc) {
      p_.wcb.push_back(wc);
      p_.tb.push_back(p_.b->runtime().now());
      if (hash_len_) hashes_.push_back(hash(p_.bufb.data + hash_off_, hash_len_));
    });
  }
  Status post_send(End e, const verbs::SendWr& wr) override { return qp(e).post_send(wr); }
  Status post_recv(End e, const verbs::RecvWr& wr) override { return qp(e).post_recv(wr); }
  Status post_recv_after(End e, double seconds, const verbs::RecvWr& wr) override
  {
    process(e).runtime().after(seconds, [this, e, wr] { REQUIRE(qp(e).post_recv(wr).ok()); });
    return ok_status();
  }
  Status modify(End e, const verbs::QpAttr& attr, verbs::QpAttrMask mask) override { return qp(e).modify(attr, mask); }
  verbs::QpState state(End e) override { return qp(e).state(); }
  Status bring_up(End e, const verbs::RcConnectOptions& rc) override
  {
    return verbs::bring_up_rc_qp(qp(e), e == End::A ? 100 : 200, e == End::A ? p_.endpoint_b() : p_.endpoint_a(), rc);
  }
  Result<verbs::MemoryRegion> reg_mr(End e, uint64_t a, uint64_t len, verbs::Access access) override
  {
    return process(e).device().reg_mr(a, len, access);
  }
  Status dereg_mr(End e, const verbs::MemoryRegion& m) override { return process(e).device().dereg_mr(m); }
  Status watch_memory(End e, uint64_t a, uint64_t len) override
  {
    return process(e).device().watch_memory(a, len, [this, e] { fired_ = process(e).runtime().now(); });
  }
  double watch_fired_at() override { return fired_; }
  void hash_at_completion(End e, uint64_t off, uint64_t len) override
  {
    REQUIRE(e == End::B);
    hash_off_ = off;
    hash_len_ = len;
  }
  void run(size_t, size_t) override
  {
    p_.sim->run();
    wca = p_.wca;
    wcb = p_.wcb;
    ta = p_.ta;
    tb = p_.tb;
    hb = hashes_;
  }
  const char* lacks(Need) const override { return nullptr; }

private:
  static VerbsPairOptions verbs_options(const PairOptions& o)
  {
    VerbsPairOptions v;
    v.buffer_bytes = o.buffer_bytes;
    v.loc_b = o.loc_b;
    v.access_b = o.access_b;
    v.connect = o.connect;
    v.rc = o.rc;
    return v;
  }
  verbs::QueuePair& qp(End e) { return e == End::A ? *p_.qpa : *p_.qpb; }
  sim::SimProcess& process(End e) { return e == End::A ? *p_.a : *p_.b; }

  PairOptions o_;
  VerbsPair p_;
  double fired_ = -1;
  uint64_t hash_off_ = 0, hash_len_ = 0;
  std::vector<uint64_t> hashes_;
};

Result<std::unique_ptr<DevicePair>> make_device_pair(const PairOptions& options)
{
  return std::unique_ptr<DevicePair>(std::make_unique<SimPair>(options));
}
} // namespace

} // namespace tp::test

#define DEVICE_UNDER_TEST "simulated device"
#define DEVICE_TAGS "[quick]"
#include "tests/device/device_contract_cases.hpp"
