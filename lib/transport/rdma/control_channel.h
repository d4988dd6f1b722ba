/// The control channel of an RDMA connection: whole wire messages as
/// SEND_WITH_IMM on the first queue pair into receive buffers the peer
/// posted in advance. The immediate of every send returns receive credits
/// (Credits, transport/types.h), so neither side ever sends into a receive
/// queue with no buffer posted (no RNR). `depth` receive and `depth` send
/// buffers of wire::kMaxMessage (4 KiB) each live in one registration: at
/// the default depth of 64, 512 KiB per connection. rcpd's first queue
/// pairs take their receives from the device's shared receive queue
/// instead (setup_shared, shared_receive.h): then only the send buffers
/// are the channel's own.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "transport/control_log.h"
#include "transport/rdma/handles.h"
#include "transport/rdma/shared_receive.h"
#include "transport/transport.h"
#include "transport/types.h"
#include "util/result.h"
#include "wire/messages.h"

namespace rcp::rdma {

class ControlChannel {
 public:
  /// Registers the buffers on pd and posts the receives on qp.
  Status setup(ibv_pd* pd, ibv_qp* qp, uint32_t depth, const std::string& dev);
  /// The same for a QP created on srq's PD and SRQ: registers the send
  /// buffers there; receives come from (and go back to) the SRQ. `depth`
  /// is still the credits the peer gets: what it may have outstanding.
  Status setup_shared(std::shared_ptr<SharedReceive> srq, ibv_qp* qp, uint32_t depth, const std::string& dev);
  /// From the peer's hello: its receive depth (our first credits) and the
  /// largest message it takes; `peer` names it in errors.
  void set_peer(uint32_t peer_depth, uint32_t peer_msg_size, std::string peer);

  /// Queues one whole message (not empty, not larger than the peer takes,
  /// not past kMaxUnsent held: transport/backlog.h).
  Status queue(std::span<const uint8_t> message);
  /// Posts queued messages while credits and send buffers last, then a
  /// credit-only send if enough grants piled up and nothing carried them.
  Status flush();
  /// Messages queued or sends not yet completed.
  bool pending() const { return !out_.empty() || free_send_.size() < depth_; }
  /// What the messages queued and not yet posted cost (transport/backlog.h).
  size_t unsent() const { return unsent_; }
  size_t unsent_messages() const { return out_.size(); }

  /// A receive completed successfully: takes the credits it returned,
  /// delivers its message and posts the buffer again.
  void on_recv(uint64_t index, const ibv_wc& wc, std::vector<TransportEvent>& events);
  /// A send completed (well or not): its buffer is free again.
  void on_send(uint64_t index);
  /// A receive completed in error: with a shared receive queue its buffer
  /// goes back there (it was taken from all sessions); else nothing.
  void on_recv_failed(uint64_t index);

  /// For control that may move to another rail (connection_failover.cc): keep what
  /// was sent until the peer's credits say it arrived (ControlLog).
  void keep_log() { logging_ = true; }
  const ControlLog& log() const { return log_; }
  /// The peer's sends taken off this channel so far (messages and
  /// credit-only sends alike), for CONTROL_MOVED.
  uint64_t received() const { return received_; }
  /// The peer sent more than the credits it was given (our depth, then the
  /// grants our sends carried): an honest peer cannot, and with a shared
  /// receive queue the surplus takes buffers from every other session.
  bool overrun() const { return received_ > granted_; }
  uint64_t granted() const { return granted_; }
  /// Test-only (RCP_TEST_FAULT=rdma-credit-overrun): post n credit-only
  /// sends as send buffers free up, ignoring credits (a flooding peer),
  /// after whatever real messages are queued.
  void flood(uint32_t n) { flood_left_ = n; }
  /// Control moved away: nothing more is taken from here (on_recv ignores
  /// every later completion), and what was queued but never posted is
  /// handed over.
  std::deque<std::vector<uint8_t>> stop();
  bool stopped() const { return stopped_; }
  uint32_t qp_num() const { return qp_ ? qp_->qp_num : 0; }

 private:
  Status post_recv(uint32_t i);
  /// The message buffer of receive `index`, or null if there is none such.
  const uint8_t* recv_buf(uint64_t index) const;
  Status post_send(uint32_t len);
  uint8_t* send_buf(uint32_t i) { return mem_.data() + (size_t{recv_bufs_} + i) * wire::kMaxMessage; }

  ibv_qp* qp_ = nullptr;
  std::shared_ptr<SharedReceive> srq_;  ///< set: receives are the SRQ's (before mr_: it holds the PD)
  // mem_ before mr_: the registration goes first.
  std::vector<uint8_t> mem_;  ///< depth_ receive buffers (none with srq_), then depth_ send buffers
  Mr mr_;
  Credits credits_{0};
  uint32_t depth_ = 0;
  uint32_t recv_bufs_ = 0;  ///< receive buffers in mem_: depth_, or 0 with srq_
  uint32_t peer_msg_size_ = wire::kMaxMessage;
  std::string peer_ = "?";
  std::vector<uint32_t> free_send_;
  std::deque<std::vector<uint8_t>> out_;
  size_t unsent_ = 0;  ///< unsent_cost() of out_'s messages
  ControlLog log_;
  bool logging_ = false;
  uint64_t received_ = 0;
  uint64_t granted_ = 0;  ///< receive credits the peer was given: depth_ + grants sent
  uint32_t flood_left_ = 0;
  bool stopped_ = false;
};

}  // namespace rcp::rdma
