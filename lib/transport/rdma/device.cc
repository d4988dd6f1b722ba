#include "transport/rdma/device.h"

#include <fmt/core.h>

#include <algorithm>

#include "transport/rdma/rdma_transport.h"

namespace rcp {

bool rdma_devices_present() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list) ibv_free_device_list(list);
  return n > 0;
}

namespace rdma {

Result<DeviceCaps> query_caps(ibv_context* ctx) {
  ibv_device_attr a{};
  if (int rc = ibv_query_device(ctx, &a)) return make_error(rc, "ibv_query_device");
  DeviceCaps c;
  c.name = ibv_get_device_name(ctx->device);
  c.max_qp_wr = static_cast<uint32_t>(a.max_qp_wr);
  c.max_sge = static_cast<uint32_t>(a.max_sge);
  // Some providers report 0 for max_sge_rd; then the general limit applies.
  c.max_sge_rd = a.max_sge_rd > 0 ? static_cast<uint32_t>(a.max_sge_rd) : c.max_sge;
  c.max_cqe = static_cast<uint32_t>(a.max_cqe);
  c.init_rd = static_cast<uint8_t>(std::min(a.max_qp_init_rd_atom, 255));
  c.resp_rd = static_cast<uint8_t>(std::min(a.max_qp_rd_atom, 255));
  c.max_mr_size = a.max_mr_size;
  c.iwarp = ctx->device->transport_type == IBV_TRANSPORT_IWARP;
  return c;
}

Result<QueueSizes> size_queues(const DeviceCaps& caps, uint32_t ctrl_depth, uint32_t max_qps) {
  QueueSizes q;
  q.ctrl_depth = ctrl_depth;
  if (caps.max_qp_wr < ctrl_depth * 2u + 8u)
    return make_error(EINVAL, fmt::format("{}: max_qp_wr {} too small", caps.name, caps.max_qp_wr));
  q.read_wrs = std::min(kMaxReadWrs, caps.max_qp_wr - ctrl_depth - 1);
  q.sge = std::min({kMaxSge, caps.max_sge, caps.max_sge_rd});
  q.sq = ctrl_depth + q.read_wrs + 1;
  // Control takes at most ctrl_depth send and ctrl_depth receive completions;
  // each queue pair adds at most one per READ WR it has outstanding (only the
  // last of a chunk is signalled, but a QP in error flushes them all).
  const uint64_t want = uint64_t{ctrl_depth} * 2 + 1 + uint64_t{max_qps} * q.read_wrs;
  q.cqe = static_cast<uint32_t>(std::min<uint64_t>(want, caps.max_cqe));
  if (q.cqe < ctrl_depth * 2u + 2u)
    return make_error(EINVAL, fmt::format("{}: max_cqe {} too small", caps.name, caps.max_cqe));
  q.read_budget = q.cqe - ctrl_depth * 2u - 1u;
  return q;
}

}  // namespace rdma
}  // namespace rcp
