/// Which addresses this host's RDMA devices can be reached at: the daemon
/// announces one per device other than the session's (wire/rails.h), so a
/// client with a link to it can open a rail there. A RoCE device's GID table
/// holds the IP addresses of its network interface (IPv4 as ::ffff:a.b.c.d,
/// entry 1 on soft-RoCE); rdma_cm routes to those, so they are the ones.
/// An InfiniBand port has no IP GIDs: it announces nothing (IPoIB addresses
/// are not looked up) and its sessions use one rail.
#pragma once

#include <infiniband/verbs.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wire/rails.h"

namespace rcp::rdma {

/// One of rdma_cm's devices (the contexts rdma_cm ids are bound to) with the
/// addresses of its active ports.
struct LocalRail {
  ibv_context* ctx = nullptr;
  std::string dev;
  std::vector<wire::RailAddr> addrs;
};

/// The GID as sysfs prints it ("0000:0000:0000:0000:0000:ffff:0a4e:0002")
/// as a rail address: an IPv4-mapped GID gives its IPv4 address, a global
/// IPv6 GID itself; zero, link-local (the MAC-derived GID of every RoCE
/// port) and unparsable GIDs give none.
std::optional<wire::RailAddr> gid_rail_addr(std::string_view gid);

/// rdma_cm's devices (rdma_get_devices) and their addresses, from
/// /sys/class/infiniband/DEV/ports/P/gids/N of the ACTIVE ports.
std::vector<LocalRail> local_rails();

}  // namespace rcp::rdma
