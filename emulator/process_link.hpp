// The wire between software devices of different OS processes on one host: a Unix socket per pair of processes
// (in a directory both know, one socket file per process), over which a requester sends its work requests and the
// responder answers ACK / NAK, as RC transport packets would. The data does not travel on the socket: on connecting,
// the requester passes its shared-memory arena (memfd, SCM_RIGHTS) so that the responder memcpys straight between
// the two processes' registered memory (RDMA WRITE / SEND into its own memory, READ into the requester's). A process
// that dies closes its sockets: the peer hears of it at once (its in-flight requests time out as with a dead host).
// Lids: process k owns lids [first_lid, first_lid + LIDS_PER_PROCESS). Tests: tests/device/soft_processes_contract_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "emulator/shared_arena.hpp"

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tp::emu {

class ProcessLink {
public:
  static constexpr uint16_t LIDS_PER_PROCESS = 100;
  struct Handlers {
    /// A request from a peer whose arena is `requester` (mapped here); returns the response frame.
    std::function<std::vector<uint8_t>(const std::vector<uint8_t>& request, const PeerArena& requester)> on_request;
    std::function<void(const std::vector<uint8_t>& response)> on_response;
    /// The process owning lids [first_lid, first_lid + LIDS_PER_PROCESS) closed its link (exited or died).
    std::function<void(uint16_t first_lid)> on_peer_lost;
  };
  /// Listen on `dir`/fabric-<first_lid>.sock; `first_lid` must be 1 + k * LIDS_PER_PROCESS.
  static Result<std::unique_ptr<ProcessLink>> open(const std::string& dir, uint16_t first_lid, SharedArena& arena,
                                                   Handlers handlers);
  ~ProcessLink();
  /// First lid of the process owning `lid`.
  static uint16_t owner_of(uint16_t lid) { return uint16_t((lid - 1) / LIDS_PER_PROCESS * LIDS_PER_PROCESS + 1); }
  bool owns(uint16_t lid) const { return owner_of(lid) == first_lid_; }
  /// Whether a process owning `lid` has a socket in the directory and is not known to be gone.
  bool reaches(uint16_t lid);
  /// Send a request frame to the process owning `dst_lid` (connecting on first use). False: unreachable.
  bool send_request(uint16_t dst_lid, const std::vector<uint8_t>& frame);

private:
  struct Conn {
    int fd = -1;
    uint16_t peer_first_lid = 0;
    std::unique_ptr<PeerArena> arena; ///< the peer's memory (set when the peer connected to us)
    std::mutex write_mu;
    std::thread reader;
  };
  ProcessLink(std::string dir, uint16_t first_lid, SharedArena& arena, Handlers h, int listen_fd);
  std::string path_of(uint16_t first_lid) const;
  void accept_loop();
  void read_loop(std::shared_ptr<Conn> c);
  bool write_frame(Conn& c, uint8_t type, const std::vector<uint8_t>& body);

  std::string dir_;
  uint16_t first_lid_;
  SharedArena& arena_;
  Handlers h_;
  int listen_fd_;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::map<uint16_t, std::shared_ptr<Conn>> outgoing_; ///< by the peer's first lid: where our requests go
  std::vector<std::shared_ptr<Conn>> all_;
  std::map<uint16_t, bool> lost_;
};

} // namespace tp::emu
