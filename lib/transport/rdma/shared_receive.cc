#include "transport/rdma/shared_receive.h"

#include <algorithm>
#include <fmt/core.h>

#include "transport/rdma/wr_id.h"
#include "util/log.h"
#include "util/test_faults.h"
#include "wire/messages.h"

namespace rcp::rdma {

Result<std::shared_ptr<SharedReceive>> SharedReceive::create(ibv_context* ctx, uint32_t buffers,
                                                             const std::string& dev) {
  static_assert(kBufferSize == wire::kMaxMessage, "an SRQ buffer takes the largest control message");
  std::shared_ptr<SharedReceive> s(new SharedReceive());
  s->dev_ = dev;
  ibv_device_attr da{};
  if (int rc = ibv_query_device(ctx, &da)) return make_error(rc, "ibv_query_device " + dev);
  if (da.max_srq == 0 || da.max_srq_wr <= 0) return make_error(EOPNOTSUPP, dev + " has no shared receive queues");
  buffers = std::min(buffers, static_cast<uint32_t>(da.max_srq_wr));
  s->buffers_ = buffers;
  s->pd_.reset(ibv_alloc_pd(ctx));
  if (!s->pd_) return sys_error("ibv_alloc_pd (shared receive queue) on " + dev);
  s->mem_.assign(size_t{buffers} * kBufferSize, 0);
  s->mr_.reset(ibv_reg_mr(s->pd_.get(), s->mem_.data(), s->mem_.size(), IBV_ACCESS_LOCAL_WRITE));
  if (!s->mr_) return sys_error("ibv_reg_mr (shared receive buffers) on " + dev);
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = buffers;
  sa.attr.max_sge = 1;
  s->srq_.reset(ibv_create_srq(s->pd_.get(), &sa));
  if (!s->srq_) return sys_error(fmt::format("ibv_create_srq ({} entries) on {}", buffers, dev));
  for (uint32_t i = 0; i < buffers; ++i) RCP_TRY(s->repost(i));
  log_debug("rdma {}: shared receive queue of {} x {} bytes", dev, buffers, kBufferSize);
  return s;
}

SharedReceive::~SharedReceive() {
  // What the suite checks: every buffer went back (none lost to a failed QP).
  if (srq_) log_info("rdma {}: shared receive queue released: {} of {} buffers posted", dev_, posted(), buffers_);
}

Status SharedReceive::repost(uint32_t i) {
  if (i >= buffers_) return make_error(EINVAL, "no such shared receive buffer");
  ibv_sge sge{reinterpret_cast<uint64_t>(buffer(i)), static_cast<uint32_t>(kBufferSize), mr_->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = WrId{WrKind::recv, i}.encode();
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad;
  if (int rc = ibv_post_srq_recv(srq_.get(), &wr, &bad)) return make_error(rc, "ibv_post_srq_recv on " + dev_);
  std::lock_guard lk(mu_);
  ++posted_;
  return {};
}

uint32_t SharedReceive::posted() const {
  std::lock_guard lk(mu_);
  return posted_;
}

Result<std::shared_ptr<SharedReceive>> SharedReceives::take(ibv_context* ctx, const std::string& dev) {
  Current& c = by_device_[ctx];
  std::shared_ptr<SharedReceive> s = c.srq.lock();
  // (Test-only fault switch: fewer sessions per SRQ, so the suite sees the next one made.)
  const uint32_t per = test_faults().rdma_srq_sessions ? test_faults().rdma_srq_sessions : kSessionsPerSrq;
  if (!s || c.served >= per) {
    RCP_ASSIGN(s, SharedReceive::create(ctx, kSharedBuffers, dev));
    c.srq = s;
    c.served = 0;
  }
  ++c.served;
  return s;
}

}  // namespace rcp::rdma
