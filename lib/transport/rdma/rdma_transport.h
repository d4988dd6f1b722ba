/// The RDMA transport: an RC queue pair set up with rdma_cm. Control
/// messages travel as SEND_WITH_IMM into pre-posted receive buffers, the
/// immediate carrying receive credits back; chunks are pulled with chained
/// RDMA READ work requests (several SGEs each, only the last signalled),
/// straight out of the peer's registered pool. Each connection has its own
/// protection domain, so an rkey never reaches another connection's memory.
/// A connection may have several queue pairs (rcp --streams): the extra ones
/// join the session with a random token the daemon gave in its accept, share
/// its PD (one rkey serves all) and CQ, and carry only READs; control stays
/// on the first.
///
/// The parts, one concept per file: device.h (limits and queue sizes),
/// cm.h (rdma_cm events and addresses), connection.h (one connection as a
/// Transport), control_channel.h (SEND/RECV with credits), read_lanes.h
/// (READs over the queue pairs), wr_id.h (typed completion ids), joins.h
/// (extra queue pairs by session token), listener.cc (the daemon's side),
/// handles.h (RAII owners of verbs handles).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "transport/listener.h"
#include "transport/rails_option.h"
#include "transport/transport.h"
#include "util/result.h"

namespace rcp {

struct RdmaOptions {
  uint32_t max_chunk = 0;
  int timeout_ms = 10000;
  uint16_t ctrl_depth = 64;  ///< control receives posted (and credits granted) per side
  uint32_t qps = 1;          ///< client: queue pairs per connection (1..16); READs are spread over them
  RailsOption rails;         ///< client: --rails (more RDMA devices, each with qps queue pairs); daemon: the devices it offers
  std::string bind;          ///< client: --bind, the source address rdma_cm resolves from ("" = the route's)
  std::string device;        ///< client: --device, the device rail 0 must be on ("" = the route's)
};

/// True if this host has at least one RDMA device (cheap; for --transport auto).
bool rdma_devices_present();

Result<std::unique_ptr<Transport>> rdma_connect(const std::string& host, uint16_t port, const RdmaOptions& opt);

/// The daemon's rdma_cm listener behind the transport-neutral interface
/// (listener.cc). Each connection it accepts uses `opt`.
Result<std::unique_ptr<Listener>> rdma_listen(const std::string& host, uint16_t port, const RdmaOptions& opt);

}  // namespace rcp
