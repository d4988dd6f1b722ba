/// rdma_cm plumbing shared by both ends: address resolution, waiting for and
/// copying connection events, the connection parameters rcp always uses,
/// and printing addresses. Every cm event is acked as soon as it is read
/// (take_event): destroying an id blocks until its events are acked, so
/// nothing here keeps a raw rdma_cm_event around.
#pragma once

#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "transport/sockaddr_string.h"
#include "transport/rdma/handles.h"
#include "util/result.h"

namespace rcp::rdma {

/// What we keep of a cm event after acking it.
struct CmEvent {
  rdma_cm_event_type type{};
  int status = 0;
  std::vector<uint8_t> private_data;
  uint8_t initiator_depth = 0;
  uint8_t responder_resources = 0;
  rdma_cm_id* id = nullptr;
};

/// Copies what we need out of `ev` and acks it.
CmEvent take_event(rdma_cm_event* ev);

/// Waits up to timeout_ms for the next event on ch and fails unless it is
/// `want`; a rejection by rcpd is explained from the hello it carries.
Result<CmEvent> wait_cm_event(rdma_event_channel* ch, rdma_cm_event_type want, int timeout_ms, const std::string& what);

/// getaddrinfo for host:port (passive: a listening address; "" = any).
Result<sockaddr_storage> resolve(const std::string& host, uint16_t port, bool passive);

/// Resolves address and route on a fresh channel and id. A timed-out attempt
/// is thrown away whole: an id still resolving cannot be asked again.
/// `src` (rcp --bind / --device): the local address to resolve from, which
/// binds the id to the device that has it; null = the route's choice.
Result<std::pair<EventChannel, CmId>> resolve_once(sockaddr_storage& dst, int timeout_ms, const std::string& where,
                                                   sockaddr_storage* src = nullptr);

/// resolve_once in short attempts until one succeeds, an error other than a
/// timeout or an unreachable host ends them, or `budget_ms` is spent (the
/// last error then). Why short: on a cold neighbour entry the kernel can
/// miss the ARP reply and finish the resolution only when its timeout
/// fires (soft-RoCE: every first resolution took the whole timeout, 2 to
/// 10 s, then the next was instant); a 500 ms attempt bounds that miss.
Result<std::pair<EventChannel, CmId>> resolve_within(sockaddr_storage& dst, int budget_ms, const std::string& where,
                                                     sockaddr_storage* src = nullptr);

/// The parameters of every rdma_connect and rdma_accept of rcp: the agreed
/// READ depths, transport and RNR retries at their maximum (7), and our
/// hello as private data (which must outlive the call).
rdma_conn_param conn_param(uint8_t initiator_depth, uint8_t responder_resources, std::span<const uint8_t> private_data);

Status set_nonblock(int fd);

}  // namespace rcp::rdma
