#include "transport/rdma/cm.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fmt/core.h>

#include "util/log.h"
#include "wire/messages.h"

namespace rcp::rdma {

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

Result<sockaddr_storage> resolve(const std::string& host, uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  std::string ps = std::to_string(port);
  int gai = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), ps.c_str(), &hints, &res);
  // Code 0: the resolver's own words are the reason; an errno would add a wrong one.
  if (gai != 0) return make_error(0, fmt::format("cannot resolve host '{}': {}", host, gai_strerror(gai)));
  sockaddr_storage ss{};
  std::memcpy(&ss, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  return ss;
}

Result<std::pair<EventChannel, CmId>> resolve_once(sockaddr_storage& dst, int timeout_ms, const std::string& where,
                                                   sockaddr_storage* src) {
  EventChannel ch(rdma_create_event_channel());
  if (!ch) return sys_error("rdma_create_event_channel (is an RDMA device present?)");
  rdma_cm_id* raw = nullptr;
  if (rdma_create_id(ch.get(), &raw, nullptr, RDMA_PS_TCP) != 0) return sys_error("rdma_create_id");
  CmId id(raw);
  if (rdma_resolve_addr(raw, reinterpret_cast<sockaddr*>(src), reinterpret_cast<sockaddr*>(&dst), timeout_ms) != 0)
    return sys_error(where + (src ? ": rdma_resolve_addr from " + sockaddr_string(reinterpret_cast<sockaddr*>(src)) : ": rdma_resolve_addr"));
  // Wait a little longer than rdma_cm's own timeout so its ADDR_ERROR is seen.
  RCP_TRY(wait_cm_event(ch.get(), RDMA_CM_EVENT_ADDR_RESOLVED, timeout_ms + 1000, where + ": resolve address"));
  if (rdma_resolve_route(raw, timeout_ms) != 0) return sys_error(where + ": rdma_resolve_route");
  RCP_TRY(wait_cm_event(ch.get(), RDMA_CM_EVENT_ROUTE_RESOLVED, timeout_ms + 1000, where + ": resolve route"));
  return std::make_pair(std::move(ch), std::move(id));
}

Result<std::pair<EventChannel, CmId>> resolve_within(sockaddr_storage& dst, int budget_ms, const std::string& where,
                                                     sockaddr_storage* src) {
  constexpr int kAttemptMs = 500;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(budget_ms);
  // At most budget / 500 attempts as well: one that fails at once (a port
  // without its address yet) is not spun on for the whole budget.
  const int attempts = std::max(1, budget_ms / kAttemptMs);
  for (int attempt = 1;; ++attempt) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    auto r = resolve_once(dst, static_cast<int>(std::clamp<int64_t>(left, 1, kAttemptMs)), where, src);
    if (r.ok()) return r;
    const int code = r.error().code;
    if ((code != ETIMEDOUT && code != EHOSTUNREACH && code != ENODATA) || left <= kAttemptMs || attempt >= attempts)
      return r;
    log_debug("{}: {} (attempt {} of {})", where, r.error().message(), attempt, attempts);
  }
}

rdma_conn_param conn_param(uint8_t initiator_depth, uint8_t responder_resources, std::span<const uint8_t> private_data) {
  rdma_conn_param cp{};
  cp.initiator_depth = initiator_depth;
  cp.responder_resources = responder_resources;
  cp.retry_count = 7;
  cp.rnr_retry_count = 7;
  cp.private_data = private_data.data();
  cp.private_data_len = static_cast<uint8_t>(private_data.size());
  return cp;
}

Status set_nonblock(int fd) {
  int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0 || ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return sys_error("fcntl O_NONBLOCK");
  return {};
}

}  // namespace rcp::rdma
