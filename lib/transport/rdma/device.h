/// What an RDMA device can do, and the queue sizes rcp derives from it once
/// per connection. Queried with ibv_query_device on the device rdma_cm bound
/// the connection to; everything sized from it (queue depths, SGEs per READ,
/// the CQ) is computed here in one place, not spread over the setup code.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

#include "util/result.h"

namespace rcp::rdma {

/// READ work requests kept outstanding per QP at most. The device serves
/// max_qp_rd_atom of them at a time and queues the rest in the SQ; 256 keeps
/// the wire busy at 64 KiB..1 MiB chunks without a huge SQ (perftest's
/// default tx depth is 128, 3FS uses 128).
constexpr uint32_t kMaxReadWrs = 256;
/// SGEs per READ we ever ask for; rxe offers 32, mlx5 30. 16 × 64 KiB blocks
/// covers a 1 MiB chunk in one work request.
constexpr uint32_t kMaxSge = 16;
/// Most queue pairs one session may have, the first (control only) included:
/// rcp --streams allows 1..16 that carry READs. It bounds what one client
/// can make the daemon allocate.
constexpr uint32_t kMaxQps = 17;

struct DeviceCaps {
  uint32_t max_qp_wr = 0, max_sge = 0, max_sge_rd = 0, max_cqe = 0;
  uint8_t init_rd = 0, resp_rd = 0;  ///< max_qp_init_rd_atom, max_qp_rd_atom (capped at 255)
  uint64_t max_mr_size = 0;
  bool iwarp = false;
  std::string name;
};

Result<DeviceCaps> query_caps(ibv_context* ctx);

/// The queues of one connection, for a control channel of `ctrl_depth`
/// receives and up to `max_qps` queue pairs sharing one CQ.
struct QueueSizes {
  uint32_t ctrl_depth = 0;   ///< control receives posted, and control send buffers
  uint32_t read_wrs = 0;     ///< READ WRs one QP may have outstanding
  uint32_t sge = 1;          ///< SGEs per READ WR
  uint32_t sq = 0;           ///< send queue of the first QP (control sends + READs + 1)
  uint32_t cqe = 0;          ///< entries of the shared CQ
  uint32_t read_budget = 0;  ///< READ WRs all QPs together may have outstanding: what the CQ can take
};

/// Fails (EINVAL, naming the device) when the device is too small for the
/// control channel.
Result<QueueSizes> size_queues(const DeviceCaps& caps, uint32_t ctrl_depth, uint32_t max_qps);

}  // namespace rcp::rdma
