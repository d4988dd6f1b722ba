#include "transport/rdma/path_info.h"

#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <fmt/core.h>

#include "transport/rdma/cm.h"

namespace rcp::rdma {

PathInfo path_info(rdma_cm_id* id) {
  PathInfo p;
  if (!id) return p;
  p.port = id->port_num;
  p.local = sockaddr_string(rdma_get_local_addr(id));
  p.peer = sockaddr_string(rdma_get_peer_addr(id));
  if (!id->qp || !id->verbs) return p;
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  if (ibv_query_qp(id->qp, &attr, IBV_QP_AV, &init) != 0 || !attr.ah_attr.is_global) return p;
  p.gid_index = attr.ah_attr.grh.sgid_index;
  if (attr.ah_attr.port_num != 0) p.port = attr.ah_attr.port_num;
  ibv_gid_entry e{};
  if (ibv_query_gid_ex(id->verbs, p.port, static_cast<uint32_t>(p.gid_index), &e, 0) != 0) return p;
  char buf[INET6_ADDRSTRLEN] = "";
  if (inet_ntop(AF_INET6, e.gid.raw, buf, sizeof buf)) p.gid = buf;
  switch (e.gid_type) {
    case IBV_GID_TYPE_ROCE_V2: p.gid_type = "RoCE v2"; break;
    case IBV_GID_TYPE_ROCE_V1: p.gid_type = "RoCE v1"; break;
    case IBV_GID_TYPE_IB: p.gid_type = "IB"; break;
    default: break;
  }
  return p;
}

std::string path_text(const std::string& device, const PathInfo& p) {
  std::string gid = p.gid_index < 0 ? "no GRH" : fmt::format("GID index {} {}", p.gid_index, p.gid);
  if (!p.gid_type.empty()) gid += " (" + p.gid_type + ")";
  return fmt::format("device {} port {}, {}, {} -> {}", device, p.port, gid, p.local, p.peer);
}

}  // namespace rcp::rdma
