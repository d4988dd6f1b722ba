// The daemon's rdma_cm listener, behind the transport-neutral Listener
// interface (transport/listener.h). rdma_cm carries the hello in the
// connect request, so accept() finishes establishment itself: it sets up
// the connection, answers with our hello and hands the daemon a connection
// that is already made. Join requests (extra queue pairs of a session,
// joins.h) are handled here entirely and yield no connection.
#include <netinet/in.h>
#include <algorithm>
#include <fmt/core.h>
#include <memory>
#include <string>
#include <vector>

#include "transport/listener.h"
#include "transport/rdma/cm.h"
#include "transport/rdma/connection.h"
#include "transport/rdma/device.h"
#include "transport/rdma/handles.h"
#include "transport/rdma/joins.h"
#include "transport/rdma/rail_addrs.h"
#include "transport/rdma/rdma_transport.h"
#include "transport/rdma/shared_receive.h"
#include "util/log.h"
#include "util/test_faults.h"
#include "wire/messages.h"
#include "wire/rails.h"

namespace rcp {
namespace {

using namespace rdma;

/// An RDMA connection arrives already made: finish() only hands it over.
class ReadyIncoming final : public Incoming {
 public:
  explicit ReadyIncoming(std::unique_ptr<Transport> t) : peer_(t->peer()), t_(std::move(t)) {}
  std::string peer() const override { return peer_; }
  Result<std::unique_ptr<Transport>> finish() override { return std::move(t_); }

 private:
  std::string peer_;
  std::unique_ptr<Transport> t_;
};

class RdmaListener final : public Listener {
 public:
  explicit RdmaListener(RdmaOptions opt) : opt_(opt) {}

  /// host "" (rcpd's "*"): the IPv6 wildcard taking IPv4 too (AFONLY off),
  /// or the IPv4 wildcard where the host has no IPv6. An explicit IPv6
  /// address is IPv6-only, so "0.0.0.0" and "::" (rcpd.conf's default
  /// listen) bind side by side on one port, as TCP's IPV6_V6ONLY does.
  Status listen(const std::string& host, uint16_t port) {
    ch_.reset(rdma_create_event_channel());
    if (!ch_) return sys_error("rdma_create_event_channel (is an RDMA device present?)");
    if (host.empty()) {
      sockaddr_storage ss{};
      auto* a6 = reinterpret_cast<sockaddr_in6*>(&ss);
      a6->sin6_family = AF_INET6;
      a6->sin6_addr = in6addr_any;
      a6->sin6_port = htons(port);
      if (bind_and_listen(ss, false).ok()) return set_nonblock(ch_->fd);
      RCP_ASSIGN(ss, resolve("0.0.0.0", port, true));
      RCP_TRY(bind_and_listen(ss, false));
      return set_nonblock(ch_->fd);
    }
    RCP_ASSIGN(sockaddr_storage ss, resolve(host, port, true));
    RCP_TRY(bind_and_listen(ss, true));
    return set_nonblock(ch_->fd);
  }

  Status bind_and_listen(sockaddr_storage& ss, bool v6only) {
    rdma_cm_id* raw = nullptr;
    if (rdma_create_id(ch_.get(), &raw, nullptr, RDMA_PS_TCP) != 0) return sys_error("rdma_create_id");
    id_.reset(raw);
    addr_ = sockaddr_string(reinterpret_cast<sockaddr*>(&ss));
    if (ss.ss_family == AF_INET6) {
      int only = v6only ? 1 : 0;
      if (rdma_set_option(raw, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &only, sizeof only) != 0)
        return sys_error("rdma_set_option AFONLY " + addr_);
    }
    if (rdma_bind_addr(raw, reinterpret_cast<sockaddr*>(&ss)) != 0) return sys_error("rdma_bind_addr " + addr_);
    if (::rdma_listen(raw, 64) != 0) return sys_error("rdma_listen " + addr_);
    return {};
  }

  const char* kind() const override { return "rdma"; }
  std::string address() const override { return "rdma " + addr_; }
  int fd() const override { return ch_->fd; }

  Result<std::unique_ptr<Incoming>> accept() override {
    RCP_ASSIGN(auto t, accept_connection());
    if (!t) return std::unique_ptr<Incoming>();
    return std::unique_ptr<Incoming>(std::make_unique<ReadyIncoming>(std::move(t)));
  }

