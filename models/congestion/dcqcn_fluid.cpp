// The DCQCN fluid model's fixed point (see dcqcn_fluid.hpp).
#include "models/congestion/dcqcn_fluid.hpp"

#include <cmath>
#include <cstdio>
#include <string>

namespace tp::models {

namespace {

std::string number(double v)
{
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

/// The fixed point's two balances with R_C = C/N, in packets and seconds, as functions of p:
///   dR_C/dt = 0:  R_C a A / (2 tau) = (R_T - R_C)/2 R_C (G + H)        => D = R_T - R_C = a A / (tau (G + H))
///   dR_T/dt = 0:  D A / tau = R_AI R_C [(1-p)^(F B) H + (1-p)^(F T R_C) G]
/// with A = 1 - (1-p)^(tau R_C) (a decrease in a window), a = 1 - (1-p)^(tau' R_C) (alpha's fixed point),
/// G = p / ((1-p)^(-T R_C) - 1) (timer increases per packet), H = p / ((1-p)^(-B) - 1) (byte-counter increases).
struct Balance {
  double r, tau, tau_a, T, B, F, ai;
  double lp(double p) const { return std::log1p(-p); } // log(1 - p)
  double A(double p) const { return -std::expm1(tau * r * lp(p)); }
  double alpha(double p) const { return -std::expm1(tau_a * r * lp(p)); }
  double G(double p) const { return p / std::expm1(-T * r * lp(p)); }
  double H(double p) const { return B > 0 ? p / std::expm1(-B * lp(p)) : 0.0; }
  double D(double p) const { return alpha(p) * A(p) / (tau * (G(p) + H(p))); }
  double f(double p) const
  {
    const double dec = D(p) * A(p) / tau;
    const double inc = ai * r * (std::exp(F * B * lp(p)) * H(p) + std::exp(F * T * r * lp(p)) * G(p));
    return dec - inc;
  }
};

} // namespace

Result<DcqcnFixedPoint> dcqcn_fixed_point(const DcqcnFluidInput& in)
{
  if (in.flows < 1) return Error::at("", "flows", "at least 1", std::to_string(in.flows));
  if (!(in.capacity > 0 && in.frame_bytes > 0 && in.tau > 0 && in.tau_alpha > 0 && in.timer > 0 &&
        in.byte_counter >= 0 && in.fast_recovery >= 0))
    return Error::at("", "dcqcn fluid input", "positive times, rates and sizes", "a zero or negative one");
  if (!(in.ai > 0))
    return Error::at("", "ai", "a positive additive increase (the fixed point balances it)", number(in.ai));
  if (!(in.kmax > in.kmin)) return Error::at("", "kmax", "above kmin (RED's slope)", number(in.kmax));
  if (!(in.pmax > 0 && in.pmax <= 1)) return Error::at("", "pmax", "0 < pmax <= 1", number(in.pmax));
  const double pkt_rate = in.capacity / 8 / in.frame_bytes / in.flows; // packets/s per flow
  const Balance b{pkt_rate,
                  in.tau,
                  in.tau_alpha,
                  in.timer,
                  in.byte_counter / in.frame_bytes,
                  double(in.fast_recovery),
                  in.ai / 8 / in.frame_bytes};
  double lo = 1e-12, hi = 1 - 1e-12;
  if (!(b.f(lo) < 0 && b.f(hi) > 0))
    return Error::at("", "dcqcn fluid input", "a fixed point with 0 < p < 1",
                     "none (balance " + std::to_string(b.f(lo)) + " .. " + std::to_string(b.f(hi)) + ")");
  for (int i = 0; i < 200; ++i) {
    const double mid = std::sqrt(lo * hi); // p spans decades: bisect its logarithm
    (b.f(mid) < 0 ? lo : hi) = mid;
  }
  DcqcnFixedPoint fp;
  fp.p = std::sqrt(lo * hi);
  fp.rate = in.capacity / in.flows;
  fp.target = (pkt_rate + b.D(fp.p)) * 8 * in.frame_bytes;
  fp.alpha = b.alpha(fp.p);
  fp.on_slope = fp.p <= in.pmax;
  fp.queue = fp.on_slope ? in.kmin + fp.p / in.pmax * (in.kmax - in.kmin) : in.kmax;
  return fp;
}

} // namespace tp::models
