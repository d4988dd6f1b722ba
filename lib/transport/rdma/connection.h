/// One RDMA connection of a session, behind the Transport interface: the
/// verbs objects it owns (PD, completion channel, one CQ shared by all its
/// queue pairs, the first QP), its control channel, its READ lanes and its
/// rdma_cm events. Both ends use it: rdma_connect (rdma_transport.cc) and
/// the daemon's listener (listener.cc) create and set it up, then hand it
/// to the engine. Everything happens on the session's thread, except that
/// the daemon's listener thread may add queue pairs through the entry this
/// connection opens in the daemon's QpJoins (joins.h).
#pragma once

#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <array>
#include <chrono>
#include <optional>

#include "transport/rdma/control_channel.h"
#include "transport/rdma/device.h"
#include "transport/rdma/handles.h"
#include "transport/rdma/joins.h"
#include "transport/rdma/path_info.h"
#include "transport/rdma/rail.h"
#include "transport/rdma/rdma_transport.h"
#include "transport/rdma/read_lanes.h"
#include "transport/rdma/shared_receive.h"
#include "transport/transport.h"
#include "util/fd.h"
#include "util/result.h"
#include "wire/messages.h"
#include "wire/rails.h"

namespace rcp::rdma {

class Connection final : public Transport {
 public:
  Connection(EventChannel ch, CmId id, RdmaOptions opt) : ch_(std::move(ch)), id_(std::move(id)), opt_(opt) {}
  ~Connection() override;

  /// PD, completion channel, CQ, QP and the control buffers (receives posted).
  /// The CQ is sized for `max_qps` queue pairs: all of them share it.
  /// Daemon: `shared` is the device's shared receive queue; the first QP is
  /// created on its PD and takes its receives from it. Either way the first
  /// QP carries control only: the session's memory is registered on the
  /// session's own PD, which only the QPs that join carry READs over.
  Status setup(uint32_t max_qps, std::shared_ptr<SharedReceive> shared = nullptr);
  /// The hello this side sends (connect or accept private data).
  wire::Hello hello() const;
  /// Applies the peer's hello: credits, limits, checksum set.
  void set_peer(const wire::Hello& peer, uint32_t rd_atomic);
  /// Client side: rdma_connect saw ESTABLISHED.
  void set_established();
  const DeviceCaps& caps() const { return caps_; }
  rdma_cm_id* id() const { return id_.get(); }

  /// Daemon side: lets up to `max_qps` queue pairs in all join this session
  /// with `token` (registered before the client can learn it), answering
  /// each join with `answer`. Fails only if the token is already taken.
  Status offer_joins(std::shared_ptr<QpJoins> reg, uint64_t token, uint32_t max_qps, const wire::Hello& answer);
  /// Client side: adds queue pair `index` of `of` to this session.
  Status join(sockaddr_storage& dst, uint64_t token, uint32_t index, uint32_t of, int timeout_ms,
              const std::string& where);
  /// Adds a rail on device ctx (its PD, completion channel, CQ) numbered
  /// `index` on the wire (the daemon's announced address it reaches).
  /// Before any memory is registered. Returns its local number (1..).
  Result<uint32_t> add_rail(ibv_context* ctx, uint8_t index, std::string peer);
  /// Client side: adds queue pair `qp` of local rail `rail` to the session.
  Status join_rail(sockaddr_storage& dst, uint64_t token, uint32_t rail, uint32_t qp, int timeout_ms,
                   const std::string& where);
  /// Client side: local rail `rail` joined no queue pair (`why`); it
  /// carries nothing and -v / --json say so.
  void leave_out_rail(uint32_t rail, const std::string& why);
  size_t rail_count() const { return rails_.size() + 1; }

