/// The READ side of an RDMA connection: the queue pairs ("lanes") a session
/// pulls chunks over, and the READs outstanding on each. Lane 0 is the
/// connection's first QP (it carries control); extra lanes are the QPs
/// that joined the session (rcp --streams), owned here. Lane 0 carries no
/// READ: rcpd creates it on its device's shared receive queue, in a PD the
/// session's memory is not registered in (shared_receive.h). A chunk's READ work
/// requests are chained in one ibv_post_send on one lane, only the last
/// signalled (RC completes in order, so its completion covers the chunk);
/// each chunk goes to the least loaded usable lane. With several rails
/// (rcp --rails: QPs on other RDMA devices) a chunk first goes to the rail
/// with the fewest bytes outstanding (rail_pick.h), then to that rail's
/// least loaded lane; a rail that fails gives back its outstanding chunks
/// (fail_rail) so the connection can read them again over the others.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/rdma/handles.h"
#include "transport/rdma/rail_pick.h"
#include "transport/types.h"
#include "util/result.h"

namespace rcp::rdma {

/// Most rails ReadLanes tracks (wire::kMaxRails is 4).
constexpr size_t kMaxLaneRails = 8;

/// One queue pair of the session.
struct Lane {
  rdma_cm_id* id = nullptr;  ///< owned by the connection (lane 0) or by ReadLanes
  uint32_t rd_atomic = 0;    ///< initiator depth agreed for this QP
  uint32_t wrs_out = 0;      ///< READ WRs posted, not yet completed
  uint64_t chunks = 0;       ///< chunks read over it (for -v)
  uint32_t rail = 0;         ///< index of its rail (0: the control QP's device)
  bool up = false, disconnected = false;
  bool reads = true;         ///< carries READs (all but lane 0)
};

/// Keys of one rail for one READ: the peer's rkey of the memory on that
/// rail and our lkey of the landing memory there; usable only when both are known.
struct RailKeyPair {
  uint32_t rkey = 0, lkey = 0;
  bool known = false;
};

/// A chunk a failed rail gave back, to be read again elsewhere.
struct Orphan {
  uint64_t cookie = 0;
  uint32_t rkey0 = 0;  ///< the key the engine quoted (rail 0's)
  std::vector<ReadWr> wrs;
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
  /// Lane 0: the connection's own id, which it keeps owning; control only.
  void add_first(rdma_cm_id* id) {
    Lane l{id};
    l.reads = false;
    lanes_.push_back(l);
  }
  /// An extra QP (its id owns it); `up` once established.
  void add(CmId id, uint32_t rd_atomic, bool up, uint32_t rail = 0);
  /// Rails in all (1 until the connection adds more).
  void set_rails(size_t n) { rails_.resize(std::clamp<size_t>(n, 1, kMaxLaneRails)); }
  size_t rails() const { return rails_.size(); }
  const RailLoad& rail(size_t r) const { return rails_[r]; }
  /// Drops rail r: nothing is posted on it any more, and the chunks
  /// outstanding on it are returned (their WRs freed here).
  std::vector<Orphan> fail_rail(size_t r);
  /// Takes an id only to release it with the lanes (a join that arrived
  /// while the session was ending).
  void keep(CmId id) { owned_.push_back(std::move(id)); }

  Lane& operator[](size_t i) { return lanes_[i]; }
  const Lane& operator[](size_t i) const { return lanes_[i]; }
  size_t size() const { return lanes_.size(); }
  /// Index of the lane of this id, or -1.
  int find(const rdma_cm_id* id) const;
  bool usable(size_t i) const {
    return lanes_[i].reads && lanes_[i].up && !lanes_[i].disconnected && !rails_[lanes_[i].rail].failed;
  }

  /// Posts one chunk: `wrs` under rkey, landing in memory of `lkey`. When
  /// only part of the chain was posted, that lane's QP is moved to the error
  /// state (its unsignalled prefix could never be tracked) and qp_failed is set.
  /// keys[r] are rail r's; a rail whose keys are not known is not used.
  /// `rkey0` (the engine's key) is kept to hand the chunk back on failure.
  Status post(uint64_t cookie, uint32_t rkey0, std::span<const RailKeyPair> keys, std::span<const ReadWr> wrs,
              const std::string& peer, bool& qp_failed);
  /// The chunk of this cookie completed (or failed): its WRs are free again.
  /// `ok`: it completed, and counts as read on its rail. False if the cookie
  /// is not outstanding (a flushed READ of a rail already failed).
  bool finish(uint64_t cookie, bool ok = true);
  /// The rail the chunk of this cookie is outstanding on, or -1.
  int rail_of(uint64_t cookie) const;
  /// READ WRs one post() may carry now.
  uint32_t capacity() const;

  uint32_t per_qp() const { return per_qp_; }
  uint32_t sge() const { return sge_; }
  /// "12/11" — chunks per lane that reads (not lane 0), or "" when none was read.
  std::string chunks_per_lane() const;

 private:
  struct InFlight {
    uint32_t lane = 0, wrs = 0;
    uint64_t bytes = 0;
    Orphan again;  ///< kept only with several rails: what to re-read if the rail fails
  };
  bool lane_fits(size_t i, uint32_t n) const { return usable(i) && per_qp_ - lanes_[i].wrs_out >= n; }
  std::vector<Lane> lanes_;
  // The extra QPs: each id owns its QP (CmIdDeleter destroys both).
  std::vector<CmId> owned_;
  std::unordered_map<uint64_t, InFlight> reads_;  ///< by cookie
  std::vector<RailLoad> rails_ = std::vector<RailLoad>(1);
  size_t next_ = 0;                               ///< round-robin start among equally loaded lanes
  uint32_t per_qp_ = 0, sge_ = 1, budget_ = 0;
  uint32_t wrs_out_ = 0;  ///< over all lanes
  uint64_t chunks_ = 0;
};

}  // namespace rcp::rdma
