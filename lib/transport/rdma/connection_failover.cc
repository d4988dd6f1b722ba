// Connection: a rail or the control channel lost mid-session, and what moves
// where. A rail whose port went down or whose QP failed is drained (its READs
// failed back to the session, which reads them again over the rails left) and
// dropped; when it carried control, control moves to the standby channel on
// another rail (CONTROL_MOVED, then what either side missed sent again).
#include <sys/epoll.h>

#include <algorithm>
#include <fmt/core.h>

#include "transport/rdma/connection.h"
#include "transport/rdma/wr_id.h"
#include "util/log.h"
#include "util/test_faults.h"

namespace rcp::rdma {

void Connection::drain_rail(size_t r, std::vector<TransportEvent>& events) {
  Rail& R = *rails_[r - 1];
  ibv_cq* ev_cq;
  void* ev_ctx;
  while (ibv_get_cq_event(R.cc.get(), &ev_cq, &ev_ctx) == 0) {
    if (++R.unacked >= 64) {
      ibv_ack_cq_events(R.cq.get(), R.unacked);
      R.unacked = 0;
    }
  }
  ibv_wc wc[32];
  for (;;) {
    int n = ibv_poll_cq(R.cq.get(), 32, wc);
    if (n < 0) {
      fail_rail(r, "ibv_poll_cq failed");
      return;
    }
    for (int i = 0; i < n; ++i) {
      const std::optional<WrId> id = WrId::decode(wc[i].wr_id);
      if (id && id->kind != WrKind::read) {  // a standby control channel's send or receive
        on_standby_wc(r, wc[i], events);
        continue;
      }
      if (!id) continue;
      if (wc[i].status != IBV_WC_SUCCESS) {
        // The first failure drops the rail and gives back all its chunks;
        // the rest are its flushed READs, already given back.
        if (R.failed.empty()) fail_rail(r, fmt::format("RDMA READ failed: {}", ibv_wc_status_str(wc[i].status)));
        continue;
      }
      // A chunk of a rail dropped meanwhile was given back: its late
      // completion is not the one the engine waits for.
      if (lanes_.rail_of(id->value) != static_cast<int>(r)) continue;
      lanes_.finish(id->value);
      events.push_back(TransportEvent::read_done(id->value));
    }
    if (n < 32) return;
  }
}

void Connection::poll_async(std::vector<TransportEvent>& events) {
  if (!standby_.empty() && ctl_rail_ == 0) {
    // Rail 0's device: control can move, so its port or QP failing is
    // acted on at once rather than when a completion fails.
    ibv_async_event ev;
    while (ibv_get_async_event(id_->verbs, &ev) == 0) {
      const auto type = ev.event_type;
      const bool ours_qp = (type == IBV_EVENT_QP_FATAL || type == IBV_EVENT_QP_REQ_ERR || type == IBV_EVENT_QP_ACCESS_ERR) &&
                           [&] {
                             for (size_t i = 0; i < lanes_.size(); ++i)
                               if (lanes_[i].rail == 0 && lanes_[i].id->qp == ev.element.qp) return true;
                             return false;
                           }();
      const uint8_t port = type == IBV_EVENT_PORT_ERR ? ev.element.port_num : 0;
      ibv_ack_async_event(&ev);
      if (port != 0 && port == lanes_[0].id->port_num)
        fail_control(fmt::format("port {} of {} went down", port, caps_.name), events);
      else if (ours_qp)
        fail_control(fmt::format("a queue pair of {}: {}", caps_.name, ibv_event_type_str(type)), events);
    }
  }
  for (size_t r = 1; r <= rails_.size(); ++r) {
    ibv_context* ctx = rails_[r - 1]->ctx;
    ibv_async_event ev;
    while (ibv_get_async_event(ctx, &ev) == 0) {
      switch (ev.event_type) {
        case IBV_EVENT_PORT_ERR:
          fail_rail(r, fmt::format("port {} of {} went down", ev.element.port_num, rails_[r - 1]->caps.name));
          break;
        case IBV_EVENT_QP_FATAL:
        case IBV_EVENT_QP_REQ_ERR:
        case IBV_EVENT_QP_ACCESS_ERR:
          for (size_t i = 0; i < lanes_.size(); ++i)
            if (lanes_[i].rail > 0 && lanes_[i].id->qp == ev.element.qp)
              fail_rail(lanes_[i].rail, fmt::format("queue pair {}: {}", i + 1, ibv_event_type_str(ev.event_type)));
          break;
        default: break;
      }
      ibv_ack_async_event(&ev);
    }
  }
  // rcpd's sessions share each device's context, so one session reads a
  // port's PORT_ERR and the others never see it (seen in the guest: the
  // session reading over that rail then waited 30 s on READs that never
  // completed). So every 500 ms (the session loop wakes at least every
  // 200 ms) each rail's port state is also asked directly.
  const auto now = std::chrono::steady_clock::now();
  if (now < next_port_check_) return;
  next_port_check_ = now + std::chrono::milliseconds(500);
  if (!standby_.empty() && ctl_rail_ == 0) {
    ibv_port_attr pa{};
    const uint8_t port = lanes_[0].id->port_num;
    if (port != 0 && ibv_query_port(id_->verbs, port, &pa) == 0 && pa.state != IBV_PORT_ACTIVE)
      fail_control(fmt::format("port {} of {} went down", port, caps_.name), events);
  }
  for (size_t r = 1; r <= rails_.size(); ++r) {
    Rail& R = *rails_[r - 1];
    if (!R.failed.empty()) continue;
    uint8_t port = 0;
    for (size_t i = 0; i < lanes_.size() && port == 0; ++i)
      if (lanes_[i].rail == r) port = lanes_[i].id->port_num;
    if (port == 0) continue;  // no QP on it: nothing to lose
    ibv_port_attr pa{};
    if (ibv_query_port(R.ctx, port, &pa) == 0 && pa.state != IBV_PORT_ACTIVE)
      fail_rail(r, fmt::format("port {} of {} went down", port, R.caps.name));
  }
}

void Connection::fail_rail(size_t r, std::string why) {
  Rail& R = *rails_[r - 1];
  if (!R.failed.empty()) return;
  R.failed = why;
  if (r == ctl_rail_) ctl_lost_ = fmt::format("rail {} ({} to {}), which control had moved to, failed too: {}", r + 1,
                                               R.caps.name, R.peer, why);
  auto orphans = lanes_.fail_rail(r);
  log_warning("rail {} ({} to {}) failed: {}; {} chunk{} read again over the other rail{}", r + 1, R.caps.name, R.peer,
              why, orphans.size(), orphans.size() == 1 ? "" : "s", rails_.size() > 1 ? "s" : "");
  for (auto& o : orphans) orphans_.push_back(std::move(o));
  // Its QPs in the error state flush whatever is left on them.
  for (size_t i = 0; i < lanes_.size(); ++i) {
    if (lanes_[i].rail != r || !lanes_[i].id->qp) continue;
    ibv_qp_attr qa{};
    qa.qp_state = IBV_QPS_ERR;
    ibv_modify_qp(lanes_[i].id->qp, &qa, IBV_QP_STATE);
  }
}

void Connection::add_standby(uint32_t rail, size_t lane, std::unique_ptr<ControlChannel> ch) {
  // One per rail: a second (a lying client's) is kept alive with its QP —
  // its receives point into it — and never used.
  const bool first = std::none_of(standby_.begin(), standby_.end(), [&](const Standby& x) { return x.rail == rail; });
  // The peer's depth now (its hello came before any join): the credits of a
  // message the peer sends here before this side moves are counted from the first.
  ch->set_peer(peer_ctrl_depth_, peer_msg_size_, peer_name_);
  standby_.push_back(Standby{first ? rail : 0, lane, std::move(ch), false});
  if (standby_.size() == 1) {
    // Rail 0's own device's async events (a port going down) now matter:
    // control can move instead of the session ending.
    ibv_context* ctx = id_->verbs;
    if (set_nonblock(ctx->async_fd).ok()) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      if (::epoll_ctl(ep_.get(), EPOLL_CTL_ADD, ctx->async_fd, &ev) != 0 && errno != EEXIST)
        log_debug("{}: epoll_ctl of {}'s async events: {}", peer_name_, caps_.name, std::strerror(errno));
    }
  }
}