  std::string name() const override { return "rdma " + caps_.name; }
  std::string describe() const override;
  std::string peer() const override { return peer_name_; }
  const Negotiated& negotiated() const override { return neg_; }
  Result<uint32_t> register_memory(void* base, size_t len, bool remote_read) override;
  void deregister_memory(uint32_t key) override;
  Status send(std::span<const uint8_t> message) override;
  Status read(uint64_t cookie, uint32_t rkey, std::span<const ReadWr> wrs) override;
  uint32_t read_capacity() const override;
  Status poll(std::vector<TransportEvent>& events) override;
  int wait_fd() const override { return ep_.get(); }
  Status arm() override;
  bool send_pending() const override { return ctl_->pending() || !held_.empty(); }
  /// What the peer's receive buffers hold (its hello's ctrl_msg_size, at most kMaxMessage).
  size_t max_message() const override { return peer_msg_size_; }
  size_t unsent_bytes() const override;
  std::vector<RailStat> rail_stats() const override;

 private:
  /// QP 0, which carries control, has been established (it may have
  /// disconnected since: lanes_[0].disconnected).
  bool established() const { return lanes_.size() > 0 && lanes_[0].up; }
  JoinSpec join_spec(const wire::Hello& hello) const;
  Status flush();
  /// Handles every completion available now; false if the CQ failed.
  bool drain_cq(std::vector<TransportEvent>& events);
  void handle_wc(const ibv_wc& wc, std::vector<TransportEvent>& events);
  // connection_failover.cc: a rail or the control channel lost mid-session.
  /// Completions of rail r (1..): a failed READ drops the rail, not the session.
  void drain_rail(size_t r, std::vector<TransportEvent>& events);
  /// Drops rail r (1..) and queues its outstanding chunks to be read again.
  void fail_rail(size_t r, std::string why);
  /// Rail 0 failed (its port, a QP of it, a completion on it): with a
  /// standby control channel on another rail, control moves there (its
  /// READs are read again over the others) and the session goes on; without
  /// one, the session ends naming `why`.
  /// `prefer`: the standby the peer moved to (its CONTROL_MOVED came first).
  void fail_control(std::string why, std::vector<TransportEvent>& events, size_t prefer = SIZE_MAX);
  /// A completion of the standby control channel on rail r's queue pair.
  void on_standby_wc(size_t r, const ibv_wc& wc, std::vector<TransportEvent>& events);
  /// The peer's CONTROL_MOVED on standby channel s: `took` of our rail-0 sends reached it.
  void on_control_moved(size_t s, uint64_t took, std::vector<TransportEvent>& events);
  /// Queues a control message on the channel in use (held while control is moving).
  Status queue_control(std::span<const uint8_t> message);
  /// Adopts a rail's standby control channel that came with lane `lane`.
  void add_standby(uint32_t rail, size_t lane, std::unique_ptr<ControlChannel> ch);
  /// The async events of the rails' devices: a port or QP error on a
  /// rail drops it at once (without waiting for its READs to time out).
  void poll_async(std::vector<TransportEvent>& events);
  /// Posts the chunks failed rails gave back, as far as there is room.
  void repost_orphans(std::vector<TransportEvent>& events);
  /// Takes RAIL_KEYS and RAIL_STATS messages (ours, not the engine's) out of events[first..].
  void take_rail_keys(std::vector<TransportEvent>& events, size_t first);
  /// Daemon side, for a client that takes them: queues RAIL_STATS before
  /// a control message when the counts changed (while READs are in flight,
  /// at most every kRailStatsEveryMs), so the last message has the final ones.
  Status queue_rail_stats();
  /// Keys of every rail for a READ under the engine's rkey.
  std::array<RailKeyPair, kMaxLaneRails> keys_for(uint32_t rkey0) const;
  /// Rail r (1..) has a queue pair of this session.
  bool rail_joined(size_t r) const;
  /// Keeps rail r's registration of memory `key` and adds its rkey to `announce`.
  void keep_rail_mr(Rail& r, uint32_t key, Mr mr, bool remote_read, wire::RailKeys& announce);
  /// Registers the session's memory on the rails whose queue pairs joined
  /// after it was registered (connection_memory.cc); RAIL_KEYS for those the peer reads.
  Status register_late_rails();
  /// Daemon side: adopts the queue pairs the listener accepted meanwhile.
  void take_joins();
  void poll_cm(std::vector<TransportEvent>& events);
  void on_lane_event(size_t i, const CmEvent& e, std::vector<TransportEvent>& events);
  void close_with(std::vector<TransportEvent>& events, std::string why);

