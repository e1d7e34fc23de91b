// TCP incast through one drop-tail switch port (issue 19): N senders, each on its own link to one switch, send S bytes
// each to one receiver at the same instant. The model follows every packet through the one port that can overflow
// (the switch's port toward the receiver, a FIFO of `buffer_bytes` with drop-tail); the senders' links serialize
// their packets and the ACKs cross two links. Each sender runs TCP as ns-3 3.37's TcpSocketBase does: NewReno with
// SACK (RFC 6675's scoreboard and NextSeg), PRR fast recovery (RFC 6937) and the retransmission time-out (RFC 6298).
// That is what decides incast: which segments the full port drops, whether the sender learns of the loss from later
// segments or only from its timer, and how long the timer is.
//
// Checked against a packet-level ns-3 program on the same topology, run for run and event by event
// (validation/ns3/incast_reference.cc, docs/network-models.md). Pure computation: no SimGrid; one run costs
// O(packets log packets).
#pragma once

#include "core/common/result.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tp::models {

/// One event of a run, in the terms of validation/ns3/incast_reference --trace (docs/network-models.md): what each
/// sender sends and receives, what the port drops, and each sender's congestion state.
struct IncastTraceEvent {
  enum class Kind { TX, DROP, ACK, STATE };
  Kind kind = Kind::TX;
  double time = 0;        ///< s since the senders start
  int sender = 1;         ///< from 1, as the reference numbers them
  int64_t segment = 0;    ///< TX, DROP: the segment (-1: the handshake's last ACK); ACK: the cumulative point
  const char* state = ""; ///< STATE: CA_OPEN, CA_DISORDER, CA_RECOVERY or CA_LOSS (ns-3's names)
};

struct IncastConfig {
  int senders = 8;
  uint64_t bytes_per_sender = 1000000;
  double link_rate = 10e9 / 8;     ///< bytes/s of every link (the senders', the receiver's)
  double link_delay = 1e-6;        ///< one-way propagation delay of each link, s
  uint64_t buffer_bytes = 131072;  ///< the receiver's switch port: bytes of IP packets it holds, drop-tail
  int mss = 1448;                  ///< TCP payload per segment (Linux, 1500-byte MTU with timestamps)
  int header_bytes = 52;           ///< IPv4 20 + TCP 20 + timestamps 12: the packet the port's buffer counts
  int framing_bytes = 2;           ///< link framing on the wire beyond the IP packet (PPP, as ns-3's point-to-point)
  int syn_bytes = 60;              ///< a SYN's IP packet: headers and the MSS, SACK, window-scale, timestamp options
  int initial_window = 10;         ///< segments (RFC 6928; Linux since 2.6.39)
  double min_rto = 0.2;            ///< s (Linux TCP_RTO_MIN)
  double max_rto = 60.0;           ///< s, the back-off's ceiling (ns-3 MaxRto; Linux TCP_RTO_MAX is 120 s)
  double clock_granularity = 1e-3; ///< s, G of RFC 6298's RTO = SRTT + max(G, 4 RTTVAR) (ns-3's default)
  int dupack_threshold = 3;        ///< segments above a hole that mark it lost (RFC 6675 DupThresh)
  /// Each sender starts (sends its SYN) at an offset drawn uniformly from [0, start_jitter) s with this seed; 0:
  /// all at once. Incast at one nanosecond is chaotic (whether a retransmission finds the port's last slot), so
  /// comparisons run several seeds and compare medians (docs/network-models.md).
  double start_jitter = 0;
  uint64_t seed = 1;
  /// Sender i (from 0) starts i * start_stagger s later than the first (before any jitter): a deterministic
  /// order that validation/ns3/incast_reference --stagger reproduces, for putting the two runs' traces side by side.
  double start_stagger = 0;
  /// When not empty: each sender's start offset, s (one per sender), instead of the stagger and the jitter draw: the
  /// starts a packet-level run drew, so that the model runs the same incast (tensorpath incast --reference).
  std::vector<double> start_offsets;
  /// The packet-level reference's own departures from RFC 6937 and Linux, for comparing with it (off: the RFCs').
  /// ns-3 3.37's PRR takes prr_delivered - prr_out in unsigned arithmetic, so that when more was sent than delivered
  /// the slow-start reduction bound's limit is that (negative) difference plus one segment instead of
  /// max(difference, delivered) plus one; its sender sends nothing in the open state once the FIN has gone out with
  /// the last segment, so that segments lost after a recovery wait for an ACK with new SACK information or the timer;
  /// it writes the first data one clock tick after the handshake; and its clock is 1 ns (else 1 ps). (Its SYN,
  /// without an MSS option, is syn_bytes = 56.)
  bool ns3_quirks = false;
  /// > 0: record goodput over time in bins of this many seconds from the senders' start (IncastResult::goodput_series;
  /// at most MAX_GOODPUT_BINS of them).
  double goodput_bin = 0;
  /// Called for every event when set (tensorpath incast --trace).
  std::function<void(const IncastTraceEvent&)> trace;
};