 private:
  /// Takes one cm event; a connection request becomes a connection (or a
  /// queue pair of an existing one: then nullptr, as for any other event).
  Result<std::unique_ptr<Transport>> accept_connection() {
    rdma_cm_event* raw;
    if (rdma_get_cm_event(ch_.get(), &raw) != 0) {
      if (errno == EAGAIN) return std::unique_ptr<Transport>();
      return sys_error("rdma_get_cm_event");
    }
    CmEvent req = take_event(raw);
    if (req.type != RDMA_CM_EVENT_CONNECT_REQUEST) return std::unique_ptr<Transport>();
    CmId id(req.id);
    const std::string peer = sockaddr_string(rdma_get_peer_addr(id.get()));
    auto ph = wire::decode_hello(req.private_data);
    if (!ph.ok()) {
      // Tell the peer why, in our own hello, so it can name the version it met.
      auto mine = wire::encode_hello(wire::Hello{});
      rdma_reject(id.get(), mine.data(), static_cast<uint8_t>(mine.size()));
      return make_error(ph.error().code, "rdma connection from " + peer + " refused: " + ph.error().context);
    }
    if (ph->flags & wire::kHelloJoin) {
      if ((ph->flags & wire::kHelloRail) && test_faults().rdma_rail_silent) {
        // Test-only fault switch: a rail join is neither accepted nor
        // refused (held, not destroyed: that would send a reject), as over
        // a link that loses the CM's messages; the client must go on
        // without the rail before this daemon gives up on the session.
        silent_.push_back(std::move(id));
        log_info("rdma: rail join from {} left unanswered (test fault rdma-rail-silent)", peer);
        return std::unique_ptr<Transport>();
      }
      RCP_TRY(accept_join(*joins_, std::move(id), req, peer));
      return std::unique_ptr<Transport>();
    }
    EventChannel ch(rdma_create_event_channel());
    if (!ch) return sys_error("rdma_create_event_channel");
    // The connection gets its own event channel, so its events reach its session thread.
    if (rdma_migrate_id(id.get(), ch.get()) != 0) return sys_error("rdma_migrate_id");
    auto t = std::make_unique<Connection>(std::move(ch), std::move(id), opt_);
    // The CQ is sized for what the client announced, and no more may join.
    // The first QP carries control only, so a hello announcing fewer than 2
    // (no client of protocol 11 sends one) is given 2: the control QP and
    // one to read over. (Refusing it instead left rdma_destroy_id of the
    // rejected id failing with EBADF in the guest, and the id leaked.)
    const uint32_t qps = std::clamp<uint32_t>(ph->qps, 2, kMaxQps);
    // The device's shared receive queue for the control QP; a device that
    // cannot make one (no SRQ support, its limits) gets receives per session.
    auto shared = srqs_.take(t->id()->verbs, ibv_get_device_name(t->id()->verbs->device));
    if (!shared.ok()) log_warning("rdma: control receives per session: {}", shared.error().message());
    Status st = t->setup(qps, shared.ok() ? std::move(shared.value()) : nullptr);
    if (!st.ok()) {
      rdma_reject(t->id(), nullptr, 0);
      return st.error();
    }
    const DeviceCaps& c = t->caps();
    const uint8_t init = std::min(c.init_rd, req.responder_resources);
    const uint8_t resp = std::min(c.resp_rd, req.initiator_depth);
    wire::Hello h = t->hello();
    h.rd_init = init;  // tell the client what was agreed
    h.rd_resp = resp;
    // Only this client learns the token (in the accept's private data);
    // it is registered first so that the client's joins always find it.
    RCP_ASSIGN(uint64_t token, wire::new_session_token());
    // rcp --rails: a PD and CQ on each other device with an address,
    // which the client may join QPs to (offer_joins hands them to joins).
    std::vector<wire::RailAddr> rails;
    if (ph->flags & wire::kHelloWantRails) rails = add_rails(*t);
    if (Status offered = t->offer_joins(joins_, token, qps, h); !offered.ok()) {
      rdma_reject(t->id(), nullptr, 0);
      return offered.error();
    }
    std::vector<uint8_t> pd = rails.empty() ? wire::encode_hello_token(h, wire::kHelloToken, token)
                                            : wire::encode_hello_rails(h, token, rails);
    rdma_conn_param cp = conn_param(init, resp, pd);
    t->set_peer(ph.value(), init);
    if (rdma_accept(t->id(), &cp) != 0) return sys_error("rdma_accept from " + peer);
    return std::unique_ptr<Transport>(std::move(t));
  }

  /// Sets up a rail on every other device with an address (at most
  /// kMaxRails - 1), numbered as announced; a device that fails is left out.
  std::vector<wire::RailAddr> add_rails(Connection& t) {
    std::vector<wire::RailAddr> out;
    for (const LocalRail& r : local_rails()) {
      if (out.size() + 1 >= wire::kMaxRails) break;
      if (r.ctx == t.id()->verbs || r.addrs.empty()) continue;
      if (opt_.rails.enabled && !opt_.rails.allows(r.dev)) continue;  // rcpd --rails
      auto n = t.add_rail(r.ctx, static_cast<uint8_t>(out.size() + 1), "");
      if (!n.ok()) {
        log_warning("rail on {} not offered: {}", r.dev, n.error().message());
        continue;
      }
      out.push_back(r.addrs.front());
      log_debug("offering rail {} on {} at {}", out.size() + 1, r.dev, wire::rail_addr_string(r.addrs.front()));
    }
    return out;
  }

  RdmaOptions opt_;
  EventChannel ch_;
  CmId id_;  // after ch_: destroyed before it
  std::string addr_;
  std::shared_ptr<QpJoins> joins_ = std::make_shared<QpJoins>(kQpJoinWording);
  SharedReceives srqs_;  ///< the first QPs' receive queues, one per device (in use)
  std::vector<CmId> silent_;  // test fault rdma-rail-silent; after ch_: destroyed before it
};

}  // namespace

Result<std::unique_ptr<Listener>> rdma_listen(const std::string& host, uint16_t port, const RdmaOptions& opt) {
  auto l = std::make_unique<RdmaListener>(opt);
  RCP_TRY(l->listen(host, port));
  return std::unique_ptr<Listener>(std::move(l));
}

}  // namespace rcp