void Connection::fail_control(std::string why, std::vector<TransportEvent>& events, size_t prefer) {
  if (ctl_rail_ != 0 || closed_) return;  // moved already: rail 0's other parts fail after it
  auto usable = [&](const Standby& x) {
    return x.rail != 0 && rails_[x.rail - 1]->failed.empty() && lanes_[x.lane].up && !lanes_[x.lane].disconnected;
  };
  // Where the peer moved, if it did; else the usable rail with the lowest
  // number on the wire (both sides pick the same when they see the same).
  const Standby* to = nullptr;
  if (prefer < standby_.size() && usable(standby_[prefer])) {
    to = &standby_[prefer];
  } else {
    for (const Standby& x : standby_)
      if (usable(x) && (!to || rails_[x.rail - 1]->index < rails_[to->rail - 1]->index)) to = &x;
  }
  if (!to) {
    failed_ = true;
    close_with(events, std::move(why));
    return;
  }
  rail0_failed_ = why;
  auto orphans = lanes_.fail_rail(0);
  for (auto& o : orphans) orphans_.push_back(std::move(o));
  for (size_t i = 0; i < lanes_.size(); ++i) {  // rail 0's QPs flush what is left on them
    if (lanes_[i].rail != 0 || !lanes_[i].id->qp) continue;
    ibv_qp_attr qa{};
    qa.qp_state = IBV_QPS_ERR;
    ibv_modify_qp(lanes_[i].id->qp, &qa, IBV_QP_STATE);
  }
  // What rail 0 took from the peer so far, exactly: nothing more is taken
  // from it (a receive still in its CQ the peer sends again).
  uint64_t took = ctrl_.received();
  // Test-only fault switch: a lying peer's count, so the suite proves the
  // other side refuses it rather than dropping or inventing messages.
  if (test_faults().rdma_moved_lie) took += 1000;
  held_ = ctrl_.stop();  // never posted there: after what the peer missed, before what comes next
  ctl_ = to->ch.get();
  ctl_rail_ = to->rail;
  ctl_lane_ = to->lane;
  moving_ = true;
  const Rail& R = *rails_[ctl_rail_ - 1];
  log_warning("rail 1 ({} to {}) failed: {}; control moves to rail {} ({} to {}), {} chunk{} read again over the other rail{}",
              caps_.name, peer_name_, why, ctl_rail_ + 1, R.caps.name, R.peer, orphans.size(),
              orphans.size() == 1 ? "" : "s", rails_.size() > 1 ? "s" : "");
  if (Status st = ctl_->queue(wire::encode_control_moved(took)); !st.ok()) close_with(events, st.error().message());
  // The peer's CONTROL_MOVED may be in already (it saw the failure first).
  for (size_t i = 0; i < standby_.size() && !closed_; ++i)
    if (standby_[i].heard) on_control_moved(i, pending_took_, events);
}

