#include "transport/rdma/connection.h"

#include <sys/epoll.h>

#include <algorithm>
#include <system_error>
#include <thread>
#include <fmt/core.h>

#include "hash/digest.h"
#include "transport/rdma/cm.h"
#include "transport/backlog.h"
#include "transport/rdma/wr_id.h"
#include "util/log.h"
#include "util/test_faults.h"

namespace rcp::rdma {
namespace {

/// RAIL_STATS while READs are in flight: at most every 200 ms (a few control
/// messages a second next to one per chunk; idle, every change goes).
constexpr int kRailStatsEveryMs = 200;

}  // namespace

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
  if (shared_rx_ && qp_guard_) {
    // A receive the SRQ completed on our first QP and this session never
    // polled would take its buffer away from every session: with the QP
    // gone, nothing more completes, and what did goes back to the SRQ.
    qp_guard_.reset();
    ibv_wc wc[32];
    for (int n; cq_ && (n = ibv_poll_cq(cq_.get(), 32, wc)) > 0;)
      for (int i = 0; i < n; ++i)
        if (auto id = WrId::decode(wc[i].wr_id); id && id->kind == WrKind::recv) ctrl_.on_recv_failed(id->value);
  }
  if (cq_ && unacked_cq_events_ > 0) ibv_ack_cq_events(cq_.get(), unacked_cq_events_);
  for (auto& r : rails_)
    if (r->unacked > 0) ibv_ack_cq_events(r->cq.get(), r->unacked);
  for (const RailStat& r : rails_.empty() ? std::vector<RailStat>{} : rail_stats())
    log_debug("rail {} to {}: {} bytes read in {} chunks{}", r.device, r.peer, r.bytes, r.chunks,
             r.failed.empty() ? "" : ", failed: " + r.failed);
}

Status Connection::setup(uint32_t max_qps, std::shared_ptr<SharedReceive> shared) {
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
  qa.cap.max_recv_wr = shared ? 0 : q_.ctrl_depth;
  qa.cap.max_send_sge = q_.sge;
  qa.cap.max_recv_sge = 1;
  qa.srq = shared ? shared->srq() : nullptr;
  if (rdma_create_qp(id_.get(), shared ? shared->pd() : pd_.get(), &qa) != 0)
    return sys_error(fmt::format("rdma_create_qp{} on {}", shared ? " (on the shared receive queue)" : "", caps_.name));
  qp_guard_ = std::make_unique<QpGuard>(id_.get());
  lanes_.configure(q_.read_wrs, q_.sge, q_.read_budget);
  lanes_.add_first(id_.get());
  if (shared) {
    shared_rx_ = shared;
    RCP_TRY(ctrl_.setup_shared(std::move(shared), id_->qp, q_.ctrl_depth, caps_.name));
  } else {
    RCP_TRY(ctrl_.setup(pd_.get(), id_->qp, q_.ctrl_depth, caps_.name));
  }
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
  peer_ctrl_depth_ = peer.ctrl_depth;
  peer_msg_size_ = peer.ctrl_msg_size;
  // With rails in play control may have to move off rail 0: keep what it
  // sends until acknowledged, from the first send on (ControlLog).
  if (peer.flags & (wire::kHelloWantRails | wire::kHelloRails)) ctrl_.keep_log();
  neg_.reads_in_flight = q_.read_wrs;
  neg_.rd_atomic = rd_atomic;
  lanes_[0].rd_atomic = rd_atomic;
  neg_.max_sge = q_.sge;
  neg_.max_chunk = peer.max_chunk;
  neg_.checksums = static_cast<uint16_t>(peer.checksums & supported_checksums());
  peer_takes_stats_ = (peer.flags & wire::kHelloRailStats) != 0;
}

void Connection::set_established() {
  lanes_[0].up = true;
  path0_ = path_info(id_.get());
  // Test-only fault switch: a client flooding the control QP past its
  // credits, so the suite proves rcpd ends that session (the surplus would
  // take the shared receive queue's buffers from every other session).
  // Without end: what the peer's check must catch is a flood outrunning its
  // grants, and a bounded one could be over before the peer slows down
  // (seen in CI: 3 x depth of them granted in time, the copy completed).
  if (test_faults().rdma_credit_overrun) ctrl_.flood(UINT32_MAX);
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
  for (const auto& r : rails_) s.rails.push_back(RailPoint{r->ctx, r->pd.get(), r->cq.get(), r->caps.name});
  s.ctrl_depth = q_.ctrl_depth;  // (a rail join that asks gets a standby control channel this deep)
  return s;
}

