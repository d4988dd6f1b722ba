/// One RAII owner per verbs / rdma_cm handle, each with its own deleter, so
/// every handle is released exactly once on every path. Destructors log and
/// never throw. Declare them in a class in creation order: members die in
/// reverse, which is the order verbs requires (QP before CQ and MRs, those
/// before the PD, the cm_id before its event channel).
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cstring>
#include <memory>

#include "util/log.h"

namespace rcp::rdma {

struct EventChannelDeleter {
  void operator()(rdma_event_channel* c) const { rdma_destroy_event_channel(c); }
};
struct CmIdDeleter {
  void operator()(rdma_cm_id* id) const {
    if (id->qp) rdma_destroy_qp(id);
    if (rdma_destroy_id(id) != 0) log_error("rdma_destroy_id: {}", std::strerror(errno));
  }
};
struct PdDeleter {
  void operator()(ibv_pd* pd) const {
    if (int rc = ibv_dealloc_pd(pd)) log_error("ibv_dealloc_pd: {}", std::strerror(rc));
  }
};
struct CompChannelDeleter {
  void operator()(ibv_comp_channel* c) const {
    if (int rc = ibv_destroy_comp_channel(c)) log_error("ibv_destroy_comp_channel: {}", std::strerror(rc));
  }
};
struct CqDeleter {
  void operator()(ibv_cq* cq) const {
    if (int rc = ibv_destroy_cq(cq)) log_error("ibv_destroy_cq: {}", std::strerror(rc));
  }
};
struct MrDeleter {
  void operator()(ibv_mr* mr) const {
    if (int rc = ibv_dereg_mr(mr)) log_error("ibv_dereg_mr: {}", std::strerror(rc));
  }
};

struct SrqDeleter {
  void operator()(ibv_srq* srq) const {
    if (int rc = ibv_destroy_srq(srq)) log_error("ibv_destroy_srq: {}", std::strerror(rc));
  }
};

using EventChannel = std::unique_ptr<rdma_event_channel, EventChannelDeleter>;
using CmId = std::unique_ptr<rdma_cm_id, CmIdDeleter>;
using Pd = std::unique_ptr<ibv_pd, PdDeleter>;
using CompChannel = std::unique_ptr<ibv_comp_channel, CompChannelDeleter>;
using Cq = std::unique_ptr<ibv_cq, CqDeleter>;
using Mr = std::unique_ptr<ibv_mr, MrDeleter>;
using Srq = std::unique_ptr<ibv_srq, SrqDeleter>;

/// The QP belongs to its cm_id (rdma_create_qp); this guard destroys it
/// early — before the CQ and MRs — without destroying the id.
class QpGuard {
 public:
  QpGuard() = default;
  explicit QpGuard(rdma_cm_id* id) : id_(id) {}
  QpGuard(const QpGuard&) = delete;
  QpGuard& operator=(const QpGuard&) = delete;
  ~QpGuard() {
    if (id_ && id_->qp) rdma_destroy_qp(id_);
  }

 private:
  rdma_cm_id* id_ = nullptr;
};

}  // namespace rcp::rdma
