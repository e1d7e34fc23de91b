// Step marks read outside a format's own reader (internal to traces/): TF step ids, found in a second look at the
// timeline's events.
#pragma once

#include "core/common/result.hpp"
#include "traces/trace.hpp"

#include <string>

namespace tp::traces::detail {

/// The TF timeline's step ids ("step_id", "step_num" or "group_id" in an event's args) as step windows: each id's
/// events from the first start to the last end. No ids: nothing marked.
Status mark_tf_steps(const std::string& text, Trace& trace);

} // namespace tp::traces::detail
