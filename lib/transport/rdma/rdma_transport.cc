#include "transport/rdma/rdma_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/epoll.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fmt/core.h>
#include <map>
#include <mutex>
#include <unordered_map>

#include "hash/digest.h"
#include "transport/rdma/handles.h"
#include "util/fd.h"
#include "util/log.h"
#include "util/test_faults.h"

namespace rcp {
namespace {

// wr_id = tag in the top byte | index or cookie below.
constexpr uint64_t kTagShift = 56;
constexpr uint64_t kTagRecv = 1ull << kTagShift;
constexpr uint64_t kTagSend = 2ull << kTagShift;
constexpr uint64_t kTagRead = 3ull << kTagShift;
constexpr uint64_t kTagMask = 0xffull << kTagShift;

/// READ work requests kept outstanding per QP at most. The device serves
/// max_qp_rd_atom of them at a time and queues the rest in the SQ; 256 keeps
/// the wire busy at 64 KiB..1 MiB chunks without a huge SQ (perftest's
/// default tx depth is 128, 3FS uses 128).
constexpr uint32_t kMaxReadWrs = 256;
/// SGEs per READ we ever ask for; rxe offers 32, mlx5 30. 16 × 64 KiB blocks
/// covers a 1 MiB chunk in one work request.
constexpr uint32_t kMaxSge = 16;
/// Most queue pairs one session may have, the first included (rcp --streams
/// allows 1..16). It bounds what one client can make the daemon allocate.
constexpr uint32_t kMaxQps = 16;

Status set_nonblock(int fd) {
  int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0 || ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return sys_error("fcntl O_NONBLOCK");
  return {};
}

std::string sockaddr_string(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (!sa) return "?";
  if (sa->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    return fmt::format("{}:{}", buf, ntohs(in->sin_port));
  }
  if (sa->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
    return fmt::format("[{}]:{}", buf, ntohs(in6->sin6_port));
  }
  return "?";
}

/// What we keep of a cm event after acking it.
struct CmEvent {
  rdma_cm_event_type type;
  int status = 0;
  std::vector<uint8_t> private_data;
  uint8_t initiator_depth = 0;
  uint8_t responder_resources = 0;
  rdma_cm_id* id = nullptr;
};

CmEvent take_event(rdma_cm_event* ev) {
  CmEvent e;
  e.type = ev->event;
  e.status = ev->status;
  e.id = ev->id;
  if (ev->param.conn.private_data && ev->param.conn.private_data_len > 0) {
    auto* p = static_cast<const uint8_t*>(ev->param.conn.private_data);
    e.private_data.assign(p, p + ev->param.conn.private_data_len);
  }
  e.initiator_depth = ev->param.conn.initiator_depth;
  e.responder_resources = ev->param.conn.responder_resources;
  rdma_ack_cm_event(ev);
  return e;
}

Result<CmEvent> wait_cm_event(rdma_event_channel* ch, rdma_cm_event_type want, int timeout_ms, const std::string& what) {
  pollfd pfd{ch->fd, POLLIN, 0};
  int pr = ::poll(&pfd, 1, timeout_ms);
  if (pr == 0) return make_error(ETIMEDOUT, what);
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(ch, &ev) != 0) return sys_error(what);
  CmEvent e = take_event(ev);
  if (e.type != want) {
    std::string msg = fmt::format("{}: {} (status {})", what, rdma_event_str(e.type), e.status);
    if (e.type == RDMA_CM_EVENT_REJECTED) {
      const auto& pd = e.private_data;
      const bool ours = pd.size() >= wire::kHelloSize && pd[0] == (wire::kMagic >> 24) &&
                        pd[1] == ((wire::kMagic >> 16) & 0xff) && pd[2] == ((wire::kMagic >> 8) & 0xff) &&
                        pd[3] == (wire::kMagic & 0xff);
      if (ours) {  // rcpd rejects with its own hello: say which version it speaks
        auto h = wire::decode_hello(pd);
        if (h.ok() && (h->flags & wire::kHelloJoin))
          msg = fmt::format("{}: refused by rcpd: it did not let this queue pair join the session (its log says why)", what);
        else
          msg = fmt::format("{}: refused by rcpd{}", what, h.ok() ? "" : ": " + h.error().context);
      } else {
        msg = fmt::format("{}: connection refused (is rcpd listening on that rdma_cm port?)", what);
      }
    }
    int code = e.type == RDMA_CM_EVENT_REJECTED ? ECONNREFUSED
               : e.type == RDMA_CM_EVENT_UNREACHABLE ? EHOSTUNREACH
                                                      : (e.status < 0 ? -e.status : EIO);
    return make_error(code, msg);
  }
  return e;
}

struct DeviceCaps {
  uint32_t max_qp_wr, max_sge, max_sge_rd, max_cqe;
  uint8_t init_rd, resp_rd;
  uint64_t max_mr_size;
  bool iwarp;
  std::string name;
};

Result<DeviceCaps> query_caps(ibv_context* ctx) {
  ibv_device_attr a{};
  if (int rc = ibv_query_device(ctx, &a)) return make_error(rc, "ibv_query_device");
  DeviceCaps c;
  c.name = ibv_get_device_name(ctx->device);
  c.max_qp_wr = static_cast<uint32_t>(a.max_qp_wr);
  c.max_sge = static_cast<uint32_t>(a.max_sge);
  // Some providers report 0 for max_sge_rd; then the general limit applies.
  c.max_sge_rd = a.max_sge_rd > 0 ? static_cast<uint32_t>(a.max_sge_rd) : c.max_sge;
  c.max_cqe = static_cast<uint32_t>(a.max_cqe);
  c.init_rd = static_cast<uint8_t>(std::min(a.max_qp_init_rd_atom, 255));
  c.resp_rd = static_cast<uint8_t>(std::min(a.max_qp_rd_atom, 255));
  c.max_mr_size = a.max_mr_size;
  c.iwarp = ctx->device->transport_type == IBV_TRANSPORT_IWARP;
  return c;
}

/// Resolves address and route on a fresh channel and id. Split out so a
/// timed-out attempt can be thrown away whole: an id still resolving cannot
/// be asked again.
Result<std::pair<rdma::EventChannel, rdma::CmId>> resolve_once(sockaddr_storage& dst, int timeout_ms,
                                                               const std::string& where) {
  rdma::EventChannel ch(rdma_create_event_channel());
  if (!ch) return sys_error("rdma_create_event_channel (is an RDMA device present?)");
  rdma_cm_id* raw = nullptr;
  if (rdma_create_id(ch.get(), &raw, nullptr, RDMA_PS_TCP) != 0) return sys_error("rdma_create_id");
  rdma::CmId id(raw);
  if (rdma_resolve_addr(raw, nullptr, reinterpret_cast<sockaddr*>(&dst), timeout_ms) != 0)
    return sys_error(where + ": rdma_resolve_addr");
  // Wait a little longer than rdma_cm's own timeout so its ADDR_ERROR is seen.
  RCP_TRY(wait_cm_event(ch.get(), RDMA_CM_EVENT_ADDR_RESOLVED, timeout_ms + 1000, where + ": resolve address"));
  if (rdma_resolve_route(raw, timeout_ms) != 0) return sys_error(where + ": rdma_resolve_route");
  RCP_TRY(wait_cm_event(ch.get(), RDMA_CM_EVENT_ROUTE_RESOLVED, timeout_ms + 1000, where + ": resolve route"));
  return std::make_pair(std::move(ch), std::move(id));
}

/// Creates the QP of an extra queue pair of a session, on the session's PD
/// (so the source pool's one rkey is valid on it) and its CQ. It carries
/// only READs: no receive is ever posted and nothing is sent on it.
Status create_read_qp(rdma_cm_id* id, ibv_pd* pd, ibv_cq* cq, uint32_t sq, uint32_t sge, const std::string& dev) {
  ibv_qp_init_attr qa{};
  qa.send_cq = cq;
  qa.recv_cq = cq;
  qa.qp_type = IBV_QPT_RC;
  qa.sq_sig_all = 0;
  qa.cap.max_send_wr = sq;
  qa.cap.max_recv_wr = 1;  // some providers refuse 0
  qa.cap.max_send_sge = sge;
  qa.cap.max_recv_sge = 1;
  if (rdma_create_qp(id, pd, &qa) != 0) return sys_error("rdma_create_qp (extra queue pair) on " + dev);
  return {};
}

/// A queue pair the listener accepted into a session, not yet picked up by
/// the session's thread.
struct Joined {
  rdma::CmId id;
  uint32_t rd_atomic = 0;
};

/// What a daemon-side session offers the queue pairs that join it. The
/// listener thread creates a joining QP on the session's PD and CQ while it
/// holds `mu`; the session marks the point closed under `mu` before it
/// releases anything, so a join can never touch a freed PD or CQ.
struct JoinPoint {
  std::mutex mu;
  bool open = true;
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  rdma_event_channel* ch = nullptr;  ///< joined ids move here, so the session sees their events
  uint32_t sq = 0, sge = 1;
  DeviceCaps caps{};
  wire::Hello hello;                 ///< what the daemon answers a join with
  uint32_t qps = 1, max_qps = 1;     ///< queue pairs so far (waiting ones included), and the most allowed
  std::vector<Joined> fresh;
};

/// Daemon side: sessions that accept extra queue pairs, by token.
struct JoinRegistry {
  std::mutex mu;
  std::unordered_map<uint64_t, std::shared_ptr<JoinPoint>> by_token;
};

class RdmaTransport final : public Transport {
 public:
  RdmaTransport(rdma::EventChannel ch, rdma::CmId id, RdmaOptions opt)
      : ch_(std::move(ch)), id_(std::move(id)), opt_(opt), credits_(0) {}

