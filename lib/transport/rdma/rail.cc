#include "transport/rdma/rail.h"

#include "transport/rdma/cm.h"

namespace rcp::rdma {

Status setup_rail(Rail& r, ibv_context* ctx, uint32_t cqe) {
  r.ctx = ctx;
  RCP_ASSIGN(r.caps, query_caps(ctx));
  r.pd.reset(ibv_alloc_pd(ctx));
  if (!r.pd) return sys_error("ibv_alloc_pd on " + r.caps.name);
  r.cc.reset(ibv_create_comp_channel(ctx));
  if (!r.cc) return sys_error("ibv_create_comp_channel on " + r.caps.name);
  RCP_TRY(set_nonblock(r.cc->fd));
  r.cq.reset(ibv_create_cq(ctx, static_cast<int>(std::min<uint32_t>(cqe, r.caps.max_cqe)), nullptr, r.cc.get(), 0));
  if (!r.cq) return sys_error("ibv_create_cq on " + r.caps.name);
  if (ibv_req_notify_cq(r.cq.get(), 0) != 0) return sys_error("ibv_req_notify_cq on " + r.caps.name);
  return {};
}

}  // namespace rcp::rdma
