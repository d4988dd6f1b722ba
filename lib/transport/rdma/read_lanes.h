/// The READ side of an RDMA connection: the queue pairs ("lanes") a session
/// pulls chunks over, and the READs outstanding on each. Lane 0 is the
/// connection's first QP (it also carries control); extra lanes are the QPs
/// that joined the session (rcp --streams), owned here. A chunk's READ work
/// requests are chained in one ibv_post_send on one lane, only the last
/// signalled (RC completes in order, so its completion covers the chunk);
/// each chunk goes to the least loaded usable lane.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/rdma/handles.h"
#include "transport/types.h"
#include "util/result.h"

namespace rcp::rdma {

/// One queue pair of the session.
struct Lane {
  rdma_cm_id* id = nullptr;  ///< owned by the connection (lane 0) or by ReadLanes
  uint32_t rd_atomic = 0;    ///< initiator depth agreed for this QP
  uint32_t wrs_out = 0;      ///< READ WRs posted, not yet completed
  uint64_t chunks = 0;       ///< chunks read over it (for -v)
  bool up = false, disconnected = false;
};

class ReadLanes {
 public:
  /// per_qp: READ WRs one QP may have outstanding; sge: SGEs per READ;
  /// budget: READ WRs all QPs together may have outstanding (the shared CQ).
  void configure(uint32_t per_qp, uint32_t sge, uint32_t budget) {
    per_qp_ = per_qp;
    sge_ = sge;
    budget_ = budget;
  }
  /// Lane 0: the connection's own id, which it keeps owning.
  void add_first(rdma_cm_id* id) { lanes_.push_back(Lane{id}); }
  /// An extra QP (its id owns it); `up` once established.
  void add(CmId id, uint32_t rd_atomic, bool up);
  /// Takes an id only to release it with the lanes (a join that arrived
  /// while the session was ending).
  void keep(CmId id) { owned_.push_back(std::move(id)); }

  Lane& operator[](size_t i) { return lanes_[i]; }
  const Lane& operator[](size_t i) const { return lanes_[i]; }
  size_t size() const { return lanes_.size(); }
  /// Index of the lane of this id, or -1.
  int find(const rdma_cm_id* id) const;
  bool usable(size_t i) const { return lanes_[i].up && !lanes_[i].disconnected; }

  /// Posts one chunk: `wrs` under rkey, landing in memory of `lkey`. When
  /// only part of the chain was posted, that lane's QP is moved to the error
  /// state (its unsignalled prefix could never be tracked) and qp_failed is set.
  Status post(uint64_t cookie, uint32_t rkey, uint32_t lkey, std::span<const ReadWr> wrs, const std::string& peer,
              bool& qp_failed);
  /// The chunk of this cookie completed (or failed): its WRs are free again.
  void finish(uint64_t cookie);
  /// READ WRs one post() may carry now.
  uint32_t capacity() const;

  uint32_t per_qp() const { return per_qp_; }
  uint32_t sge() const { return sge_; }
  /// "12/11" — chunks per lane, or "" when none was read.
  std::string chunks_per_lane() const;

 private:
  struct InFlight {
    uint32_t lane = 0, wrs = 0;
  };
  std::vector<Lane> lanes_;
  // The extra QPs: each id owns its QP (CmIdDeleter destroys both).
  std::vector<CmId> owned_;
  std::unordered_map<uint64_t, InFlight> reads_;  ///< by cookie
  size_t next_ = 0;                               ///< round-robin start among equally loaded lanes
  uint32_t per_qp_ = 0, sge_ = 1, budget_ = 0;
  uint32_t wrs_out_ = 0;  ///< over all lanes
  uint64_t chunks_ = 0;
};

}  // namespace rcp::rdma