  ~RdmaTransport() override {
    if (jp_) {
      // No join may start from here on; one accepted but not yet picked up
      // is released with the others (before the CQ and PD, see members).
      {
        std::lock_guard lk(reg_->mu);
        reg_->by_token.erase(token_);
      }
      std::vector<Joined> late;
      {
        std::lock_guard lk(jp_->mu);
        jp_->open = false;
        late.swap(jp_->fresh);
      }
      for (auto& j : late) extra_ids_.push_back(std::move(j.id));
    }
    if (total_chunks_ > 0) {
      std::string per;
      for (auto& l : lanes_) per += fmt::format("{}{}", per.empty() ? "" : "/", l.chunks);
      log_info("{} {}: chunks read per queue pair: {}", name(), peer_name_, per);
    }
    if (established_ && !disconnected_) rdma_disconnect(id_.get());
    for (size_t i = 1; i < lanes_.size(); ++i)
      if (lanes_[i].up && !lanes_[i].disconnected) rdma_disconnect(lanes_[i].id);
    if (cq_ && unacked_cq_events_ > 0) ibv_ack_cq_events(cq_.get(), unacked_cq_events_);
  }

  /// PD, completion channel, CQ, QP and the control buffers (receives posted).
  /// The CQ is sized for `max_qps` queue pairs: all of them share it.
  Status setup(uint32_t max_qps) {
    max_qps_ = std::clamp<uint32_t>(max_qps, 1, kMaxQps);
    ibv_context* ctx = id_->verbs;
    RCP_ASSIGN(caps_, query_caps(ctx));
    pd_.reset(ibv_alloc_pd(ctx));
    if (!pd_) return sys_error("ibv_alloc_pd on " + caps_.name);
    cc_.reset(ibv_create_comp_channel(ctx));
    if (!cc_) return sys_error("ibv_create_comp_channel on " + caps_.name);
    RCP_TRY(set_nonblock(cc_->fd));
    depth_ = opt_.ctrl_depth;
    if (caps_.max_qp_wr < depth_ * 2u + 8u) return make_error(EINVAL, fmt::format("{}: max_qp_wr {} too small", caps_.name, caps_.max_qp_wr));
    read_wrs_ = std::min(kMaxReadWrs, caps_.max_qp_wr - depth_ - 1);
    sge_ = std::min({kMaxSge, caps_.max_sge, caps_.max_sge_rd});
    const uint32_t sq = depth_ + read_wrs_ + 1;
    // Control takes at most depth_ send and depth_ receive completions; each
    // queue pair adds at most one per READ WR it has outstanding (only the
    // last of a chunk is signalled, but a QP in error flushes them all).
    const uint64_t want = uint64_t{depth_} * 2 + 1 + uint64_t{max_qps_} * read_wrs_;
    const uint32_t cqe = static_cast<uint32_t>(std::min<uint64_t>(want, caps_.max_cqe));
    if (cqe < depth_ * 2u + 2u) return make_error(EINVAL, fmt::format("{}: max_cqe {} too small", caps_.name, caps_.max_cqe));
    read_budget_ = cqe - depth_ * 2u - 1u;
    cq_.reset(ibv_create_cq(ctx, static_cast<int>(cqe), nullptr, cc_.get(), 0));
    if (!cq_) return sys_error("ibv_create_cq on " + caps_.name);
    ibv_qp_init_attr qa{};
    qa.send_cq = cq_.get();
    qa.recv_cq = cq_.get();
    qa.qp_type = IBV_QPT_RC;
    qa.sq_sig_all = 0;  // READs are signalled selectively: only the last WR of a chunk
    qa.cap.max_send_wr = sq;
    qa.cap.max_recv_wr = depth_;
    qa.cap.max_send_sge = sge_;
    qa.cap.max_recv_sge = 1;
    if (rdma_create_qp(id_.get(), pd_.get(), &qa) != 0) return sys_error("rdma_create_qp on " + caps_.name);
    qp_guard_ = std::make_unique<rdma::QpGuard>(id_.get());
    lanes_.push_back(Lane{id_.get()});
    ctrl_mem_.assign(size_t{depth_} * 2 * wire::kMaxMessage, 0);
    ctrl_mr_.reset(ibv_reg_mr(pd_.get(), ctrl_mem_.data(), ctrl_mem_.size(), IBV_ACCESS_LOCAL_WRITE));
    if (!ctrl_mr_) return sys_error("ibv_reg_mr (control buffers) on " + caps_.name);
    for (uint32_t i = 0; i < depth_; ++i) RCP_TRY(post_recv(i));
    for (uint32_t i = 0; i < depth_; ++i) free_send_.push_back(i);
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

  wire::Hello hello() const {
    wire::Hello h;
    h.ctrl_depth = depth_;
    h.rd_init = caps_.init_rd;
    h.rd_resp = caps_.resp_rd;
    h.max_sge_rd = static_cast<uint16_t>(sge_);
    h.checksums = supported_checksums();
    h.max_chunk = opt_.max_chunk;
    h.qps = static_cast<uint16_t>(max_qps_);
    return h;
  }

  /// Daemon side: lets up to `max_qps` queue pairs in all join this session
  /// with `token` (registered before the client can learn it).
  void offer_joins(std::shared_ptr<JoinRegistry> reg, uint64_t token, uint32_t max_qps, const wire::Hello& answer) {
    auto jp = std::make_shared<JoinPoint>();
    jp->ctx = id_->verbs;
    jp->pd = pd_.get();
    jp->cq = cq_.get();
    jp->ch = ch_.get();
    jp->sq = read_wrs_ + 1;
    jp->sge = sge_;
    jp->caps = caps_;
    jp->hello = answer;
    jp->max_qps = std::min(max_qps, max_qps_);
    reg_ = std::move(reg);
    token_ = token;
    jp_ = jp;
    std::lock_guard lk(reg_->mu);
    reg_->by_token[token] = std::move(jp);
  }

  /// Client side: opens queue pair `index` (0-based) of `of` and joins it to
  /// this session with the daemon's token. Its cm_id moves to this
  /// transport's event channel once it is up, so one poll sees every QP.
  Status join(sockaddr_storage& dst, uint64_t token, uint32_t index, uint32_t of, int timeout_ms,
              const std::string& where) {
    const std::string what = fmt::format("{}: queue pair {} of {}", where, index + 1, of);
    RCP_ASSIGN(auto r, resolve_once(dst, timeout_ms, what));
    rdma::EventChannel ch = std::move(r.first);
    rdma::CmId id = std::move(r.second);  // declared after ch: destroyed before it
    if (id->verbs != id_->verbs)
      return make_error(EXDEV, what + ": routed over another RDMA device than queue pair 1 (a PD cannot span devices)");
    RCP_TRY(create_read_qp(id.get(), pd_.get(), cq_.get(), read_wrs_ + 1, sge_, caps_.name));
    auto pd = wire::encode_hello_token(hello(), wire::kHelloJoin, token);
    rdma_conn_param cp{};
    cp.initiator_depth = caps_.init_rd;
    cp.responder_resources = caps_.resp_rd;
    cp.retry_count = 7;
    cp.rnr_retry_count = 7;
    cp.private_data = pd.data();
    cp.private_data_len = static_cast<uint8_t>(pd.size());
    if (rdma_connect(id.get(), &cp) != 0) return sys_error(what + ": rdma_connect");
    RCP_ASSIGN(CmEvent est, wait_cm_event(ch.get(), RDMA_CM_EVENT_ESTABLISHED, timeout_ms, what));
    auto ph = wire::decode_hello(est.private_data);
    if (!ph.ok()) return make_error(ph.error().code, what + ": " + ph.error().context);
    if (rdma_migrate_id(id.get(), ch_.get()) != 0) return sys_error(what + ": rdma_migrate_id");
    const uint32_t rd = std::min<uint32_t>(caps_.init_rd, ph->rd_resp);
    add_lane(std::move(id), rd, true);
    return {};
  }

  /// Applies the peer's hello: credits, limits, checksum set.
  void set_peer(const wire::Hello& peer, uint32_t rd_atomic) {
    credits_ = Credits(peer.ctrl_depth);
    peer_msg_size_ = peer.ctrl_msg_size;
    neg_.reads_in_flight = read_wrs_;
    neg_.rd_atomic = rd_atomic;
    lanes_[0].rd_atomic = rd_atomic;
    neg_.max_sge = sge_;
    neg_.max_chunk = peer.max_chunk;
    neg_.checksums = static_cast<uint16_t>(peer.checksums & supported_checksums());
    peer_name_ = sockaddr_string(rdma_get_peer_addr(id_.get()));
  }
  void set_established() { established_ = true; }
  const DeviceCaps& caps() const { return caps_; }
  rdma_cm_id* id() const { return id_.get(); }

  std::string name() const override { return "rdma " + caps_.name; }
  std::string describe() const override {
    return fmt::format("rdma {}: {} queue pair{}, {} READs outstanding per QP, up to {} WRs queued per QP, {} SGEs per READ",
                       caps_.name, lanes_.size(), lanes_.size() == 1 ? "" : "s", neg_.rd_atomic, read_wrs_, sge_);
  }
  std::string peer() const override { return peer_name_; }
  const Negotiated& negotiated() const override { return neg_; }

  Result<uint32_t> register_memory(void* base, size_t len, bool remote_read) override {
    if (len > caps_.max_mr_size)
      return make_error(EINVAL, fmt::format("{}: buffer pool of {} bytes exceeds max_mr_size {}", caps_.name, len, caps_.max_mr_size));
    int access = IBV_ACCESS_LOCAL_WRITE;
    if (remote_read) access |= IBV_ACCESS_REMOTE_READ;
    if (!remote_read && caps_.iwarp) access |= IBV_ACCESS_REMOTE_WRITE;  // iWARP READ sinks need it
    rdma::Mr mr(ibv_reg_mr(pd_.get(), base, len, access));
    if (!mr) return sys_error(fmt::format("ibv_reg_mr of {} bytes on {} (check `ulimit -l`)", len, caps_.name));
    const uint32_t key = remote_read ? mr->rkey : mr->lkey;
    lkeys_[key] = mr->lkey;
    mrs_.emplace(key, std::move(mr));
    if (!remote_read) sink_lkey_ = lkeys_[key];
    return key;
  }

  void deregister_memory(uint32_t key) override { mrs_.erase(key); }

  Status send(std::span<const uint8_t> message) override {
    if (message.size() > peer_msg_size_ || message.empty())
      return make_error(EMSGSIZE, fmt::format("control message of {} bytes for {}", message.size(), peer_name_));
    out_.emplace_back(message.begin(), message.end());
    return flush();
  }

  Status read(uint64_t cookie, uint32_t rkey, std::span<const ReadWr> wrs) override {
    if (!established_ || failed_) return make_error(ENOTCONN, "RDMA READ on a connection that is not up");
    if (wrs.empty() || wrs.size() > read_capacity()) return make_error(EINVAL, "RDMA READ exceeds the queue");
    if (cookie & kTagMask) return make_error(EINVAL, "RDMA READ cookie too large");
    // A chunk's WRs go to one QP (its last, signalled WR covers the rest);
    // chunks go to the least loaded QP, ties broken round robin.
    const uint32_t n = static_cast<uint32_t>(wrs.size());
    int lane = -1;
    for (size_t k = 0; k < lanes_.size(); ++k) {
      const size_t i = (next_lane_ + k) % lanes_.size();
      if (!usable(i) || read_wrs_ - lanes_[i].wrs_out < n) continue;
      if (lane < 0 || lanes_[i].wrs_out < lanes_[static_cast<size_t>(lane)].wrs_out) lane = static_cast<int>(i);
    }
    if (lane < 0) return make_error(EINVAL, "RDMA READ exceeds the queue");
    Lane& L = lanes_[static_cast<size_t>(lane)];
    next_lane_ = static_cast<size_t>(lane) + 1;
    std::vector<ibv_send_wr> w(wrs.size());
    std::vector<ibv_sge> sg;
    size_t total_sges = 0;
    for (auto& r : wrs) total_sges += r.sges.size();
    sg.reserve(total_sges);
    for (size_t i = 0; i < wrs.size(); ++i) {
      if (wrs[i].sges.empty() || wrs[i].sges.size() > sge_) return make_error(EINVAL, "READ with too many SGEs");
      const size_t first = sg.size();
      for (auto& s : wrs[i].sges) sg.push_back({s.addr, s.length, sink_lkey_});
      w[i].opcode = IBV_WR_RDMA_READ;
      w[i].sg_list = &sg[first];
      w[i].num_sge = static_cast<int>(wrs[i].sges.size());
      w[i].wr.rdma.remote_addr = wrs[i].remote_addr;
      w[i].wr.rdma.rkey = rkey;
      w[i].next = i + 1 < wrs.size() ? &w[i + 1] : nullptr;
    }
    // RC completes in order, so the last WR's completion covers the chunk.
    w.back().send_flags = IBV_SEND_SIGNALED;
    w.back().wr_id = kTagRead | cookie;
    ibv_send_wr* bad = nullptr;
    if (int rc = ibv_post_send(L.id->qp, w.data(), &bad)) {
      if (bad != w.data()) {
        // Part of the chain was posted but only its last WR would signal: we
        // could not tell when those finish, so the QP cannot be trusted.
        ibv_qp_attr qa{};
        qa.qp_state = IBV_QPS_ERR;
        ibv_modify_qp(L.id->qp, &qa, IBV_QP_STATE);
        failed_ = true;
      }
      return make_error(rc, fmt::format("ibv_post_send (RDMA READ) on queue pair {} to {}", lane + 1, peer_name_));
    }
    L.wrs_out += n;
    ++L.chunks;
    ++total_chunks_;
    read_wrs_out_ += n;
    reads_[cookie] = ReadInfo{static_cast<uint32_t>(lane), n};
    return {};
  }

  uint32_t read_capacity() const override {
    if (!established_ || failed_) return 0;
    uint32_t best = 0;
    for (size_t i = 0; i < lanes_.size(); ++i)
      if (usable(i)) best = std::max(best, read_wrs_ - lanes_[i].wrs_out);
    return std::min(best, read_budget_ - read_wrs_out_);
  }

  int wait_fd() const override { return ep_.get(); }

  Status arm() override {
    if (ibv_req_notify_cq(cq_.get(), 0) != 0) return sys_error("ibv_req_notify_cq");
    return {};
  }

  bool send_pending() const override { return !out_.empty() || free_send_.size() < depth_; }

  Status poll(std::vector<TransportEvent>& events) override {
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

 private:
  /// Handles every completion available now; false if the CQ failed.
  bool drain_cq(std::vector<TransportEvent>& events) {
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

  bool usable(size_t i) const {
    if (i == 0) return established_ && !disconnected_;
    return lanes_[i].up && !lanes_[i].disconnected;
  }

  int lane_of(const rdma_cm_id* id) const {
    for (size_t i = 0; i < lanes_.size(); ++i)
      if (lanes_[i].id == id) return static_cast<int>(i);
    return -1;
  }

  void finish_read(uint64_t cookie) {
    auto it = reads_.find(cookie);
    if (it == reads_.end()) return;
    lanes_[it->second.lane].wrs_out -= it->second.wrs;
    read_wrs_out_ -= it->second.wrs;
    reads_.erase(it);
  }

  void add_lane(rdma::CmId id, uint32_t rd_atomic, bool up) {
    Lane l;
    l.id = id.get();
    l.rd_atomic = rd_atomic;
    l.up = up;
    extra_ids_.push_back(std::move(id));
    lanes_.push_back(l);
  }

  /// Daemon side: adopts the queue pairs the listener accepted meanwhile.
  void take_joins() {
    if (!jp_) return;
    std::vector<Joined> fresh;
    {
      std::lock_guard lk(jp_->mu);
      fresh.swap(jp_->fresh);
    }
    for (auto& j : fresh) {
      add_lane(std::move(j.id), j.rd_atomic, false);
      log_debug("{}: queue pair {} joined", peer_name_, lanes_.size());
    }
  }

  Status post_recv(uint32_t i) {
    ibv_sge sge{reinterpret_cast<uint64_t>(ctrl_mem_.data() + size_t{i} * wire::kMaxMessage),
                static_cast<uint32_t>(wire::kMaxMessage), ctrl_mr_->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = kTagRecv | i;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad;
    if (int rc = ibv_post_recv(id_->qp, &wr, &bad)) return make_error(rc, "ibv_post_recv");
    return {};
  }

  uint8_t* send_buf(uint32_t i) { return ctrl_mem_.data() + (size_t{depth_} + i) * wire::kMaxMessage; }

  Status post_send(uint32_t len) {
    const uint32_t i = free_send_.back();
    free_send_.pop_back();
    ibv_sge sge{reinterpret_cast<uint64_t>(send_buf(i)), len, ctrl_mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = kTagSend | i;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.sg_list = len > 0 ? &sge : nullptr;
    wr.num_sge = len > 0 ? 1 : 0;
    wr.imm_data = htonl(credits_.on_send());  // credits we grant back ride on every send
    ibv_send_wr* bad;
    if (int rc = ibv_post_send(id_->qp, &wr, &bad)) return make_error(rc, "ibv_post_send (control) to " + peer_name_);
    return {};
  }

  Status flush() {
    if (!established_ || failed_) return {};
    while (!out_.empty() && credits_.can_send_data() && !free_send_.empty()) {
      auto& m = out_.front();
      std::memcpy(send_buf(free_send_.back()), m.data(), m.size());
      RCP_TRY(post_send(static_cast<uint32_t>(m.size())));
      out_.pop_front();
    }
    // Grant credits explicitly when enough piled up and nothing carries them.
    if (credits_.grant_due(std::max<uint32_t>(1, depth_ / 2)) && credits_.can_send_grant() && !free_send_.empty())
      RCP_TRY(post_send(0));
    return {};
  }

  void handle_wc(const ibv_wc& wc, std::vector<TransportEvent>& events) {
    const uint64_t tag = wc.wr_id & kTagMask;
    const uint64_t idx = wc.wr_id & ~kTagMask;
    if (wc.status != IBV_WC_SUCCESS) {
      if (tag == kTagRead) {
        events.push_back(
            TransportEvent::read_done(idx, EIO, fmt::format("RDMA READ failed: {}", ibv_wc_status_str(wc.status))));
        finish_read(idx);
      }
      if (tag == kTagSend) free_send_.push_back(static_cast<uint32_t>(idx));
      if (!failed_) {
        failed_ = true;
        close_with(events, fmt::format("{} completion failed on {}: {}",
                                       tag == kTagRead ? "RDMA READ" : tag == kTagSend ? "SEND" : "RECV",
                                       caps_.name, ibv_wc_status_str(wc.status)));
      }
      return;
    }
    switch (tag) {
      case kTagRecv: {
        if (wc.wc_flags & IBV_WC_WITH_IMM) credits_.on_grant(ntohl(wc.imm_data));
        if (wc.byte_len > 0) {
          TransportEvent ev;
          ev.kind = TransportEvent::Kind::message;
          const uint8_t* p = ctrl_mem_.data() + idx * wire::kMaxMessage;
          ev.message.assign(p, p + std::min<uint32_t>(wc.byte_len, wire::kMaxMessage));
          events.push_back(std::move(ev));
        }
        if (post_recv(static_cast<uint32_t>(idx)).ok()) credits_.on_repost();
        break;
      }
      case kTagSend: free_send_.push_back(static_cast<uint32_t>(idx)); break;
      case kTagRead: {
        finish_read(idx);
        events.push_back(TransportEvent::read_done(idx));
        break;
      }
      default: break;
    }
  }

  void poll_cm(std::vector<TransportEvent>& events) {
    rdma_cm_event* raw;
    while (rdma_get_cm_event(ch_.get(), &raw) == 0) {
      CmEvent e = take_event(raw);
      int lane = lane_of(e.id);
      if (lane < 0) {
        // The listener moves a joined id here before it hands the id over,
        // so its first event can precede the hand-over: pick it up now.
        take_joins();
        lane = lane_of(e.id);
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
        case RDMA_CM_EVENT_ESTABLISHED: established_ = true; break;
        case RDMA_CM_EVENT_DISCONNECTED:
          disconnected_ = true;
          close_with(events, "peer " + peer_name_ + " disconnected");
          break;
        case RDMA_CM_EVENT_DEVICE_REMOVAL:
          disconnected_ = true;
          close_with(events, "RDMA device " + caps_.name + " was removed");
          break;
        case RDMA_CM_EVENT_TIMEWAIT_EXIT: break;
        default: close_with(events, fmt::format("connection to {}: {}", peer_name_, rdma_event_str(e.type))); break;
      }
    }
  }

  /// Events of an extra queue pair: up, or gone — and a session that lost a
  /// QP cannot finish the READs queued on it, so it ends.
  void on_lane_event(size_t i, const CmEvent& e, std::vector<TransportEvent>& events) {
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
          close_with(events, fmt::format("peer {} disconnected (queue pair {}, {} READs outstanding)", peer_name_,
                                         i + 1, L.wrs_out));
        break;
      default:
        L.disconnected = true;
        close_with(events, fmt::format("connection to {}, queue pair {}: {}", peer_name_, i + 1, rdma_event_str(e.type)));
        break;
    }
  }

  void close_with(std::vector<TransportEvent>& events, std::string why) {
    if (closed_) return;
    closed_ = true;
    events.push_back(TransportEvent::closed(ECONNRESET, std::move(why)));
  }

  // Declaration order is destruction order reversed: QP first, then MRs,
  // buffers, CQ, completion channel, PD, cm_id, event channel.
  rdma::EventChannel ch_;
  rdma::CmId id_;
  rdma::Pd pd_;
  rdma::CompChannel cc_;
  rdma::Cq cq_;
  std::vector<uint8_t> ctrl_mem_;
  rdma::Mr ctrl_mr_;
  std::map<uint32_t, rdma::Mr> mrs_;
  std::unique_ptr<rdma::QpGuard> qp_guard_;
  // Extra queue pairs: each id owns its QP (CmIdDeleter destroys both), and
  // all die first — QPs before the CQ, MRs and PD, ids before the channel.
  std::vector<rdma::CmId> extra_ids_;
  Fd ep_;

  RdmaOptions opt_;
  DeviceCaps caps_{};
  Credits credits_;
  Negotiated neg_;
  std::string peer_name_ = "?";
  uint32_t depth_ = 0, read_wrs_ = 0, sge_ = 1, peer_msg_size_ = wire::kMaxMessage;
  uint32_t read_wrs_out_ = 0;
  uint32_t sink_lkey_ = 0;
  std::map<uint32_t, uint32_t> lkeys_;
  /// One queue pair of the session; lanes_[0] carries control too.
  struct Lane {
    rdma_cm_id* id = nullptr;  ///< owned by id_ (lane 0) or extra_ids_
    uint32_t rd_atomic = 0;    ///< initiator depth agreed for this QP
    uint32_t wrs_out = 0;      ///< READ WRs posted, not yet completed
    uint64_t chunks = 0;       ///< chunks read over it (for -v)
    bool up = false, disconnected = false;
  };
  struct ReadInfo {
    uint32_t lane = 0, wrs = 0;
  };
  std::vector<Lane> lanes_;
  size_t next_lane_ = 0;
  uint32_t max_qps_ = 1;
  uint32_t read_budget_ = 0;  ///< READ WRs all QPs may have outstanding: what the shared CQ can take
  uint64_t total_chunks_ = 0;
  std::unordered_map<uint64_t, ReadInfo> reads_;
  std::shared_ptr<JoinRegistry> reg_;
  std::shared_ptr<JoinPoint> jp_;
  uint64_t token_ = 0;
  std::vector<uint32_t> free_send_;
  std::deque<std::vector<uint8_t>> out_;
  unsigned unacked_cq_events_ = 0;
  bool established_ = false, disconnected_ = false, closed_ = false, failed_ = false;
};

Result<sockaddr_storage> resolve(const std::string& host, uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  std::string ps = std::to_string(port);
  int gai = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), ps.c_str(), &hints, &res);
  if (gai != 0) return make_error(EHOSTUNREACH, fmt::format("resolve '{}': {}", host, gai_strerror(gai)));
  sockaddr_storage ss{};
  std::memcpy(&ss, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  return ss;
}

class CmListener final : public RdmaListener {
 public:
  int fd() const override { return ch_->fd; }
  std::string address() const override { return addr_; }

  Result<std::unique_ptr<Transport>> accept_next(const RdmaOptions& opt) override {
    rdma_cm_event* raw;
    if (rdma_get_cm_event(ch_.get(), &raw) != 0) {
      if (errno == EAGAIN) return std::unique_ptr<Transport>();
      return sys_error("rdma_get_cm_event");
    }
    CmEvent req = take_event(raw);
    if (req.type != RDMA_CM_EVENT_CONNECT_REQUEST) return std::unique_ptr<Transport>();
    rdma::CmId id(req.id);
    const std::string peer = sockaddr_string(rdma_get_peer_addr(id.get()));
    auto ph = wire::decode_hello(req.private_data);
    if (!ph.ok()) {
      // Tell the peer why, in our own hello, so it can name the version it met.
      auto mine = wire::encode_hello(wire::Hello{});
      rdma_reject(id.get(), mine.data(), static_cast<uint8_t>(mine.size()));
      return make_error(ph.error().code, "rdma connection from " + peer + " refused: " + ph.error().context);
    }
    if (ph->flags & wire::kHelloJoin) {
      RCP_TRY(accept_join(std::move(id), req, peer));
      return std::unique_ptr<Transport>();
    }
    rdma::EventChannel ch(rdma_create_event_channel());
    if (!ch) return sys_error("rdma_create_event_channel");
    // The connection gets its own event channel, so its events reach its session thread.
    if (rdma_migrate_id(id.get(), ch.get()) != 0) return sys_error("rdma_migrate_id");
    auto t = std::make_unique<RdmaTransport>(std::move(ch), std::move(id), opt);
    // The CQ is sized for what the client announced, and no more may join.
    const uint32_t qps = std::clamp<uint32_t>(ph->qps, 1, kMaxQps);
    Status st = t->setup(qps);
    if (!st.ok()) {
      rdma_reject(t->id(), nullptr, 0);
      return st.error();
    }
    const DeviceCaps& c = t->caps();
    rdma_conn_param cp{};
    cp.initiator_depth = std::min(c.init_rd, req.responder_resources);
    cp.responder_resources = std::min(c.resp_rd, req.initiator_depth);
    cp.retry_count = 7;
    cp.rnr_retry_count = 7;
    wire::Hello h = t->hello();
    h.rd_init = cp.initiator_depth;  // tell the client what was agreed
    h.rd_resp = cp.responder_resources;
    std::vector<uint8_t> pd;
    if (qps > 1) {
      // Only this client learns the token (in the accept's private data);
      // it is registered first so that the client's joins always find it.
      RCP_ASSIGN(uint64_t token, wire::new_session_token());
      t->offer_joins(reg_, token, qps, h);
      pd = wire::encode_hello_token(h, wire::kHelloToken, token);
    } else {
      pd = wire::encode_hello(h);
    }
    cp.private_data = pd.data();
    cp.private_data_len = static_cast<uint8_t>(pd.size());
    t->set_peer(ph.value(), cp.initiator_depth);
    if (rdma_accept(t->id(), &cp) != 0) return sys_error("rdma_accept from " + peer);
    return std::unique_ptr<Transport>(std::move(t));
  }

  /// A connection request that asks to add a queue pair to a session. Runs
  /// on the listener's thread: creates the QP on the session's PD and CQ,
  /// moves the id to the session's event channel and accepts; the session
  /// adopts it in its next poll. Anything wrong is refused with our hello
  /// (flag kHelloJoin: "your join was refused"), and only this id is lost.
  Status accept_join(rdma::CmId id, const CmEvent& req, const std::string& peer) {
    auto refuse = [&](int code, const std::string& why) -> Status {
      // A hello the client can decode, its join flag saying "not this join".
      wire::Hello no;
      no.ctrl_depth = 2;
      no.max_sge_rd = 1;
      no.max_chunk = wire::kMaxChunk;
      no.flags = wire::kHelloJoin;
      auto mine = wire::encode_hello(no);
      rdma_reject(id.get(), mine.data(), static_cast<uint8_t>(mine.size()));
      return make_error(code, "rdma queue pair join from " + peer + " refused: " + why);
    };
    auto token = wire::decode_hello_token(req.private_data);
    if (!token.ok()) return refuse(EPROTO, token.error().context);
    std::shared_ptr<JoinPoint> jp;
    {
      std::lock_guard lk(reg_->mu);
      auto it = reg_->by_token.find(token.value());
      if (it != reg_->by_token.end()) jp = it->second;
    }
    if (!jp) return refuse(EPERM, "its session token names no session");
    std::lock_guard lk(jp->mu);
    if (!jp->open) return refuse(EPERM, "its session has ended");
    if (jp->qps >= jp->max_qps)
      return refuse(EPERM, fmt::format("its session announced {} queue pair(s) and has them all", jp->max_qps));
    if (id->verbs != jp->ctx) return refuse(EXDEV, "it arrived on another RDMA device than its session (a PD cannot span devices)");
    if (Status st = create_read_qp(id.get(), jp->pd, jp->cq, jp->sq, jp->sge, jp->caps.name); !st.ok())
      return refuse(st.error().code, st.error().message());
    if (rdma_migrate_id(id.get(), jp->ch) != 0) {
      Error e = sys_error("rdma_migrate_id");
      return refuse(e.code, e.message());
    }
    rdma_conn_param cp{};
    cp.initiator_depth = std::min(jp->caps.init_rd, req.responder_resources);
    cp.responder_resources = std::min(jp->caps.resp_rd, req.initiator_depth);
    cp.retry_count = 7;
    cp.rnr_retry_count = 7;
    wire::Hello h = jp->hello;
    h.rd_init = cp.initiator_depth;
    h.rd_resp = cp.responder_resources;
    auto pd = wire::encode_hello(h);
    cp.private_data = pd.data();
    cp.private_data_len = static_cast<uint8_t>(pd.size());
    if (rdma_accept(id.get(), &cp) != 0) return sys_error("rdma_accept (queue pair join) from " + peer);
    ++jp->qps;
    jp->fresh.push_back(Joined{std::move(id), cp.initiator_depth});
    log_debug("{}: queue pair {} of {} accepted into its session", peer, jp->qps, jp->max_qps);
    return {};
  }

  rdma::EventChannel ch_;
  rdma::CmId id_;
  std::string addr_;
  std::shared_ptr<JoinRegistry> reg_ = std::make_shared<JoinRegistry>();
};

}  // namespace

bool rdma_devices_present() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list) ibv_free_device_list(list);
  return n > 0;
}

Result<std::unique_ptr<RdmaListener>> RdmaListener::listen(const std::string& host, uint16_t port) {
  auto l = std::make_unique<CmListener>();
  l->ch_.reset(rdma_create_event_channel());
  if (!l->ch_) return sys_error("rdma_create_event_channel (is an RDMA device present?)");
  rdma_cm_id* raw = nullptr;
  if (rdma_create_id(l->ch_.get(), &raw, nullptr, RDMA_PS_TCP) != 0) return sys_error("rdma_create_id");
  l->id_.reset(raw);
  RCP_ASSIGN(sockaddr_storage ss, resolve(host, port, true));
  l->addr_ = sockaddr_string(reinterpret_cast<sockaddr*>(&ss));
  if (rdma_bind_addr(raw, reinterpret_cast<sockaddr*>(&ss)) != 0) return sys_error("rdma_bind_addr " + l->addr_);
  if (rdma_listen(raw, 64) != 0) return sys_error("rdma_listen " + l->addr_);
  RCP_TRY(set_nonblock(l->ch_->fd));
  return std::unique_ptr<RdmaListener>(std::move(l));
}

Result<std::unique_ptr<Transport>> rdma_connect(const std::string& host, uint16_t port, const RdmaOptions& opt) {
  RCP_ASSIGN(sockaddr_storage dst, resolve(host, port, false));
  const std::string where = fmt::format("rdma connect to {}", sockaddr_string(reinterpret_cast<sockaddr*>(&dst)));
  // Address resolution needs the peer's neighbour entry; when it is not
  // cached, the kernel's first resolution can miss its window (seen on
  // soft-RoCE: a 10 s wait on a cold ARP cache, then instant). So: short
  // attempts, repeated, within the overall timeout.
  const int attempt_ms = std::min(opt.timeout_ms, 2000);
  const int attempts = std::max(1, opt.timeout_ms / attempt_ms);
  Result<std::pair<rdma::EventChannel, rdma::CmId>> r = make_error(ETIMEDOUT, where);
  for (int i = 0; i < attempts; ++i) {
    r = resolve_once(dst, attempt_ms, where);
    if (r.ok() || (r.error().code != ETIMEDOUT && r.error().code != EHOSTUNREACH && r.error().code != ENODATA)) break;
    log_debug("{}: {} (attempt {} of {})", where, r.error().message(), i + 1, attempts);
  }
  if (!r.ok()) return r.error();
  rdma::EventChannel ch = std::move(r.value().first);
  rdma::CmId id = std::move(r.value().second);
  rdma_event_channel* chp = ch.get();
  auto t = std::make_unique<RdmaTransport>(std::move(ch), std::move(id), opt);
  const uint32_t want = std::clamp<uint32_t>(opt.qps, 1, kMaxQps);
  RCP_TRY(t->setup(want));
  const DeviceCaps& c = t->caps();
  auto pd = wire::encode_hello(t->hello());
  rdma_conn_param cp{};
  cp.initiator_depth = c.init_rd;  // the daemon clamps both to its device in rdma_accept
  cp.responder_resources = c.resp_rd;
  cp.retry_count = 7;
  cp.rnr_retry_count = 7;
  cp.private_data = pd.data();
  cp.private_data_len = static_cast<uint8_t>(pd.size());
  if (rdma_connect(t->id(), &cp) != 0) return sys_error(where + ": rdma_connect");
  // The event channel is still blocking here (set_nonblock happens in setup, so poll first).
  RCP_ASSIGN(CmEvent est, wait_cm_event(chp, RDMA_CM_EVENT_ESTABLISHED, opt.timeout_ms, where));
  auto ph = wire::decode_hello(est.private_data);
  if (!ph.ok()) return make_error(ph.error().code, where + ": " + ph.error().context);
  t->set_peer(ph.value(), std::min<uint32_t>(c.init_rd, ph->rd_resp));
  t->set_established();
  if (want > 1) {
    if (!(ph->flags & wire::kHelloToken)) {
      // An older daemon: it offers no token, so the copy runs on one QP.
      log_info("{}: the daemon offers no extra queue pairs; using 1", where);
    } else {
      RCP_ASSIGN(uint64_t token, wire::decode_hello_token(est.private_data));
      // Test-only fault switch: quote a token one bit off, so the suite can
      // prove a real client's wrong join is refused and the daemon goes on.
      if (test_faults().rdma_bad_join_token) token ^= 1;
      for (uint32_t i = 1; i < want; ++i) RCP_TRY(t->join(dst, token, i, want, opt.timeout_ms, where));
    }
  }
  return std::unique_ptr<Transport>(std::move(t));
}

namespace {

/// rdma_cm finishes establishment in the listener, so an RDMA connection
/// arrives already made.
class ReadyIncoming final : public Incoming {
 public:
  explicit ReadyIncoming(std::unique_ptr<Transport> t) : peer_(t->peer()), t_(std::move(t)) {}
  std::string peer() const override { return peer_; }
  Result<std::unique_ptr<Transport>> finish() override { return std::move(t_); }

 private:
  std::string peer_;
  std::unique_ptr<Transport> t_;
};

class RdmaCmListener final : public Listener {
 public:
  RdmaCmListener(std::unique_ptr<RdmaListener> l, RdmaOptions opt) : l_(std::move(l)), opt_(opt) {}
  const char* kind() const override { return "rdma"; }
  std::string address() const override { return "rdma " + l_->address(); }
  int fd() const override { return l_->fd(); }
  Result<std::unique_ptr<Incoming>> accept() override {
    RCP_ASSIGN(auto t, l_->accept_next(opt_));
    if (!t) return std::unique_ptr<Incoming>();
    return std::unique_ptr<Incoming>(std::make_unique<ReadyIncoming>(std::move(t)));
  }

 private:
  std::unique_ptr<RdmaListener> l_;
  RdmaOptions opt_;
};

}  // namespace

Result<std::unique_ptr<Listener>> rdma_listen(const std::string& host, uint16_t port, const RdmaOptions& opt) {
  RCP_ASSIGN(auto l, RdmaListener::listen(host, port));
  return std::unique_ptr<Listener>(std::make_unique<RdmaCmListener>(std::move(l), opt));
}

}  // namespace rcp
