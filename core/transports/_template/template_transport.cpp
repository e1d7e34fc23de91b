// The starting point of a new transport (see template_transport.hpp): the smallest Transport that compiles, with a
// record per receive and an error Status instead of a protocol.
#include "core/transports/_template/template_transport.hpp"

namespace tp::transports {

namespace {

class TemplateTransport : public Transport {
public:
  explicit TemplateTransport(const TaskContext& ctx) : ctx_(ctx) {}
  const char* name() const override { return "template"; }

  void start(std::function<void(Status)> done) override
  {
    // Bring up servers and listeners here (an rpc::RpcNode on ctx_.options.rpc_port, RDMA channels, ...).
    ctx_.runtime->post([done] { done(ok_status()); });
  }

  void recv_from_remote_async(int64_t step, const rendezvous::ParsedKey& key, const rendezvous::RecvArgs& args,
                              rendezvous::RecvCallback done) override
  {
    // One record per transfer and side: phases, copies and registrations go in as the protocol runs.
    TransferRecord rec;
    rec.transport = name();
    rec.side = Side::CONSUMER;
    rec.step = step;
    rec.key = key.full;
    rec.local_task = ctx_.task;
    rec.peer_task = key.src.task_name();
    rec.dst_location = args.dst_location.to_string();
    rec.t_start = rec.t_end = ctx_.runtime->now();
    const Error e = Error::status("Unimplemented", std::string(name()) + ": no protocol written yet");
    rec.ok = false;
    rec.error = e.message();
    if (ctx_.log) ctx_.log->add(rec);
    ctx_.runtime->post([done, e] { done(e); });
  }

private:
  TaskContext ctx_;
};

} // namespace

std::unique_ptr<Transport> make_template_transport(const TaskContext& ctx)
{
  return std::make_unique<TemplateTransport>(ctx);
}

std::vector<OptionKnob> template_option_knobs()
{
  return {{"template_example_switch", "template-example-switch", "template: what the switch changes", false,
           [](TransportOptions& o, bool v) { o.own<TemplateOptions>().example_switch = v; },
           [](const TransportOptions& o) { return o.of<TemplateOptions>().example_switch; }}};
}

TransportInfo template_transport_info()
{
  return {"template",
          "one line: what the transport is and whose implementation it models",
          /*needs_rdma=*/false,
          make_template_transport,
          "what the original implementation does when a transfer fails",
          template_option_knobs()};
}

} // namespace tp::transports
