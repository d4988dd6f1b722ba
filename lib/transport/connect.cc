#include "transport/connect.h"

#include "transport/rdma/rdma_transport.h"
#include "transport/tcp/tcp_transport.h"

namespace rcp {

const char* transport_kind_name(TransportKind k) {
  switch (k) {
    case TransportKind::automatic: return "auto";
    case TransportKind::rdma: return "rdma";
    case TransportKind::tcp: return "tcp";
  }
  return "?";
}

bool parse_transport(const std::string& s, TransportKind& out) {
  if (s == "auto") out = TransportKind::automatic;
  else if (s == "rdma") out = TransportKind::rdma;
  else if (s == "tcp") out = TransportKind::tcp;
  else return false;
  return true;
}

Result<std::unique_ptr<Transport>> connect_transport(const std::string& host, const ConnectOptions& opt,
                                                     std::string& fallback_note) {
  if (opt.encrypt && opt.kind == TransportKind::rdma)
    return make_error(EINVAL, "--encrypt needs TCP: RDMA sessions are not encrypted");
  if (opt.encrypt && opt.kind == TransportKind::automatic) {
    fallback_note = "--encrypt: using TCP with TLS (RDMA sessions are not encrypted)";
  } else if (opt.kind != TransportKind::tcp) {
    if (!rdma_devices_present()) {
      if (opt.kind == TransportKind::rdma) return make_error(ENODEV, "--transport rdma: this host has no RDMA device");
      if (!opt.device.empty())
        return make_error(ENODEV, "--device " + opt.device + ": this host has no RDMA device");
      fallback_note = "no RDMA device on this host; using TCP";
    } else {
      RdmaOptions ro;
      ro.max_chunk = opt.max_chunk;
      ro.timeout_ms = opt.timeout_ms;
      ro.qps = opt.rdma_qps;
      ro.rails = opt.rails;
      ro.bind = opt.bind;
      ro.device = opt.device;
      auto t = rdma_connect(host, opt.rdma_port, ro);
      if (t.ok() || opt.kind == TransportKind::rdma || !opt.device.empty()) return t;
      fallback_note = "RDMA connection failed (" + t.error().message() + "); using TCP";
    }
  }
  TcpOptions to;
  to.max_chunk = opt.max_chunk;
  to.timeout_ms = opt.timeout_ms;
  to.streams = opt.tcp_streams;
  to.zerocopy = opt.zerocopy;
  to.encrypt = opt.encrypt;
  to.bind = opt.bind;
  return tcp_connect(host, opt.tcp_port, to);
}

}  // namespace rcp