Result<uint32_t> Connection::add_rail(ibv_context* ctx, uint8_t index, std::string peer) {
  if (rails_.size() + 1 >= wire::kMaxRails) return make_error(EINVAL, "too many rails");
  auto r = std::make_unique<Rail>();
  RCP_TRY(setup_rail(*r, ctx, q_.cqe));
  r->index = index;
  r->peer = std::move(peer);
  epoll_event ev{};
  ev.events = EPOLLIN;
  if (::epoll_ctl(ep_.get(), EPOLL_CTL_ADD, r->cc->fd, &ev) != 0) return sys_error("epoll_ctl");
  // The device's async events (port down, QP errors) wake the session too.
  // rdma_cm shares the context with every id on the device; nothing else in
  // rcp reads its events, and a session that misses one (another session
  // of rcpd read it) still sees its READs fail.
  RCP_TRY(set_nonblock(ctx->async_fd));
  if (::epoll_ctl(ep_.get(), EPOLL_CTL_ADD, ctx->async_fd, &ev) != 0 && errno != EEXIST) return sys_error("epoll_ctl");
  rails_.push_back(std::move(r));
  lanes_.set_rails(rails_.size() + 1);
  return static_cast<uint32_t>(rails_.size());
}

Status Connection::join_rail(sockaddr_storage& dst, uint64_t token, uint32_t rail, uint32_t qp, int timeout_ms,
                             const std::string& where) {
  const Rail& R = *rails_.at(rail - 1);
  JoinSpec s = join_spec(hello());
  s.rails.clear();
  s.ctx = R.ctx;
  s.pd = R.pd.get();
  s.cq = R.cq.get();
  s.caps = R.caps;
  s.rail = R.index;
  const bool first = std::none_of(standby_.begin(), standby_.end(), [&](const Standby& x) { return x.rail == rail; });
  // (Test-only fault switch: ask on every queue pair of the rail, as a
  // greedy client would; rcpd grants the first.)
  s.ctrl_depth = first || test_faults().rdma_standby_every ? q_.ctrl_depth : 0;
  // Test-only fault switch: name another rail than the one joined, so the
  // suite can prove rcpd refuses an index it did not announce and a join
  // that arrived on another device than the rail it names.
  if (test_faults().rdma_rail_index > 0) s.rail = static_cast<uint8_t>(test_faults().rdma_rail_index);
  // Test-only fault switch: join as a plain data QP of the session (no rail
  // named) over this rail's device, so the suite proves rcpd refuses a QP
  // that would sit on another device than the session's PD.
  if (test_faults().rdma_join_plain) s.rail = 0;
  RCP_ASSIGN(Joined j, join_session(dst, s, token, qp, 0, timeout_ms, where));
  if (rails_.at(rail - 1)->path.port == 0) rails_.at(rail - 1)->path = path_info(j.id.get());
  lanes_.add(std::move(j.id), j.rd_atomic, true, rail);
  if (j.ctrl) add_standby(rail, lanes_.size() - 1, std::move(j.ctrl));
  return {};
}

void Connection::leave_out_rail(uint32_t rail, const std::string& why) {
  Rail& R = *rails_.at(rail - 1);
  if (R.failed.empty()) R.failed = "not joined: " + why;
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
  const size_t data = lanes_.size() - 1;  // lane 0 carries control only
  return fmt::format("rdma {}: {} queue pair{} for data and 1 for control, {} READs outstanding per QP, up to {} WRs "
                     "queued per QP, {} SGEs per READ",
                     caps_.name, data, data == 1 ? "" : "s", neg_.rd_atomic, q_.read_wrs, q_.sge);
}

Status Connection::queue_rail_stats() {
  std::vector<wire::RailCount> now;
  bool busy = false;
  for (size_t i = 0; i <= rails_.size() && i < lanes_.rails(); ++i) {
    const RailLoad& L = lanes_.rail(i);
    busy = busy || L.reads_out > 0;
    now.push_back({static_cast<uint8_t>(i == 0 ? 0 : rails_[i - 1]->index), L.bytes, L.chunks});
  }
  const auto t = std::chrono::steady_clock::now();
  const bool nothing_read = std::all_of(now.begin(), now.end(), [](const wire::RailCount& c) { return c.chunks == 0; });
  if ((stats_sent_.empty() && nothing_read) || now == stats_sent_ || (busy && t - stats_at_ < std::chrono::milliseconds(kRailStatsEveryMs))) return {};
  stats_sent_ = now;
  stats_at_ = t;
  // Test-only fault switch: a lying daemon (1 TiB more than it read, or a
  // rail the client never joined), so the suite proves rcp refuses both.
  if (test_faults().rdma_rail_stats_lie == 1) now[0].bytes += uint64_t{1} << 40;
  if (test_faults().rdma_rail_stats_lie == 2) now[0].rail = wire::kMaxRails - 1;
  return queue_control(wire::encode_rail_stats(now));
}

