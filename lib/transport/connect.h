/// Choosing a transport: --transport auto uses RDMA when this host has a
/// device and the daemon answers on rdma_cm, otherwise TCP (and says so);
/// --transport rdma never falls back.
#pragma once

#include <memory>
#include <string>

#include "transport/rails_option.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/transport.h"

namespace rcp {

/// Default ports. rdma_cm's port space is separate from the kernel's TCP
/// ports on RoCE and IB, but not on iWARP, so they differ. rdma-core's rcopy
/// uses 7427; 7471/7472 are unassigned by IANA.
constexpr uint16_t kDefaultRdmaPort = 7471;
constexpr uint16_t kDefaultTcpPort = 7472;

/// Queue pairs per copy when --streams is not given (TCP's streams:
/// tcp/tcp_transport.h): 2 — measured in the soft-RoCE guest
/// (bench/README.md): push +14 % over 1 QP, pull the same, 4 no better than
/// 2; one extra rdma_cm connect per copy is the whole cost.
constexpr uint32_t kDefaultRdmaQps = 2;

struct ConnectOptions {
  TransportKind kind = TransportKind::automatic;
  uint16_t rdma_port = kDefaultRdmaPort;
  uint16_t tcp_port = kDefaultTcpPort;
  uint32_t max_chunk = 1u << 20;
  int timeout_ms = 10000;
  uint32_t tcp_streams = 0;  // 0: kDefaultTcpStreams, or kLocalTcpStreams to a daemon on this host
  uint32_t rdma_qps = kDefaultRdmaQps;
  bool zerocopy = true;
  /// TLS 1.3 on every TCP stream (rcp --encrypt). RDMA is not encrypted:
  /// with kind automatic it selects TCP, with kind rdma it is refused.
  bool encrypt = false;
  /// rcp --rails: stripe READs over more RDMA devices (RDMA only).
  RailsOption rails;
  /// rcp --bind: the local address to connect from (both transports); "" = the route's.
  std::string bind;
  /// rcp --device: the RDMA device of the control connection; "" = the route's.
  /// Set, a failed RDMA connect never falls back to TCP.
  std::string device;
};

/// Connects to host; `fallback_note` is set when auto fell back to TCP.
Result<std::unique_ptr<Transport>> connect_transport(const std::string& host, const ConnectOptions& opt,
                                                     std::string& fallback_note);

bool parse_transport(const std::string& s, TransportKind& out);

}  // namespace rcp
