// Transport options: the knobs every transport shares (TransportOptions' own fields) and, next to them, each
// transport's own options struct, declared in its folder (core/transports/<name>/<name>.hpp) and stored here by
// type, so that a new transport adds its knobs without editing a shared struct. The knobs a user may set from the
// command line or a scenario are described by OptionKnob lists in the transport's registry entry
// (core/transports/registry.cpp); apps/lib/cli_common.cpp and apps/lib/spec_parse.cpp read them. Tests:
// tests/core/transport_registration_test.cpp.
#pragma once

#include <any>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <typeindex>

namespace tp::transports {

/// The options of one task's transport. Common knobs are fields; a transport's own options are read with of<T>()
/// (T's defaults when nobody set them) and set through own<T>().
class TransportOptions {
public:
  uint16_t rpc_port = 2222; ///< gRPC server port (RecvTensor, channel set-up)
  /// Fault injection: corrupt the rkey of every remote buffer this task advertises (the peer's RDMA access to it
  /// then fails with a remote access error).
  bool inject_bad_rkey = false;

  /// The transport's own options of type T, or T's defaults when none were set.
  template <class T> const T& of() const
  {
    auto it = own_.find(std::type_index(typeid(T)));
    if (it == own_.end()) {
      static const T defaults{};
      return defaults;
    }
    return *std::any_cast<T>(&it->second);
  }
  /// The transport's own options of type T, to change them (created with T's defaults on first use).
  template <class T> T& own()
  {
    std::any& held = own_[std::type_index(typeid(T))];
    if (!held.has_value()) held = T{};
    return *std::any_cast<T>(&held);
  }

private:
  std::map<std::type_index, std::any> own_; ///< one options struct per transport type that set any
};

/// One switch of a transport that users set: a flag of `tensorpath train` and/or a boolean field of a scenario's
/// training job. Every knob exposed today is such a switch; a knob taking a number would add a kind here and its
/// reading in apps/lib/cli_common.cpp (flags) and apps/lib/spec_parse.cpp (scenario fields).
struct OptionKnob {
  std::string json_field; ///< field of a scenario's training job ("mpi_optimal_path"); empty: none
  std::string cli_flag;   ///< `tensorpath train` flag without its dashes ("mpi-optimal-path"); empty: none
  std::string help;       ///< the flag's --help text
  bool default_value = false;
  std::function<void(TransportOptions&, bool)> set;
  std::function<bool(const TransportOptions&)> get;
};

} // namespace tp::transports
