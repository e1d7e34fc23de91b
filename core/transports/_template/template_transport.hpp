// The starting point of a new transport, to copy (docs/adding-a-transport.md): compiled with core/ but never
// registered. Its receive fails every remote Recv with Unimplemented, so a copy registered before its protocol is
// written fails the transport suite (tests/sim/transport_suite_test.cpp) instead of passing by accident.
// Say here what the transport does on the wire (docs/protocols.md gets its section) and name its tests.
#pragma once

#include "core/transports/transport.hpp"

#include <memory>
#include <vector>

namespace tp::transports {

/// The transport's own options: protocol constants with the source of each default. Read them in the transport
/// with ctx.options.of<TemplateOptions>(); tests set them with options.own<TemplateOptions>().
struct TemplateOptions {
  /// An example switch (replace it): what it changes, and where its default comes from.
  bool example_switch = false;
};

std::unique_ptr<Transport> make_template_transport(const TaskContext& ctx);
/// The switches users may set (a `tensorpath train` flag, a scenario training job's field); an empty list is fine.
std::vector<OptionKnob> template_option_knobs();
/// The registry entry: what register_builtin_transports() (core/transports/registry.cpp) adds for this transport.
TransportInfo template_transport_info();

} // namespace tp::transports
