#include "daemon/listeners.h"

#include "transport/rdma/rdma_transport.h"
#include "transport/tcp/tcp_transport.h"
#include "util/log.h"

namespace rcp {

Result<std::vector<std::unique_ptr<Listener>>> open_listeners(const ListenerConfig& cfg) {
  std::vector<std::unique_ptr<Listener>> out;
  auto fail = [](Error e, const std::string& shown) -> Error {
    log_error("{}", shown);
    return e;
  };
  if (cfg.kind != TransportKind::tcp) {
    if (!rdma_devices_present()) {
      if (cfg.kind == TransportKind::rdma)
        return fail(make_error(ENODEV, "--transport rdma: this host has no RDMA device"),
                    "--transport rdma: this host has no RDMA device");
      log_info("no RDMA device on this host; serving TCP only");
    } else {
      RdmaOptions ro;
      ro.max_chunk = cfg.max_chunk;
      ro.rails = cfg.rails;
      auto l = rdma_listen(cfg.host, cfg.rdma_port, ro);
      if (!l.ok()) {
        if (cfg.kind == TransportKind::rdma) return fail(l.error(), l.error().message());
        log_error("RDMA listener not started ({}); serving TCP only", l.error().message());
      } else {
        log_info("listening on {}", l.value()->address());
        out.push_back(std::move(l.value()));
      }
    }
  }
  if (cfg.kind != TransportKind::rdma) {
    TcpOptions to;
    to.max_chunk = cfg.max_chunk;
    to.timeout_ms = cfg.tcp_hello_ms;
    to.tls = cfg.tls;
    auto l = tcp_listener(cfg.host, cfg.tcp_port, to);
    if (!l.ok()) return fail(l.error(), l.error().message());
    log_info("listening on {}", l.value()->address());
    out.push_back(std::move(l.value()));
  }
  return out;
}

}  // namespace rcp
