// The registry of network models (see network_models.hpp).
#include "models/network_models.hpp"

#include "core/common/suggest.hpp"

#include <algorithm>

namespace tp::models {

const std::vector<NetworkModelInfo>& network_models()
{
  static const std::vector<NetworkModelInfo> all = {
      {"flow",
       "SimGrid's max-min flow model (CM02, latency and bandwidth factors 1): every transfer a flow, links shared "
       "fairly",
       "bandwidth sharing on every link of the route (NIC, PCIe, QPI, switch ports), latency, the transports' own "
       "protocol costs",
       "switch buffers, drops, retransmission time-outs, PFC pauses, ECN and DCQCN: a port never overflows",
       {"perftest", "pcie_copy", "transfer", "training", "allreduce", "incast", "roce"},
       {"link_down", "packet_loss", "no_receive", "qp_error", "process_death", "host_death"},
       "into training jobs: the transports run on the simulated NICs, links and processes, so a port goes down or "
       "drops packets and RC and the simulated TCP resend, a receiver posts no WRs, QPs fail, processes and hosts die "
       "(docs/faults.md)",
       ""},
      {"analytical",
       "the ring allreduce as a calendar of messages (closed form where no two ranks' routes share a link)",
       "each message's latency and bandwidth on its route; contention only where routes share links",
       "everything the flow model misses, and the transports' protocol steps (handshakes, GPU kernels)",
       {"allreduce", "training"},
       {},
       "its rings are a calendar of messages that bypasses the simulated NICs, links and QPs, so a fault has nothing "
       "to act on; with faults, a training job's collectives run on network model flow: collective_mode \"protocol\", "
       "the default",
       ""},
      {"nccl",
       "NCCL's collectives in closed form (models/nccl): its tuning model's algorithm and protocol, each step's "
       "latency, and the busiest link of the fabric (rails, leaves, spines) bounding the bandwidth",
       "NVLink and NIC rates, NCCL's protocols and channels, multi-tier fabrics' oversubscription and ECMP placement",
       "every dynamic effect: flows are placed, not simulated (no queueing, no congestion control)",
       {"collective", "data_parallel"},
       {},
       "a closed form has no messages to drop, no port to take down and no process to kill",
       ""},
      {"tcp-incast",
       "TCP incast through one drop-tail switch port: every segment at the port, TCP NewReno + SACK at each sender "
       "(models/congestion/tcp_incast); in a parameter-server training job, the flow model plus each gRPC burst's "
       "loss delay at its receiver's port (sim/incast_ports)",
       "the port's buffer and drop-tail losses, SACK loss detection and fast recovery, the retransmission time-out "
       "(minimum, back-off), slow start's overshoot (restarted after an idle RTO, as Linux does)",
       "every other link (the senders' and the ACKs' paths are delays), ECN, PFC; in training, the other traffic at "
       "the port and the switch's shared buffer; it runs incast jobs and ps-mode training jobs",
       {"incast", "training"},
       {},
       "not yet: its only losses are the switch port's own drop-tail losses",
       ""},
      {"roce",
       "RoCE congestion as a fluid model stepped at one frame time: switch buffers with PFC (the HPCC switch MMU's "
       "per-ingress accounting, dynamic threshold, headroom), ECN marking by RED at egress, DCQCN at every sender "
       "(models/congestion/roce_fabric); in an allreduce training job, each ring allreduce (timed on the analytical "
       "fabric) also waits what the model finds for a ring of its size on the job's leaf-spine RoCE fabric beyond "
       "max-min",
       "queues at every switch port, PAUSE/RESUME spreading upstream hop by hop (head-of-line blocking of flows that "
       "do not cross the hot port), ECN marks, CNPs and DCQCN's rate decreases, fast recovery, additive and hyper "
       "increase",
       "packets: a port's FIFO holds fluid chunks (a frame may be split, a pause may fall inside one); losses (no "
       "go-back-N: a drop is an error); it runs the roce job's five fabrics only (incast, victim, converge, "
       "longflows, a leaf-spine allreduce); in training, the ring's own traffic only, on that fabric rather than the "
       "cluster's",
       {"roce", "training"},
       {},
       "PFC keeps its fabric lossless (a drop ends the run with an error), and it has no link to take down or "
       "process to kill",
       ""},
      {"ns3",
       "packet-level TCP through ns-3",
       "every packet on every link, ns-3's TCP",
       "",
       {},
       {},
       "it does not run in this build",
       "SimGrid 3.32's ns-3 binding (Debian's libsimgrid, linked with ns-3 3.37) aborts on concurrent TCP flows in "
       "this build (\"total_bytes is not sent_bytes\", segmentation faults), and takes routes of one link only; "
       "the packet-level reference is the standalone program validation/ns3/incast_reference "
       "(docs/network-models.md)"},
  };
  return all;
}

const std::vector<std::string>& fault_type_names()
{
  static const std::vector<std::string> all = {"link_down", "packet_loss",   "no_receive",
                                               "qp_error",  "process_death", "host_death"};
  return all;
}

namespace {

std::string joined(const std::vector<std::string>& v, const std::string& quote = "")
{
  std::string s;
  for (const auto& x : v)
    s += (s.empty() ? "" : ", ") + quote + x + quote;
  return s;
}

bool has(const std::vector<std::string>& v, const std::string& x)
{
  return std::find(v.begin(), v.end(), x) != v.end();
}

} // namespace

std::string injected_faults_text(const NetworkModelInfo& m)
{
  return (m.fault_types.empty() ? std::string("none") : joined(m.fault_types)) +
         (m.faults.empty() ? "" : " (" + m.faults + ")");
}

Status check_faults_supported(const std::string& model, const std::string& job, const std::vector<std::string>& types)
{
  const NetworkModelInfo* found = nullptr;
  for (const auto& m : network_models())
    if (m.name == model) found = &m;
  if (!found)
    return Error::at("", "network_model", "a registered network model (" + network_model_names() + ")",
                     "\"" + model + "\"");
  for (size_t i = 0; i < types.size(); ++i) {
    if (has(found->fault_types, types[i])) continue;
    // The models that would inject it into this kind of job.
    std::vector<std::string> fit;
    for (const auto& m : network_models())
      if (m.unavailable.empty() && has(m.jobs, job) && has(m.fault_types, types[i])) fit.push_back(m.name);
    const std::string instead =
        fit.empty() ? "no registered network model injects " + types[i] + " into a " + job + " job"
                    : "network model " + joined(fit, "\"") + " injects " + types[i] + " into a " + job + " job";
    return Error::at("", "faults[" + std::to_string(i) + "].type",
                     "a fault that network model \"" + model + "\" injects: it injects " +
                         injected_faults_text(*found) + "; " + instead,
                     "\"" + types[i] + "\" on network model \"" + model + "\"");
  }
  return ok_status();
}

std::string network_model_names()
{
  std::string s;
  for (const auto& m : network_models())
    s += (s.empty() ? "" : ", ") + m.name;
  return s;
}

Result<std::vector<std::string>> network_model_list(const std::string& list, const std::string& job,
                                                    const std::string& field)
{
  const Error bad = Error::at("", field, "a comma-separated list of network models (" + network_model_names() + ")",
                              "\"" + list + "\"");
  if (list.empty() || list.back() == ',') return bad;
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = list.find(',', start);
    const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) return bad;
    auto m = network_model_for(item, job, field);
    if (!m.ok()) return m.error();
    out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

Result<const NetworkModelInfo*> network_model_for(const std::string& name, const std::string& job,
                                                  const std::string& field)
{
  std::vector<std::string> names;
  const NetworkModelInfo* found = nullptr;
  for (const auto& m : network_models()) {
    names.push_back(m.name);
    if (m.name == name) found = &m;
  }
  if (!found) return Error::at("", field, one_of_names(name, names), unknown_name(name, names));
  if (!found->unavailable.empty())
    return Error::at("", field, "a network model that runs in this build", "\"" + name + "\": " + found->unavailable);
  if (std::find(found->jobs.begin(), found->jobs.end(), job) == found->jobs.end()) {
    std::vector<std::string> fit;
    for (const auto& m : network_models())
      if (m.unavailable.empty() && std::find(m.jobs.begin(), m.jobs.end(), job) != m.jobs.end()) fit.push_back(m.name);
    std::string list;
    for (const auto& f : fit)
      list += (list.empty() ? "" : ", ") + f;
    return Error::at("", field, "a network model that honours a job of kind " + job + " (" + list + ")",
                     "\"" + name + "\", which runs " +
                         (found->jobs.empty() ? std::string("no job")
                                              : "only " +
                                                    [&] {
                                                      std::string j;
                                                      for (const auto& k : found->jobs)
                                                        j += (j.empty() ? "" : ", ") + k;
                                                      return j;
                                                    }()) +
                         ": it misses " + found->misses);
  }
  return found;
}

} // namespace tp::models
