// The training engine's modes and kinds as words (see modes.hpp).
#include "core/training/modes.hpp"

namespace tp::training {

const char* to_string(SyncMode m)
{
  switch (m) {
  case SyncMode::PARAMETER_SERVER:
    return "ps";
  case SyncMode::ALLREDUCE:
    return "allreduce";
  }
  return "?";
}

Result<SyncMode> parse_sync_mode(const std::string& s)
{
  for (const SyncMode m : {SyncMode::PARAMETER_SERVER, SyncMode::ALLREDUCE})
    if (s == to_string(m)) return m;
  return Error::at("", "mode", "ps or allreduce", "\"" + s + "\"");
}

const char* to_string(OpKind k)
{
  switch (k) {
  case OpKind::VARIABLE:
    return "variable";
  case OpKind::FORWARD:
    return "forward";
  case OpKind::BACKWARD:
    return "backward";
  case OpKind::AGGREGATE:
    return "aggregate";
  case OpKind::APPLY:
    return "apply";
  case OpKind::ALLREDUCE:
    return "allreduce";
  case OpKind::IDENTITY:
    return "identity";
  case OpKind::SEND:
    return "send";
  case OpKind::RECV:
    return "recv";
  }
  return "?";
}

Result<OpKind> parse_op_kind(const std::string& s)
{
  std::string words;
  for (int k = 0; k <= int(OpKind::RECV); ++k) {
    if (s == to_string(OpKind(k))) return OpKind(k);
    words += (k == 0 ? "" : k == int(OpKind::RECV) ? " or " : ", ") + std::string(to_string(OpKind(k)));
  }
  return Error::at("", "op kind", words, "\"" + s + "\"");
}

} // namespace tp::training
