#include "transport/rdma/joins.h"

#include <algorithm>
#include <chrono>
#include <fmt/core.h>
#include <memory>

#include "util/log.h"
#include "util/test_faults.h"
#include "wire/rails.h"

namespace rcp::rdma {
namespace {

/// Creates the QP of an extra queue pair of a session, on the session's PD
/// and CQ. It carries only READs — no receive is ever posted and nothing is
/// sent on it — unless `ctrl_depth` > 0: then it also holds a rail's standby
/// control channel (ctrl_depth receives).
Status create_read_qp(rdma_cm_id* id, const JoinSpec& s, ibv_pd* pd, ibv_cq* cq, uint32_t ctrl_depth = 0) {
  ibv_qp_init_attr qa{};
  qa.send_cq = cq;
  qa.recv_cq = cq;
  qa.qp_type = IBV_QPT_RC;
  qa.sq_sig_all = 0;
  qa.cap.max_send_wr = s.sq;
  qa.cap.max_recv_wr = std::max<uint32_t>(1, ctrl_depth);  // (some providers refuse 0)
  qa.cap.max_send_sge = s.sge;
  qa.cap.max_recv_sge = 1;
  if (rdma_create_qp(id, pd, &qa) != 0)
    return sys_error("rdma_create_qp (extra queue pair) on " + std::string(ibv_get_device_name(id->verbs->device)));
  return {};
}

/// The standby control channel of a rail's first queue pair: its buffers
/// registered and its receives posted before the QP connects, so the peer
/// may send on it the moment control moves (never into an empty queue).
Result<std::unique_ptr<ControlChannel>> standby_channel(rdma_cm_id* id, ibv_pd* pd, uint32_t depth) {
  auto c = std::make_unique<ControlChannel>();
  RCP_TRY(c->setup(pd, id->qp, depth, ibv_get_device_name(id->verbs->device)));
  return c;
}

}  // namespace

Result<Joined> join_session(sockaddr_storage& dst, const JoinSpec& spec, uint64_t token, uint32_t index, uint32_t of,
                            int timeout_ms, const std::string& where) {
  const std::string what = spec.rail == 0 ? fmt::format("{}: queue pair {} of {}", where, index + 1, of)
                                          : fmt::format("{}: rail {} queue pair {}", where, spec.rail + 1, index + 1);
  // One deadline for the whole join: resolution and handshake share timeout_ms.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  RCP_ASSIGN(auto r, resolve_once(dst, timeout_ms, what));
  EventChannel ch = std::move(r.first);
  CmId id = std::move(r.second);  // declared after ch: destroyed before it
  if (id->verbs != spec.ctx)
    return make_error(EXDEV, what + (spec.rail == 0 ? ": routed over another RDMA device than queue pair 1 (a PD cannot span devices)"
                                                    : ": routed over another RDMA device than the rail's"));
  const uint32_t standby = spec.rail > 0 ? spec.ctrl_depth : 0;
  RCP_TRY(create_read_qp(id.get(), spec, spec.pd, spec.cq, standby));
  std::unique_ptr<ControlChannel> ctrl;
  wire::Hello h = spec.hello;
  if (standby > 0) {
    RCP_ASSIGN(ctrl, standby_channel(id.get(), spec.pd, standby));
    h.flags |= wire::kHelloRailStandby;
  }
  auto pd = spec.rail == 0 ? wire::encode_hello_token(h, wire::kHelloJoin, token)
                           : wire::encode_rail_join(h, token, spec.rail);
  rdma_conn_param cp = conn_param(spec.caps.init_rd, spec.caps.resp_rd, pd);
  if (rdma_connect(id.get(), &cp) != 0) return sys_error(what + ": rdma_connect");
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  RCP_ASSIGN(CmEvent est, wait_cm_event(ch.get(), RDMA_CM_EVENT_ESTABLISHED, static_cast<int>(std::max<int64_t>(1, left.count())), what));
  auto ph = wire::decode_hello(est.private_data);
  if (!ph.ok()) return make_error(ph.error().code, what + ": " + ph.error().context);
  if (rdma_migrate_id(id.get(), spec.ch) != 0) return sys_error(what + ": rdma_migrate_id");
  const uint32_t rd = std::min<uint32_t>(spec.caps.init_rd, ph->rd_resp);
  if (standby > 0 && !(ph->flags & wire::kHelloRailStandby)) {
    // A daemon without standby channels: the rail still carries READs, but
    // control cannot move to it (nothing is ever sent on this QP).
    log_info("{}: the daemon keeps no standby control channel on this rail", what);
    ctrl.reset();
  }
  return Joined{std::move(id), rd, spec.rail, std::move(ctrl)};
}

Status accept_join(QpJoins& joins, CmId id, const CmEvent& req, const std::string& peer) {
  Joined j{std::move(id)};
  auto refuse = [&](int code, const std::string& why) -> Status {
    // A hello the client can decode, its join flag saying "not this join".
    wire::Hello no;
    no.ctrl_depth = 2;
    no.max_sge_rd = 1;
    no.max_chunk = wire::kMaxChunk;
    no.flags = wire::kHelloJoin;
    auto mine = wire::encode_hello(no);
    rdma_reject(j.id.get(), mine.data(), static_cast<uint8_t>(mine.size()));
    return make_error(code, "rdma queue pair join from " + peer + " refused: " + why);
  };
  auto token = wire::decode_hello_token(req.private_data);
  if (!token.ok()) return refuse(EPROTO, token.error().context);
  auto hello = wire::decode_hello(req.private_data);  // decoded by the listener already
  const bool rail_join = hello.ok() && (hello->flags & wire::kHelloRail);
  // (Test-only fault switch: answer as a daemon without standby channels.)
  const bool standby = rail_join && (hello->flags & wire::kHelloRailStandby) && !test_faults().rdma_no_standby;
  // Runs under the registry's lock, so the session cannot close its entry
  // and free its PD or CQ meanwhile. A failure after the QP was created
  // destroys it here, still under the lock: nothing of a refused join is
  // left on the session's PD or CQ when the lock is released.
  bool accept_failed = false;
  auto admit = [&](JoinSpec& s, Joined& jn, JoinSeat seat) -> Status {
    rdma_cm_id* cm = jn.id.get();
    ibv_context* ctx = s.ctx;
    ibv_pd* on_pd = s.pd;
    ibv_cq* on_cq = s.cq;
    if (rail_join) {
      // The index comes from the client: one this session announced, and
      // the request must have come in on that rail's device.
      auto r = wire::decode_rail_join(req.private_data, s.rails.size());
      if (!r.ok()) return make_error(r.error().code, r.error().context);
      const RailPoint& p = s.rails[r.value() - 1];
      if (cm->verbs != p.ctx)
        return make_error(EXDEV, fmt::format("a join for rail {} ({}) arrived on {}", r.value() + 1, p.dev,
                                             ibv_get_device_name(cm->verbs->device)));
      ctx = p.ctx;
      on_pd = p.pd;
      on_cq = p.cq;
      jn.rail = r.value();
    }
    if (cm->verbs != ctx)
      return make_error(EXDEV, "it arrived on another RDMA device than its session (a PD cannot span devices)");
    const uint32_t bit = 1u << jn.rail;  // jn.rail < wire::kMaxRails
    const uint32_t depth = standby && !(s.standby_rails & bit) ? s.ctrl_depth : 0;
    if (Status st = create_read_qp(cm, s, on_pd, on_cq, depth); !st.ok()) return make_error(st.error().code, st.error().message());
    // (Its registration is on the session's PD: released here, under the
    // lock, whenever this join fails.)
    if (depth > 0) {
      auto c = standby_channel(cm, on_pd, depth);
      if (!c.ok()) {
        rdma_destroy_qp(cm);
        return make_error(c.error().code, c.error().message());
      }
      jn.ctrl = std::move(c.value());
    }
    if (rdma_migrate_id(cm, s.ch) != 0) {
      Error e = sys_error("rdma_migrate_id");
      jn.ctrl.reset();
      rdma_destroy_qp(cm);
      return make_error(e.code, e.message());
    }
    const uint8_t init = std::min(s.caps.init_rd, req.responder_resources);
    const uint8_t resp = std::min(s.caps.resp_rd, req.initiator_depth);
    wire::Hello h = s.hello;
    if (depth > 0) h.flags |= wire::kHelloRailStandby;  // (its receives are posted)
    h.rd_init = init;  // tell the client what was agreed
    h.rd_resp = resp;
    auto pd = wire::encode_hello(h);
    rdma_conn_param cp = conn_param(init, resp, pd);
    if (rdma_accept(cm, &cp) != 0) {
      Error e = sys_error("rdma_accept (queue pair join) from " + peer);
      jn.ctrl.reset();
      rdma_destroy_qp(cm);
      accept_failed = true;
      return e;
    }
    jn.rd_atomic = cp.initiator_depth;
    if (depth > 0) s.standby_rails |= bit;
    log_debug("{}: queue pair {} of {} accepted into its session", peer, seat.number, seat.max);
    return {};
  };
  Status st = joins.join(token.value(), j, admit);
  if (st.ok() || accept_failed) return st;  // an accept that failed is not answered, as ever
  return refuse(st.error().code, st.error().context);
}

}  // namespace rcp::rdma
