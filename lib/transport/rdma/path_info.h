/// Which address and GID a connection's queue pair really uses, for -v and
/// --json (rcp --bind / --device, issue 15): rdma_cm picks the device and
/// port from the route, and the GID index from the source address and the
/// port's GID table; the QP's address vector says which one it took. On
/// RoCE the type (v1: link-local, not routable; v2: UDP/IP) is what decides
/// whether the path crosses a router.
#pragma once

#include <rdma/rdma_cma.h>

#include <string>

namespace rcp::rdma {

struct PathInfo {
  uint8_t port = 0;      ///< 0: not known (not connected yet)
  int gid_index = -1;    ///< -1: the QP has no GRH (InfiniBand inside one subnet)
  std::string gid;       ///< "::ffff:10.77.0.1", "" without a GRH
  std::string gid_type;  ///< "RoCE v2", "RoCE v1", "IB" or ""
  std::string local;     ///< "10.77.0.1:37411"
  std::string peer;      ///< "10.77.0.2:7471"
};

/// Asks the connected `id`'s QP (ibv_query_qp, its address vector) and the
/// port's GID table; fields it cannot learn stay empty.
PathInfo path_info(rdma_cm_id* id);

/// "device rxe0 port 1, GID index 1 ::ffff:10.77.0.1 (RoCE v2), 10.77.0.1:37411 -> 10.77.0.2:7471"
std::string path_text(const std::string& device, const PathInfo& p);

}  // namespace rcp::rdma