void Connection::on_standby_wc(size_t r, const ibv_wc& wc, std::vector<TransportEvent>& events) {
  const std::optional<WrId> id = WrId::decode(wc.wr_id);
  size_t s = 0;
  while (s < standby_.size() && standby_[s].ch->qp_num() != wc.qp_num) ++s;
  if (s == standby_.size() || !id) return;  // not a channel of ours
  ControlChannel& c = *standby_[s].ch;
  if (id->kind == WrKind::send) c.on_send(id->value);
  if (wc.status != IBV_WC_SUCCESS) {
    // Flushed with its rail (dropped already), or the channel in use failing.
    if (&c == ctl_ && ctl_lost_.empty())
      ctl_lost_ = fmt::format("control on rail {} failed: {} completion {}", r + 1, wr_kind_name(id->kind),
                              ibv_wc_status_str(wc.status));
    return;
  }
  if (id->kind != WrKind::recv) return;
  std::vector<TransportEvent> got;
  c.on_recv(id->value, wc, got);
  for (auto& e : got) {
    if (standby_[s].heard) {
      events.push_back(std::move(e));
      continue;
    }
    // The first message on a standby channel is the peer's CONTROL_MOVED.
    auto took = wire::is_control_moved(e.message) ? wire::decode_control_moved(e.message)
                                                  : Result<uint64_t>(make_error(EPROTO, "a message before CONTROL_MOVED"));
    if (!took.ok() || standby_[s].rail == 0) {
      close_with(events, fmt::format("peer {}: {} on the standby control channel of rail {}", peer_name_,
                                     took.ok() ? "CONTROL_MOVED on a second channel" : took.error().context, r + 1));
      return;
    }
    standby_[s].heard = true;
    pending_took_ = took.value();
    if (ctl_rail_ == 0) {
      fail_control(fmt::format("the peer moved control to rail {}", r + 1), events, s);  // (answers the count too)
      continue;
    }
    on_control_moved(s, took.value(), events);
  }
}

void Connection::on_control_moved(size_t s, uint64_t took, std::vector<TransportEvent>& events) {
  if (!moving_) return;
  if (standby_[s].ch.get() != ctl_) {
    close_with(events, fmt::format("peer {} moved control to rail {}, this side to rail {}", peer_name_,
                                   standby_[s].rail + 1, ctl_rail_ + 1));
    return;
  }
  auto again = ctrl_.log().since(took);
  if (!again.ok()) {
    close_with(events, fmt::format("peer {}: {}", peer_name_, again.error().context));
    return;
  }
  moving_ = false;
  for (auto& m : again.value())
    if (Status st = ctl_->queue(m); !st.ok()) return close_with(events, st.error().message());
  for (auto& m : held_)
    if (Status st = ctl_->queue(m); !st.ok()) return close_with(events, st.error().message());
  log_info("{}: control on rail {}: {} control message{} sent again, {} held meanwhile", peer_name_, ctl_rail_ + 1,
           again->size(), again->size() == 1 ? "" : "s", held_.size());
  held_.clear();
}

void Connection::repost_orphans(std::vector<TransportEvent>& events) {
  while (!orphans_.empty() && !closed_) {
    Orphan& o = orphans_.front();
    if (lanes_.capacity() < o.wrs.size()) return;  // a completion makes room
    bool qp_failed = false;
    const auto keys = keys_for(o.rkey0);
    Status st = lanes_.post(o.cookie, o.rkey0, keys, o.wrs, peer_name_, qp_failed);
    if (qp_failed) failed_ = true;
    if (!st.ok()) {
      events.push_back(TransportEvent::read_done(o.cookie, st.error().code, st.error().message()));
      orphans_.pop_front();
      continue;
    }
    orphans_.pop_front();
  }
}

}  // namespace rcp::rdma
