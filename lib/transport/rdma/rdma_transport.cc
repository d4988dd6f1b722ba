// The client's side of the RDMA transport: rdma_connect(). The daemon's side
// is listener.cc; what a connection is, once made, is connection.h.
#include "transport/rdma/rdma_transport.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <span>
#include <vector>
#include <fmt/core.h>

#include "transport/rdma/cm.h"
#include "transport/rdma/connection.h"
#include "transport/rdma/device.h"
#include "transport/rdma/rail_addrs.h"
#include "util/log.h"
#include "util/test_faults.h"
#include "wire/messages.h"
#include "wire/rails.h"

namespace rcp {
namespace {

using namespace rdma;

/// The names of this host's RDMA devices, for checking --rails DEV,...
std::vector<std::string> device_names() {
  std::vector<std::string> out;
  int n = 0;
  ibv_context** ctxs = rdma_get_devices(&n);
  if (!ctxs) return out;
  for (int i = 0; i < n; ++i) out.emplace_back(ibv_get_device_name(ctxs[i]->device));
  rdma_free_devices(ctxs);
  return out;
}

/// How long after the daemon accepted rcp may spend joining its queue pairs
/// and rails before it sends its first request. The daemon gives a session
/// hello_timeout (10 s by default) for that request: a rail whose link
/// loses the CM's messages (seen in the guest after a link bounce: every
/// join waited out its 10 s) made the session miss that window and the
/// whole copy fail, where one rail would have done. A join over a working
/// link takes milliseconds on hardware; in the soft-RoCE guest under TCG
/// 0.1-0.2 s alone and up to 1.2 s with five copies joining at once. Half
/// the daemon's default leaves room for that and for its clock starting
/// first.
constexpr int kRailJoinBudgetMs = 5000;

/// rcp --rails: a rail for each address the daemon announced that the local
/// route reaches over a device not used yet (and allowed by the option),
/// with `qps` queue pairs joined to the session on it. A rail that cannot
/// be set up, or not by `deadline` (kRailJoinBudgetMs after the accept), is left out
/// with a warning: the copy goes on over the others.
void add_rails(Connection& t, std::span<const wire::RailAddr> addrs, uint64_t token, uint16_t port, uint32_t qps,
               const RdmaOptions& opt, std::chrono::steady_clock::time_point deadline, const std::string& where) {
  std::vector<ibv_context*> used{t.id()->verbs};
  auto left_ms = [&] {
    return static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
  };
  for (size_t i = 0; i < addrs.size(); ++i) {
    const std::string shown = wire::rail_addr_string(addrs[i]);
    auto dst = resolve(shown, port, false);
    if (!dst.ok()) continue;
    const std::string what = fmt::format("{}: rail address {}", where, shown);
    if (left_ms() <= 0) {
      log_warning("{}: not used: rails must join within {} ms of the connection", what, kRailJoinBudgetMs);
      continue;
    }
    auto r = resolve_within(dst.value(), left_ms(), what);
    if (!r.ok()) {
      log_info("{}: not reachable ({})", what, r.error().message());
      continue;
    }
    ibv_context* ctx = r.value().second->verbs;
    const std::string dev = ibv_get_device_name(ctx->device);
    if (std::find(used.begin(), used.end(), ctx) != used.end()) {
      log_info("{}: reached over {}, a device already in use", what, dev);
      continue;
    }
    if (!opt.rails.allows(dev)) {
      log_info("{}: reached over {}, which --rails does not name", what, dev);
      continue;
    }
    auto rail = t.add_rail(ctx, static_cast<uint8_t>(i + 1), sockaddr_string(reinterpret_cast<sockaddr*>(&dst.value())));
    if (!rail.ok()) {
      log_warning("{}: rail on {} not used: {}", what, dev, rail.error().message());
      continue;
    }
    used.push_back(ctx);
    for (uint32_t q = 0; q < qps; ++q) {
      const int ms = left_ms();
      Status st = ms > 0 ? t.join_rail(dst.value(), token, rail.value(), q, ms, where)
                         : Status(make_error(ETIMEDOUT, fmt::format("rails must join within {} ms of the connection", kRailJoinBudgetMs)));
      if (!st.ok()) {
        log_warning("{}: queue pair {} on {} not joined: {}", what, q + 1, dev, st.error().message());
        if (q == 0) t.leave_out_rail(rail.value(), st.error().message());
        break;
      }
    }
  }
}

/// rcp --bind / --device: the source address rdma_cm resolves from, or
/// none (the route's choice). --bind names it; --device takes its device's
/// first IP address (an IP GID of an ACTIVE port) in the daemon's family.
/// A device without one cannot reach the daemon: refused, naming it.
Result<std::optional<sockaddr_storage>> source_address(const RdmaOptions& opt, const sockaddr_storage& dst) {
  if (!opt.bind.empty()) {
    auto src = resolve(opt.bind, 0, true);
    if (!src.ok()) return make_error(0, "--bind " + opt.bind + ": " + src.error().message());
    if (src->ss_family != dst.ss_family)
      return make_error(EAFNOSUPPORT, fmt::format("--bind {}: not in the family of the daemon's address {}", opt.bind,
                                                  sockaddr_string(reinterpret_cast<const sockaddr*>(&dst))));
    return std::optional<sockaddr_storage>(src.value());
  }
  if (opt.device.empty()) return std::optional<sockaddr_storage>();
  const uint8_t family = dst.ss_family == AF_INET6 ? 6 : 4;
  for (const LocalRail& r : local_rails()) {
    if (r.dev != opt.device) continue;
    for (const wire::RailAddr& a : r.addrs) {
      if (a.family != family) continue;
      auto src = resolve(wire::rail_addr_string(a), 0, true);
      if (src.ok()) return std::optional<sockaddr_storage>(src.value());
    }
    return make_error(EADDRNOTAVAIL,
                      fmt::format("--device {}: no usable port toward {}: no ACTIVE port with an IPv{} GID", opt.device,
                                  sockaddr_string(reinterpret_cast<const sockaddr*>(&dst)), family));
  }
  return make_error(ENODEV, fmt::format("--device {}: this host has no RDMA device '{}'", opt.device, opt.device));
}

}  // namespace

Result<std::unique_ptr<Transport>> rdma_connect(const std::string& host, uint16_t port, const RdmaOptions& opt) {
  using namespace rdma;
  RCP_ASSIGN(sockaddr_storage dst, resolve(host, port, false));
  const std::string where = fmt::format("rdma connect to {}", sockaddr_string(reinterpret_cast<sockaddr*>(&dst)));
  // Short attempts within the overall timeout (a cold neighbour entry: see resolve_within).
  RCP_ASSIGN(std::optional<sockaddr_storage> src, source_address(opt, dst));
  Result<std::pair<EventChannel, CmId>> r = resolve_within(dst, opt.timeout_ms, where, src ? &*src : nullptr);
  // With --device or --bind, a path that does not work is theirs: say so.
  auto forced = [&](const Error& e) {
    if (!opt.device.empty())
      return make_error(e.code, fmt::format("--device {}: no usable path toward the daemon: {}", opt.device, e.message()));
    if (!opt.bind.empty())
      return make_error(e.code, fmt::format("--bind {}: no usable path toward the daemon: {}", opt.bind, e.message()));
    return e;
  };
  if (!r.ok()) return forced(r.error());
  EventChannel ch = std::move(r.value().first);
  CmId id = std::move(r.value().second);
  // rdma_cm binds the id to the device that has the source address; with
  // --device, a route that left over another device is refused, not used.
  if (!opt.device.empty() && opt.device != ibv_get_device_name(id->verbs->device))
    return make_error(EHOSTUNREACH, fmt::format("--device {}: the route from {} to {} goes over {}, not {}", opt.device,
                                                sockaddr_string(rdma_get_local_addr(id.get())), sockaddr_string(reinterpret_cast<sockaddr*>(&dst)),
                                                ibv_get_device_name(id->verbs->device), opt.device));
  rdma_event_channel* chp = ch.get();
  if (!opt.rails.automatic) {
    const auto have = device_names();
    for (const std::string& d : opt.rails.devices)
      if (std::find(have.begin(), have.end(), d) == have.end())
        return make_error(ENODEV, fmt::format("--rails: this host has no RDMA device '{}'", d));
  }
  auto t = std::make_unique<Connection>(std::move(ch), std::move(id), opt);
  // `want` QPs carry READs; the first, control only, comes on top.
  const uint32_t want = std::clamp<uint32_t>(opt.qps, 1, kMaxQps - 1);
  RCP_TRY(t->setup(want + 1));
  const DeviceCaps& c = t->caps();
  wire::Hello mine = t->hello();
  mine.flags |= wire::kHelloRailStats;  // the daemon reports what it reads per rail (a push's --json)
  if (opt.rails.enabled) {
    // The daemon admits as many QPs as announced: want on each rail it may offer.
    mine.flags |= wire::kHelloWantRails;
    mine.qps = static_cast<uint16_t>(std::min<uint32_t>(kMaxQps, want * wire::kMaxRails + 1));
  }
  if (test_faults().rdma_hello_one_qp) mine.qps = 1;  // (test-only: the daemon must still admit control + 1)
  auto pd = wire::encode_hello(mine);
  // The daemon clamps both depths to its device in rdma_accept.
  rdma_conn_param cp = conn_param(c.init_rd, c.resp_rd, pd);
  if (rdma_connect(t->id(), &cp) != 0) return sys_error(where + ": rdma_connect");
  // The event channel is non-blocking since setup; wait_cm_event polls first.
  auto established = wait_cm_event(chp, RDMA_CM_EVENT_ESTABLISHED, opt.timeout_ms, where);
  if (!established.ok()) return forced(established.error());
  CmEvent est = std::move(established.value());
  auto ph = wire::decode_hello(est.private_data);
  if (!ph.ok()) return make_error(ph.error().code, where + ": " + ph.error().context);
  const auto joins_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::min(opt.timeout_ms, kRailJoinBudgetMs));
  t->set_peer(ph.value(), std::min<uint32_t>(c.init_rd, ph->rd_resp));
  t->set_established();
  // The data QPs join with the daemon's token (every accept carries one:
  // the first QP reads nothing). One missing reads as 0 (the CM pads the
  // private data with zeros), which decoding refuses.
  auto token_or = wire::decode_hello_token(est.private_data);
  if (!token_or.ok()) return make_error(token_or.error().code, where + ": the daemon's accept: " + token_or.error().context);
  uint64_t token = token_or.value();
  // Test-only fault switch: quote a token one bit off, so the suite can
  // prove a real client's wrong join is refused and the daemon goes on.
  if (test_faults().rdma_bad_join_token) token ^= 1;
  for (uint32_t i = 1; i <= want; ++i) RCP_TRY(t->join(dst, token, i, want + 1, opt.timeout_ms, where));
  if (opt.rails.enabled && !(ph->flags & wire::kHelloRails)) {
    log_info("{}: the daemon offers no other rails; using 1", where);
  } else if (opt.rails.enabled) {
    RCP_ASSIGN(auto addrs, wire::decode_hello_rails(est.private_data));
    const uint16_t dst_port = ntohs(reinterpret_cast<sockaddr_in*>(&dst)->sin_port);  // same offset for IPv6
    add_rails(*t, addrs, token, dst_port, want, opt, joins_end, where);
  }
  return std::unique_ptr<Transport>(std::move(t));
}

}  // namespace rcp
