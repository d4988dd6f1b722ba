#include "transport/rdma/connection.h"

#include <sys/epoll.h>

#include <algorithm>
#include <fmt/core.h>

#include "hash/digest.h"
#include "transport/rdma/cm.h"
#include "transport/rdma/wr_id.h"
#include "util/log.h"

namespace rcp::rdma {

Connection::~Connection() {
  if (reg_) {
    // No join may start from here on, and none is still creating its QP on
    // our PD and CQ once close returns; one accepted but not yet picked up
    // is released with the lanes (before the CQ and PD, see members).
    for (auto& j : reg_->close(token_)) lanes_.keep(std::move(j.id));
  }
  if (std::string per = lanes_.chunks_per_lane(); !per.empty())
    log_info("{} {}: chunks read per queue pair: {}", name(), peer_name_, per);
  for (size_t i = 0; i < lanes_.size(); ++i)
    if (lanes_[i].up && !lanes_[i].disconnected) rdma_disconnect(lanes_[i].id);
  if (cq_ && unacked_cq_events_ > 0) ibv_ack_cq_events(cq_.get(), unacked_cq_events_);
}

Status Connection::setup(uint32_t max_qps) {
  max_qps_ = std::clamp<uint32_t>(max_qps, 1, kMaxQps);
  ibv_context* ctx = id_->verbs;
  RCP_ASSIGN(caps_, query_caps(ctx));
  pd_.reset(ibv_alloc_pd(ctx));
  if (!pd_) return sys_error("ibv_alloc_pd on " + caps_.name);
  cc_.reset(ibv_create_comp_channel(ctx));
  if (!cc_) return sys_error("ibv_create_comp_channel on " + caps_.name);
  RCP_TRY(set_nonblock(cc_->fd));
  RCP_ASSIGN(q_, size_queues(caps_, opt_.ctrl_depth, max_qps_));
  cq_.reset(ibv_create_cq(ctx, static_cast<int>(q_.cqe), nullptr, cc_.get(), 0));
  if (!cq_) return sys_error("ibv_create_cq on " + caps_.name);
  ibv_qp_init_attr qa{};
  qa.send_cq = cq_.get();
  qa.recv_cq = cq_.get();
  qa.qp_type = IBV_QPT_RC;
  qa.sq_sig_all = 0;  // READs are signalled selectively: only the last WR of a chunk
  qa.cap.max_send_wr = q_.sq;
  qa.cap.max_recv_wr = q_.ctrl_depth;
  qa.cap.max_send_sge = q_.sge;
  qa.cap.max_recv_sge = 1;
  if (rdma_create_qp(id_.get(), pd_.get(), &qa) != 0) return sys_error("rdma_create_qp on " + caps_.name);
  qp_guard_ = std::make_unique<QpGuard>(id_.get());
  lanes_.configure(q_.read_wrs, q_.sge, q_.read_budget);
  lanes_.add_first(id_.get());
  RCP_TRY(ctrl_.setup(pd_.get(), id_->qp, q_.ctrl_depth, caps_.name));
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return sys_error("epoll_create1");
  ep_.reset(ep);
  RCP_TRY(set_nonblock(ch_->fd));
  for (int fd : {cc_->fd, ch_->fd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    if (::epoll_ctl(ep_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) return sys_error("epoll_ctl");
  }
  if (ibv_req_notify_cq(cq_.get(), 0) != 0) return sys_error("ibv_req_notify_cq");
  return {};
}

wire::Hello Connection::hello() const {
  wire::Hello h;
  h.ctrl_depth = static_cast<uint16_t>(q_.ctrl_depth);
  h.rd_init = caps_.init_rd;
  h.rd_resp = caps_.resp_rd;
  h.max_sge_rd = static_cast<uint16_t>(q_.sge);
  h.checksums = supported_checksums();
  h.max_chunk = opt_.max_chunk;
  h.qps = static_cast<uint16_t>(max_qps_);
  return h;
}

void Connection::set_peer(const wire::Hello& peer, uint32_t rd_atomic) {
  peer_name_ = sockaddr_string(rdma_get_peer_addr(id_.get()));
  ctrl_.set_peer(peer.ctrl_depth, peer.ctrl_msg_size, peer_name_);
  neg_.reads_in_flight = q_.read_wrs;
  neg_.rd_atomic = rd_atomic;
  lanes_[0].rd_atomic = rd_atomic;
  neg_.max_sge = q_.sge;
  neg_.max_chunk = peer.max_chunk;
  neg_.checksums = static_cast<uint16_t>(peer.checksums & supported_checksums());
}

JoinSpec Connection::join_spec(const wire::Hello& hello) const {
  JoinSpec s;
  s.ctx = id_->verbs;
  s.pd = pd_.get();
  s.cq = cq_.get();
  s.ch = ch_.get();
  s.sq = q_.read_wrs + 1;
  s.sge = q_.sge;
  s.caps = caps_;
  s.hello = hello;
  return s;
}

Status Connection::offer_joins(std::shared_ptr<QpJoins> reg, uint64_t token, uint32_t max_qps,
                               const wire::Hello& answer) {
  if (!reg->open(token, std::min(max_qps, max_qps_), join_spec(answer)))
    return make_error(EEXIST, "session token collision");
  reg_ = std::move(reg);
  token_ = token;
  return {};
}

Status Connection::join(sockaddr_storage& dst, uint64_t token, uint32_t index, uint32_t of, int timeout_ms,
                        const std::string& where) {
  RCP_ASSIGN(Joined j, join_session(dst, join_spec(hello()), token, index, of, timeout_ms, where));
  lanes_.add(std::move(j.id), j.rd_atomic, true);
  return {};
}

std::string Connection::describe() const {
  return fmt::format("rdma {}: {} queue pair{}, {} READs outstanding per QP, up to {} WRs queued per QP, {} SGEs per READ",
                     caps_.name, lanes_.size(), lanes_.size() == 1 ? "" : "s", neg_.rd_atomic, q_.read_wrs, q_.sge);
}

Result<uint32_t> Connection::register_memory(void* base, size_t len, bool remote_read) {
  if (len > caps_.max_mr_size)
    return make_error(EINVAL, fmt::format("{}: buffer pool of {} bytes exceeds max_mr_size {}", caps_.name, len, caps_.max_mr_size));
  int access = IBV_ACCESS_LOCAL_WRITE;
  if (remote_read) access |= IBV_ACCESS_REMOTE_READ;
  if (!remote_read && caps_.iwarp) access |= IBV_ACCESS_REMOTE_WRITE;  // iWARP READ sinks need it
  Mr mr(ibv_reg_mr(pd_.get(), base, len, access));
  if (!mr) return sys_error(fmt::format("ibv_reg_mr of {} bytes on {} (check `ulimit -l`)", len, caps_.name));
  const uint32_t key = remote_read ? mr->rkey : mr->lkey;
  if (!remote_read) sink_lkey_ = mr->lkey;
  mrs_.emplace(key, std::move(mr));
  return key;
}

Status Connection::send(std::span<const uint8_t> message) {
  RCP_TRY(ctrl_.queue(message));
  return flush();
}

Status Connection::flush() {
  if (!established() || failed_) return {};
  return ctrl_.flush();
}

Status Connection::read(uint64_t cookie, uint32_t rkey, std::span<const ReadWr> wrs) {
  if (!established() || failed_) return make_error(ENOTCONN, "RDMA READ on a connection that is not up");
  if (wrs.empty() || wrs.size() > read_capacity()) return make_error(EINVAL, "RDMA READ exceeds the queue");
  bool qp_failed = false;
  Status st = lanes_.post(cookie, rkey, sink_lkey_, wrs, peer_name_, qp_failed);
  if (qp_failed) failed_ = true;
  return st;
}

uint32_t Connection::read_capacity() const {
  if (!established() || failed_) return 0;
  return lanes_.capacity();
}

Status Connection::arm() {
  if (ibv_req_notify_cq(cq_.get(), 0) != 0) return sys_error("ibv_req_notify_cq");
  return {};
}

Status Connection::poll(std::vector<TransportEvent>& events) {
  if (closed_) return {};
  take_joins();
  // Consume completion-channel wakeups; acks are batched (each ack takes a lock).
  ibv_cq* ev_cq;
  void* ev_ctx;
  while (ibv_get_cq_event(cc_.get(), &ev_cq, &ev_ctx) == 0) {
    if (++unacked_cq_events_ >= 64) {
      ibv_ack_cq_events(cq_.get(), unacked_cq_events_);
      unacked_cq_events_ = 0;
    }
  }
  if (!drain_cq(events)) return {};
  // Connection events after completions: a message that arrived before
  // the peer hung up (say, its error report) is delivered before the close.
  poll_cm(events);
  if (!closed_) {
    Status st = flush();
    if (!st.ok()) close_with(events, st.error().message());
  }
  return {};
}

bool Connection::drain_cq(std::vector<TransportEvent>& events) {
  ibv_wc wc[32];
  for (;;) {
    int n = ibv_poll_cq(cq_.get(), 32, wc);
    if (n < 0) {
      close_with(events, "ibv_poll_cq failed");
      return false;
    }
    for (int i = 0; i < n; ++i) handle_wc(wc[i], events);
    if (n < 32) return true;
  }
}

void Connection::handle_wc(const ibv_wc& wc, std::vector<TransportEvent>& events) {
  const std::optional<WrId> id = WrId::decode(wc.wr_id);
  if (wc.status != IBV_WC_SUCCESS) {
    if (id && id->kind == WrKind::read) {
      events.push_back(
          TransportEvent::read_done(id->value, EIO, fmt::format("RDMA READ failed: {}", ibv_wc_status_str(wc.status))));
      lanes_.finish(id->value);
    }
    if (id && id->kind == WrKind::send) ctrl_.on_send(id->value);
    if (!failed_) {
      failed_ = true;
      close_with(events, fmt::format("{} completion failed on {}: {}", id ? wr_kind_name(id->kind) : "unknown work request",
                                     caps_.name, ibv_wc_status_str(wc.status)));
    }
    return;
  }
  if (!id) {
    log_debug("{}: completion with a wr_id we never issued: {:#x}", peer_name_, wc.wr_id);
    return;
  }
  switch (id->kind) {
    case WrKind::recv: ctrl_.on_recv(id->value, wc, events); break;
    case WrKind::send: ctrl_.on_send(id->value); break;
    case WrKind::read:
      lanes_.finish(id->value);
      events.push_back(TransportEvent::read_done(id->value));
      break;
  }
}

void Connection::take_joins() {
  if (!reg_) return;
  for (auto& j : reg_->take(token_)) {
    lanes_.add(std::move(j.id), j.rd_atomic, false);
    log_debug("{}: queue pair {} joined", peer_name_, lanes_.size());
  }
}

void Connection::poll_cm(std::vector<TransportEvent>& events) {
  rdma_cm_event* raw;
  while (rdma_get_cm_event(ch_.get(), &raw) == 0) {
    CmEvent e = take_event(raw);
    int lane = lanes_.find(e.id);
    if (lane < 0) {
      // The listener moves a joined id here before it hands the id over,
      // so its first event can precede the hand-over: pick it up now.
      take_joins();
      lane = lanes_.find(e.id);
    }
    if (lane < 0) {
      log_debug("{}: {} for an unknown cm_id", peer_name_, rdma_event_str(e.type));
      continue;
    }
    // The peer sends its last message, waits until it is acknowledged,
    // then disconnects; the receive completion can still land after this
    // poll's pass over the CQ and before the disconnect is read here.
    // Take it first, or the close would overtake the peer's last word.
    if (e.type == RDMA_CM_EVENT_DISCONNECTED && !drain_cq(events)) continue;
    if (lane > 0) {
      on_lane_event(static_cast<size_t>(lane), e, events);
      continue;
    }
    switch (e.type) {
      case RDMA_CM_EVENT_ESTABLISHED: lanes_[0].up = true; break;
      case RDMA_CM_EVENT_DISCONNECTED:
        lanes_[0].disconnected = true;
        close_with(events, "peer " + peer_name_ + " disconnected");
        break;
      case RDMA_CM_EVENT_DEVICE_REMOVAL:
        lanes_[0].disconnected = true;
        close_with(events, "RDMA device " + caps_.name + " was removed");
        break;
      case RDMA_CM_EVENT_TIMEWAIT_EXIT: break;
      default: close_with(events, fmt::format("connection to {}: {}", peer_name_, rdma_event_str(e.type))); break;
    }
  }
}

/// Events of an extra queue pair: up, or gone — and a session that lost a
/// QP cannot finish the READs queued on it, so it ends.
void Connection::on_lane_event(size_t i, const CmEvent& e, std::vector<TransportEvent>& events) {
  Lane& L = lanes_[i];
  switch (e.type) {
    case RDMA_CM_EVENT_ESTABLISHED:
      L.up = true;
      log_debug("{}: queue pair {} of {} is up (initiator depth {})", peer_name_, i + 1, lanes_.size(), L.rd_atomic);
      break;
    case RDMA_CM_EVENT_TIMEWAIT_EXIT: break;
    case RDMA_CM_EVENT_DISCONNECTED:
      L.disconnected = true;
      // At the end of a session the peer takes down all its QPs, in any
      // order. An extra QP with no READ on it is simply no longer used
      // (usable() skips it); the session ends when QP 0, the control
      // channel, does — or now, if READs were left on this one.
      if (L.wrs_out > 0)
        close_with(events, fmt::format("peer {} disconnected (queue pair {}, {} READs outstanding)", peer_name_, i + 1,
                                       L.wrs_out));
      break;
    default:
      L.disconnected = true;
      close_with(events, fmt::format("connection to {}, queue pair {}: {}", peer_name_, i + 1, rdma_event_str(e.type)));
      break;
  }
}

void Connection::close_with(std::vector<TransportEvent>& events, std::string why) {
  if (closed_) return;
  closed_ = true;
  events.push_back(TransportEvent::closed(ECONNRESET, std::move(why)));
}

}  // namespace rcp::rdma
