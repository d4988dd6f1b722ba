/// The daemon's transport policy: which listeners `rcpd --transport
/// auto|rdma|tcp` opens. auto listens on rdma_cm where this host has an
/// RDMA device (and says so when it has none, or when rdma_cm refuses) and
/// always on TCP, so every client has a way in; rdma listens on rdma_cm only
/// and fails without a device; tcp listens on TCP only. It lives in lib/ so
/// that the program (rcpd/main.cc) only turns options into this config.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/rails_option.h"
#include "transport/listener.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/transport.h"
#include "util/result.h"

namespace rcp {

struct ListenerConfig {
  std::string host;  ///< "" for every address
  uint16_t rdma_port = 0;
  uint16_t tcp_port = 0;
  TransportKind kind = TransportKind::automatic;
  uint32_t max_chunk = 0;      ///< largest chunk the daemon accepts (its hello)
  int tcp_hello_ms = 5000;     ///< how long a TCP client may take to say hello
  /// TLS offered to TCP clients that ask (tcp/tls.h); null = not offered.
  std::shared_ptr<tcp::TlsContext> tls;
  /// rcpd --rails DEV,...: the devices offered as more rails to rcp --rails
  /// (not enabled, or auto: every device with an address).
  RailsOption rails;
};

/// Opens what the policy asks for and logs each listener it opens
/// ("listening on tcp *:7472") and each it skips and why. An error (already
/// logged, as rcpd has always done) means the daemon cannot serve as asked.
Result<std::vector<std::unique_ptr<Listener>>> open_listeners(const ListenerConfig& cfg);

}  // namespace rcp
