// Memory registration (ibv_reg_mr / ibv_dereg_mr) cost: fixed per call plus per page pinned and
// written into the NIC translation tables. Profiles: models/hw/registration/*.json.
#pragma once

#include <cmath>
#include <string>

namespace tp::models {

struct RegistrationProfile {
  std::string name;
  double register_fixed = 0;    ///< seconds per ibv_reg_mr call
  double register_per_page = 0; ///< seconds per page
  double deregister_fixed = 0;
  double deregister_per_page = 0;
  double page_size = 4096; ///< bytes

  double pages(double bytes) const { return bytes <= 0 ? 0 : std::ceil(bytes / page_size); }
  double register_time(double bytes) const { return register_fixed + register_per_page * pages(bytes); }
  double deregister_time(double bytes) const { return deregister_fixed + deregister_per_page * pages(bytes); }
};

} // namespace tp::models
