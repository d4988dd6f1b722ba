#include "transport/rdma/control_channel.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <fmt/core.h>

#include "transport/backlog.h"
#include "transport/rdma/wr_id.h"
#include "util/log.h"
#include "util/test_faults.h"

namespace rcp::rdma {

Status ControlChannel::setup(ibv_pd* pd, ibv_qp* qp, uint32_t depth, const std::string& dev) {
  qp_ = qp;
  depth_ = depth;
  recv_bufs_ = depth;
  mem_.assign(size_t{depth_} * 2 * wire::kMaxMessage, 0);
  mr_.reset(ibv_reg_mr(pd, mem_.data(), mem_.size(), IBV_ACCESS_LOCAL_WRITE));
  if (!mr_) return sys_error("ibv_reg_mr (control buffers) on " + dev);
  for (uint32_t i = 0; i < depth_; ++i) RCP_TRY(post_recv(i));
  for (uint32_t i = 0; i < depth_; ++i) free_send_.push_back(i);
  granted_ = depth_;
  return {};
}

Status ControlChannel::setup_shared(std::shared_ptr<SharedReceive> srq, ibv_qp* qp, uint32_t depth,
                                    const std::string& dev) {
  qp_ = qp;
  depth_ = depth;
  recv_bufs_ = 0;
  srq_ = std::move(srq);
  mem_.assign(size_t{depth_} * wire::kMaxMessage, 0);
  mr_.reset(ibv_reg_mr(srq_->pd(), mem_.data(), mem_.size(), IBV_ACCESS_LOCAL_WRITE));
  if (!mr_) return sys_error("ibv_reg_mr (control send buffers) on " + dev);
  for (uint32_t i = 0; i < depth_; ++i) free_send_.push_back(i);
  granted_ = depth_;
  return {};
}

const uint8_t* ControlChannel::recv_buf(uint64_t index) const {
  if (srq_) return index < srq_->buffers() ? srq_->buffer(static_cast<uint32_t>(index)) : nullptr;
  return index < depth_ ? mem_.data() + index * wire::kMaxMessage : nullptr;
}

void ControlChannel::on_recv_failed(uint64_t index) {
  if (!srq_ || index >= srq_->buffers()) return;
  srq_->taken();
  if (Status st = srq_->repost(static_cast<uint32_t>(index)); !st.ok())
    log_warning("{}: {}", peer_, st.error().message());
}

void ControlChannel::set_peer(uint32_t peer_depth, uint32_t peer_msg_size, std::string peer) {
  credits_ = Credits(peer_depth);
  peer_msg_size_ = peer_msg_size;
  peer_ = std::move(peer);
}

Status ControlChannel::queue(std::span<const uint8_t> message) {
  if (message.size() > peer_msg_size_ || message.empty())
    return make_error(EMSGSIZE, fmt::format("control message of {} bytes for {}", message.size(), peer_));
  // A peer that grants no credits (never reposts its receives) leaves every
  // message here: bounded, as over TCP.
  if (unsent_ + unsent_cost(message.size()) > kMaxUnsent) return unsent_error(peer_, unsent_, out_.size());
  out_.emplace_back(message.begin(), message.end());
  unsent_ += unsent_cost(message.size());
  return {};
}

Status ControlChannel::flush() {
  if (stopped_) return {};
  // (Test-only, rdma-hoard-receives: the last credit carries a message too.)
  const bool hoard = test_faults().rdma_hoard_receives;
  while (!out_.empty() && (credits_.can_send_data() || (hoard && credits_.peer_credits() > 0)) && !free_send_.empty()) {
    auto& m = out_.front();
    std::memcpy(send_buf(free_send_.back()), m.data(), m.size());
    RCP_TRY(post_send(static_cast<uint32_t>(m.size())));
    unsent_ -= unsent_cost(m.size());
    out_.pop_front();
  }
  // Grant credits explicitly when enough piled up and nothing carries them.
  if (credits_.grant_due(std::max<uint32_t>(1, depth_ / 2)) && credits_.can_send_grant() && !free_send_.empty())
    RCP_TRY(post_send(0));
  // (Test-only: what send buffers are left go to credit-only sends that
  // ignore credits, after the real messages and grants, so a session without the
  // peer's check would still complete.)
  for (; flood_left_ > 0 && !free_send_.empty(); --flood_left_) {
    const uint32_t i = free_send_.back();
    free_send_.pop_back();
    ibv_send_wr wr{};
    wr.wr_id = WrId{WrKind::send, i}.encode();
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = 0;
    ibv_send_wr* bad;
    if (int rc = ibv_post_send(qp_, &wr, &bad)) return make_error(rc, "ibv_post_send (flood) to " + peer_);
  }
  return {};
}

void ControlChannel::on_recv(uint64_t index, const ibv_wc& wc, std::vector<TransportEvent>& events) {
  const uint8_t* p = recv_buf(index);
  if (!p) return;  // not a buffer of ours
  if (stopped_) {  // control moved on: nothing to deliver; a shared buffer still goes back
    on_recv_failed(index);
    return;
  }
  ++received_;
  if (wc.wc_flags & IBV_WC_WITH_IMM) {
    credits_.on_grant(ntohl(wc.imm_data));
    if (logging_) log_.on_granted(ntohl(wc.imm_data));
  }
  if (wc.byte_len > 0) {
    TransportEvent ev;
    ev.kind = TransportEvent::Kind::message;
    ev.message.assign(p, p + std::min<uint32_t>(wc.byte_len, wire::kMaxMessage));
    events.push_back(std::move(ev));
  }
  if (srq_) {
    // The buffer goes back to every session's queue; this peer gets its
    // credit back as if its own buffer were posted again.
    srq_->taken();
    Status st = srq_->repost(static_cast<uint32_t>(index));
    if (!st.ok()) log_warning("{}: {}", peer_, st.error().message());
    credits_.on_repost();
    return;
  }
  // (Test-only, rdma-hoard-receives: a buffer that carried a message stays taken.)
  if (test_faults().rdma_hoard_receives && wc.byte_len > 0) return;
  if (post_recv(static_cast<uint32_t>(index)).ok()) credits_.on_repost();
}

std::deque<std::vector<uint8_t>> ControlChannel::stop() {
  stopped_ = true;
  unsent_ = 0;
  return std::exchange(out_, {});
}

void ControlChannel::on_send(uint64_t index) {
  if (index < depth_) free_send_.push_back(static_cast<uint32_t>(index));
}

Status ControlChannel::post_recv(uint32_t i) {
  ibv_sge sge{reinterpret_cast<uint64_t>(mem_.data() + size_t{i} * wire::kMaxMessage),
              static_cast<uint32_t>(wire::kMaxMessage), mr_->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = WrId{WrKind::recv, i}.encode();
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad;
  if (int rc = ibv_post_recv(qp_, &wr, &bad)) return make_error(rc, "ibv_post_recv");
  return {};
}

Status ControlChannel::post_send(uint32_t len) {
  const uint32_t i = free_send_.back();
  free_send_.pop_back();
  ibv_sge sge{reinterpret_cast<uint64_t>(send_buf(i)), len, mr_->lkey};
  ibv_send_wr wr{};
  wr.wr_id = WrId{WrKind::send, i}.encode();
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = len > 0 ? &sge : nullptr;
  wr.num_sge = len > 0 ? 1 : 0;
  const uint32_t grants = credits_.on_send();
  granted_ += grants;
  wr.imm_data = htonl(grants);  // credits we grant back ride on every send
  ibv_send_wr* bad;
  if (int rc = ibv_post_send(qp_, &wr, &bad)) return make_error(rc, "ibv_post_send (control) to " + peer_);
  if (logging_) log_.on_send({send_buf(i), len});
  return {};
}

}  // namespace rcp::rdma