struct IncastSender {
  double completion = 0; ///< s, when the receiver held every byte of this sender
  uint64_t timeouts = 0;
  uint64_t fast_retransmits = 0; ///< recoveries entered on SACK evidence
  uint64_t retransmitted_segments = 0;
};

struct IncastResult {
  double completion = 0; ///< s, the last sender's completion
  double first = 0;      ///< s, the first sender's
  double goodput = 0;    ///< bytes/s of payload over the completion time
  uint64_t drops = 0;    ///< packets the port dropped
  uint64_t timeouts = 0;
  uint64_t fast_retransmits = 0;
  uint64_t peak_queue_bytes = 0; ///< the port's buffer at its fullest (excluding the packet on the wire)
  uint64_t segments_sent = 0;    ///< first transmissions and retransmissions
  std::vector<IncastSender> per_sender;
  /// With IncastConfig::goodput_bin: payload the receiver got in order in each bin, over the bin (bytes/s), from the
  /// senders' start to the last sender's completion; `goodput_series_truncated` if the run outlasted the bins.
  std::vector<double> goodput_series;
  bool goodput_series_truncated = false;
};

/// The most bins of goodput over time a run records (8 MB of doubles).
inline constexpr size_t MAX_GOODPUT_BINS = 1000000;

/// Every field of the configuration in its range; the error names the field.
Status check_incast(const IncastConfig& c);

/// Checks the configuration (check_incast) and runs the model.
Result<IncastResult> simulate_tcp_incast(const IncastConfig& c);

/// A result that cannot be right (not a positive, finite time; goodput above the port's payload rate) is an error
/// naming `model`, never a number in a table.
Status check_incast_result(const IncastConfig& c, const IncastResult& r, const std::string& model);

/// `model` ("flow": max_min_incast, "tcp-incast": simulate_tcp_incast) on `c`, its result checked.
Result<IncastResult> run_incast_model(const std::string& model, const IncastConfig& c);

/// The median of each figure over several seeds' runs (a count may end in .5 for an even number of runs).
struct IncastMedian {
  double completion = 0, first = 0, goodput = 0;
  double drops = 0, timeouts = 0, fast_retransmits = 0, peak_queue_bytes = 0;
};

/// `model` on seeds c.seed .. c.seed + seeds - 1, each figure's median over the runs. With `offsets_per_run` (one
/// list of start offsets per run), run k starts its senders at offsets_per_run[k] (IncastConfig::start_offsets).
Result<IncastMedian> run_incast_model_median(const std::string& model, IncastConfig c, int seeds,
                                             const std::vector<std::vector<double>>& offsets_per_run = {});

/// The flow model's answer on the same star (max-min: each sender gets 1/N of the port, every byte on the wire
/// once): what `flow` predicts without drops or time-outs, for side-by-side tables.
IncastResult max_min_incast(const IncastConfig& c);

} // namespace tp::models