Status Connection::send(std::span<const uint8_t> message) {
  if (peer_takes_stats_) RCP_TRY(queue_rail_stats());
  RCP_TRY(queue_control(message));
  return flush();
}

size_t Connection::unsent_bytes() const {
  size_t n = ctl_->unsent();
  for (const auto& m : held_) n += unsent_cost(m.size());  // (only while control moves to another rail)
  return n;
}

Status Connection::queue_control(std::span<const uint8_t> message) {
  if (!moving_) return ctl_->queue(message);  // (which bounds what it holds)
  if (const size_t held = unsent_bytes(); held + unsent_cost(message.size()) > kMaxUnsent)
    return unsent_error(peer_name_, held, ctl_->unsent_messages() + held_.size());
  if (message.size() > peer_msg_size_ || message.empty())
    return make_error(EMSGSIZE, fmt::format("control message of {} bytes for {}", message.size(), peer_name_));
  held_.emplace_back(message.begin(), message.end());
  return {};
}

Status Connection::flush() {
  if (!established() || failed_) return {};
  return ctl_->flush();
}

Status Connection::read(uint64_t cookie, uint32_t rkey, std::span<const ReadWr> wrs) {
  if (!established() || failed_) return make_error(ENOTCONN, "RDMA READ on a connection that is not up");
  if (wrs.empty() || wrs.size() > read_capacity()) return make_error(EINVAL, "RDMA READ exceeds the queue");
  bool qp_failed = false;
  const auto keys = keys_for(rkey);
  Status st = lanes_.post(cookie, rkey, keys, wrs, peer_name_, qp_failed);
  if (qp_failed) failed_ = true;
  return st;
}

uint32_t Connection::read_capacity() const {
  if (!established() || failed_) return 0;
  // Chunks of a failed rail go first: nothing new until they are posted.
  if (!orphans_.empty()) return 0;
  return lanes_.capacity();
}

Status Connection::arm() {
  if (ibv_req_notify_cq(cq_.get(), 0) != 0) return sys_error("ibv_req_notify_cq");
  for (auto& r : rails_)
    if (ibv_req_notify_cq(r->cq.get(), 0) != 0) return sys_error("ibv_req_notify_cq on " + r->caps.name);
  return {};
}

std::vector<RailStat> Connection::rail_stats() const {
  std::vector<RailStat> out;
  auto stat = [&](const std::string& dev, const std::string& peer, const PathInfo& p, size_t lane_rail,
                  const std::string& failed) {
    RailStat s;
    s.device = dev;
    s.peer = peer;
    s.port = p.port;
    s.gid_index = p.gid_index;
    s.gid = p.gid;
    s.gid_type = p.gid_type;
    s.local = p.local;
    s.bytes = lanes_.rail(lane_rail).bytes;
    s.chunks = lanes_.rail(lane_rail).chunks;
    const uint8_t wire_index = lane_rail == 0 ? 0 : rails_[lane_rail - 1]->index;
    if (const auto& pc = peer_counts_[wire_index]) {
      s.peer_bytes = pc->bytes;
      s.peer_chunks = pc->chunks;
    }
    s.failed = failed;
    out.push_back(std::move(s));
  };
  stat(caps_.name, peer_name_, path0_, 0, rail0_failed_);
  for (size_t i = 0; i < rails_.size(); ++i) stat(rails_[i]->caps.name, rails_[i]->peer, rails_[i]->path, i + 1, rails_[i]->failed);
  return out;
}

