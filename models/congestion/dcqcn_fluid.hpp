// The fixed point of DCQCN's fluid model (Zhu, Ghobadi, Misra, Padhye: "ECN or Delay: Lessons Learnt from Analysis
// of DCQCN and TIMELY", CoNEXT 2016, equations 1-5): N long-lived flows through one port of capacity C marked by
// RED on the instantaneous queue. At the fixed point every flow sends C/N; the marking probability p* balances the
// rate decreases (at most one per CNP window tau, with probability 1 - (1 - p)^(tau R)) against the timer's and
// the byte counter's increases; the queue sits where RED gives p*. An analytical check of the flow-level RoCE model
// (roce_fabric.hpp), independent of its code: it holds for long-lived flows and fails, by design, where the model
// says so (hyper increase, PFC, flows that end). docs/network-models.md compares the two.
#pragma once

#include "core/common/result.hpp"

namespace tp::models {

struct DcqcnFluidInput {
  int flows = 2;
  double capacity = 40e9;                         ///< bits/s of the bottleneck port
  double frame_bytes = 1062;                      ///< bytes per packet on the wire (the model counts packets)
  double tau = 50e-6;                             ///< s: the CNP window (one rate decrease at most per window)
  double tau_alpha = 55e-6;                       ///< s: alpha's update period (tau' in the paper)
  double timer = 55e-6;                           ///< s: the rate-increase timer (T)
  double byte_counter = 10e6;                     ///< bytes (B); 0: no byte counter
  int fast_recovery = 5;                          ///< F
  double ai = 40e6;                               ///< bits/s (R_AI)
  double kmin = 5000, kmax = 200000, pmax = 0.01; ///< RED, bytes
};

struct DcqcnFixedPoint {
  double p = 0;      ///< marking probability
  double rate = 0;   ///< each flow's R_C, bits/s (C/N)
  double target = 0; ///< R_T, bits/s
  double alpha = 0;
  double queue = 0;     ///< bytes: RED's inverse at p (kmax when p > pmax: the fixed point is off RED's slope)
  bool on_slope = true; ///< p <= pmax
};

/// Solves the fixed point by bisection on p (the balance is monotone in p); an error when no root lies in (0, 1).
Result<DcqcnFixedPoint> dcqcn_fixed_point(const DcqcnFluidInput& in);

} // namespace tp::models
