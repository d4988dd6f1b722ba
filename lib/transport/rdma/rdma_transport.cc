// The client's side of the RDMA transport: rdma_connect(). The daemon's side
// is listener.cc; what a connection is, once made, is connection.h.
#include "transport/rdma/rdma_transport.h"

#include <algorithm>
#include <fmt/core.h>

#include "transport/rdma/cm.h"
#include "transport/rdma/connection.h"
#include "transport/rdma/device.h"
#include "util/log.h"
#include "util/test_faults.h"
#include "wire/messages.h"

namespace rcp {

Result<std::unique_ptr<Transport>> rdma_connect(const std::string& host, uint16_t port, const RdmaOptions& opt) {
  using namespace rdma;
  RCP_ASSIGN(sockaddr_storage dst, resolve(host, port, false));
  const std::string where = fmt::format("rdma connect to {}", sockaddr_string(reinterpret_cast<sockaddr*>(&dst)));
  // Address resolution needs the peer's neighbour entry; when it is not
  // cached, the kernel's first resolution can miss its window (seen on
  // soft-RoCE: a 10 s wait on a cold ARP cache, then instant). So: short
  // attempts, repeated, within the overall timeout.
  const int attempt_ms = std::min(opt.timeout_ms, 2000);
  const int attempts = std::max(1, opt.timeout_ms / attempt_ms);
  Result<std::pair<EventChannel, CmId>> r = make_error(ETIMEDOUT, where);
  for (int i = 0; i < attempts; ++i) {
    r = resolve_once(dst, attempt_ms, where);
    if (r.ok() || (r.error().code != ETIMEDOUT && r.error().code != EHOSTUNREACH && r.error().code != ENODATA)) break;
    log_debug("{}: {} (attempt {} of {})", where, r.error().message(), i + 1, attempts);
  }
  if (!r.ok()) return r.error();
  EventChannel ch = std::move(r.value().first);
  CmId id = std::move(r.value().second);
  rdma_event_channel* chp = ch.get();
  auto t = std::make_unique<Connection>(std::move(ch), std::move(id), opt);
  const uint32_t want = std::clamp<uint32_t>(opt.qps, 1, kMaxQps);
  RCP_TRY(t->setup(want));
  const DeviceCaps& c = t->caps();
  auto pd = wire::encode_hello(t->hello());
  // The daemon clamps both depths to its device in rdma_accept.
  rdma_conn_param cp = conn_param(c.init_rd, c.resp_rd, pd);
  if (rdma_connect(t->id(), &cp) != 0) return sys_error(where + ": rdma_connect");
  // The event channel is non-blocking since setup; wait_cm_event polls first.
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

}  // namespace rcp