Status Connection::poll(std::vector<TransportEvent>& events) {
  if (closed_) return {};
  const size_t first = events.size();
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
  if (ctrl_.overrun() && ctl_rail_ == 0)
    close_with(events, fmt::format("peer {} sent {} control messages on {} credits", peer_name_, ctrl_.received(),
                                   ctrl_.granted()));
  poll_async(events);
  for (size_t r = 1; r <= rails_.size(); ++r) drain_rail(r, events);
  take_rail_keys(events, first);
  repost_orphans(events);
  // Connection events after completions: a message that arrived before
  // the peer hung up (say, its error report) is delivered before the close.
  poll_cm(events);
  if (!ctl_lost_.empty()) close_with(events, ctl_lost_);
  if (rail_regs_due_ && !closed_) {
    Status st = register_late_rails();
    if (!st.ok()) close_with(events, st.error().message());
  }
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
  // A READ rail 0 gave back when control moved off it (read again over
  // another rail): its late completion is not the one the engine waits for.
  if (id && id->kind == WrKind::read && lanes_.rail_of(id->value) != 0) return;
  if (wc.status != IBV_WC_SUCCESS) {
    if (id && id->kind == WrKind::send) ctrl_.on_send(id->value);
    if (id && id->kind == WrKind::recv) ctrl_.on_recv_failed(id->value);
    if (ctl_rail_ != 0) return;  // rail 0 flushing what was left on it
    std::string why = fmt::format("{} completion failed on {}: {}", id ? wr_kind_name(id->kind) : "unknown work request",
                                  caps_.name, ibv_wc_status_str(wc.status));
    if (!standby_.empty()) {  // control moves, this READ is read again elsewhere (or the session ends)
      fail_control(std::move(why), events);
      return;
    }
    if (id && id->kind == WrKind::read) {
      events.push_back(
          TransportEvent::read_done(id->value, EIO, fmt::format("RDMA READ failed: {}", ibv_wc_status_str(wc.status))));
      lanes_.finish(id->value, false);
    }
    if (!failed_) {
      failed_ = true;
      close_with(events, std::move(why));
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
    // A rail join names its rail by wire index; ours is the same (the
    // daemon numbers its rails as it announced them).
    if (j.rail > 0 && j.rail <= rails_.size() && rails_[j.rail - 1]->peer.empty())
      rails_[j.rail - 1]->peer = sockaddr_string(rdma_get_peer_addr(j.id.get()));
    lanes_.add(std::move(j.id), j.rd_atomic, false, j.rail <= rails_.size() ? j.rail : 0);
    if (j.rail > 0 && j.rail <= rails_.size() && !regs_.empty()) rail_regs_due_ = true;
    if (j.ctrl) {
      add_standby(j.rail, lanes_.size() - 1, std::move(j.ctrl));
      if (test_faults().rdma_standby_junk) {
        // Test-only fault switch: a lying daemon sending on a standby channel
        // before moving control there (rail stats where CONTROL_MOVED
        // belongs), so the suite proves the client refuses it.
        ControlChannel& c = *standby_.back().ch;
        const std::vector<wire::RailCount> junk{{0, 0, 0}};
        if (c.queue(wire::encode_rail_stats(junk)).ok()) (void)c.flush();
      }
    }
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
    if (e.type == RDMA_CM_EVENT_DISCONNECTED && ctl_rail_ != 0 && static_cast<size_t>(lane) == ctl_lane_)
      drain_rail(ctl_rail_, events);  // (the same for control on another rail)
    if (lane == 0 && ctl_rail_ != 0) {  // control left rail 0: what happens to its QP no longer matters
      if (e.type == RDMA_CM_EVENT_DISCONNECTED) lanes_[0].disconnected = true;
      continue;
    }
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
  if (ctl_rail_ != 0 && i == ctl_lane_ && e.type != RDMA_CM_EVENT_ESTABLISHED && e.type != RDMA_CM_EVENT_TIMEWAIT_EXIT) {
    // The queue pair control moved to: it ends the session as QP 0 did.
    L.disconnected = true;
    close_with(events, e.type == RDMA_CM_EVENT_DISCONNECTED
                           ? "peer " + peer_name_ + " disconnected"
                           : fmt::format("connection to {} (control, rail {}): {}", peer_name_, ctl_rail_ + 1,
                                         rdma_event_str(e.type)));
    return;
  }
  if (L.rail > 0 && e.type != RDMA_CM_EVENT_ESTABLISHED && e.type != RDMA_CM_EVENT_TIMEWAIT_EXIT) {
    // A QP of another rail went away: the rail is dropped and its chunks
    // are read again over the others; the session goes on. (At the end of a
    // session this is the peer's ordinary disconnect, nothing outstanding.)
    L.disconnected = true;
    if (L.wrs_out > 0)
      fail_rail(L.rail, fmt::format("queue pair {} to {}: {}", i + 1, rails_[L.rail - 1]->peer, rdma_event_str(e.type)));
    return;
  }
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