  // Declaration order is destruction order reversed: the extra QPs (in
  // lanes_) first, then QP 0, the MRs, the control buffers, CQ, completion
  // channel, PD, cm_id, event channel.
  EventChannel ch_;
  CmId id_;
  std::shared_ptr<SharedReceive> shared_rx_;  ///< daemon: the first QP's SRQ and PD (released after the QP)
  Pd pd_;
  CompChannel cc_;
  Cq cq_;
  ControlChannel ctrl_;
  std::map<uint32_t, Mr> mrs_;
  /// What each registration covers (by rail 0's key), for rails that join later.
  struct Registration {
    void* base = nullptr;
    size_t len = 0;
    bool remote_read = false;
  };
  std::map<uint32_t, Registration> regs_;
  bool rail_regs_due_ = false;  ///< a rail standing may still need registrations
  std::vector<std::unique_ptr<Rail>> rails_;  ///< rails 1.. (after mrs_: their QPs, in lanes_, die first)
  /// The rails' standby control channels (one per rail, on its first QP;
  /// after rails_: their registrations go before the rails' PDs, and their
  /// QPs, in lanes_, before them).
  struct Standby {
    uint32_t rail = 0;  ///< local rail number (1..)
    size_t lane = 0;
    std::unique_ptr<ControlChannel> ch;
    bool heard = false;  ///< the peer's CONTROL_MOVED arrived on it
  };
  std::vector<Standby> standby_;
  std::unique_ptr<QpGuard> qp_guard_;
  ReadLanes lanes_;
  Fd ep_;

  RdmaOptions opt_;
  DeviceCaps caps_{};
  QueueSizes q_{};
  Negotiated neg_;
  std::string peer_name_ = "?";
  PathInfo path0_;  ///< the control QP's path (rail 0), once established
  uint32_t max_qps_ = 1;
  uint32_t sink_lkey_ = 0;  ///< lkey of the registration READs land in
  /// The peer's RAIL_KEYS: for the key the engine quotes, the rkey of the
  /// same memory by wire rail index (0: not announced). At most
  /// kMaxPeerRailKeys registrations (a peer registers its pool once).
  std::map<uint32_t, std::array<std::optional<uint32_t>, wire::kMaxRails>> peer_keys_;
  std::deque<Orphan> orphans_;  ///< chunks of failed rails not yet re-posted
  bool peer_takes_stats_ = false;  ///< daemon: the client's hello set kHelloRailStats
  std::vector<wire::RailCount> stats_sent_;  ///< daemon: the counts last sent
  std::chrono::steady_clock::time_point stats_at_{};  ///< daemon: when
  /// Client: the daemon's RAIL_STATS by wire rail index (0: control device).
  std::array<std::optional<wire::RailCount>, wire::kMaxRails> peer_counts_{};
  std::chrono::steady_clock::time_point next_port_check_{};  ///< poll_async: when to ask the rails' ports
  std::shared_ptr<QpJoins> reg_;  ///< set once this session is open for joins
  uint64_t token_ = 0;
  unsigned unacked_cq_events_ = 0;
  /// Control: rail 0's channel (ctrl_) until it fails over to a standby.
  ControlChannel* ctl_ = &ctrl_;
  uint32_t ctl_rail_ = 0;       ///< local rail control is on (0: the first)
  size_t ctl_lane_ = 0;         ///< its queue pair's lane
  std::string rail0_failed_;    ///< why control left rail 0, "" while there
  std::string ctl_lost_;        ///< the rail control moved to failed too: the session ends
  /// Control is moving: our CONTROL_MOVED is out, the peer's not yet in;
  /// what was never posted on rail 0 and what the engine sends meanwhile
  /// wait here, in order, for the peer's count (then what it missed goes first).
  bool moving_ = false;
  std::deque<std::vector<uint8_t>> held_;
  uint64_t pending_took_ = 0;  ///< the peer's CONTROL_MOVED count, kept until this side moves too
  uint32_t peer_ctrl_depth_ = 0, peer_msg_size_ = wire::kMaxMessage;  ///< from the peer's hello, for standby channels
  bool closed_ = false, failed_ = false;
};

}  // namespace rcp::rdma
