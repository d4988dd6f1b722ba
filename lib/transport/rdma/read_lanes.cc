#include "transport/rdma/read_lanes.h"

#include <algorithm>
#include <array>
#include <fmt/core.h>

#include "transport/rdma/wr_id.h"

namespace rcp::rdma {

void ReadLanes::add(CmId id, uint32_t rd_atomic, bool up, uint32_t rail) {
  Lane l;
  l.id = id.get();
  l.rd_atomic = rd_atomic;
  l.up = up;
  l.rail = rail < rails_.size() ? rail : 0;
  owned_.push_back(std::move(id));
  lanes_.push_back(l);
}

int ReadLanes::find(const rdma_cm_id* id) const {
  for (size_t i = 0; i < lanes_.size(); ++i)
    if (lanes_[i].id == id) return static_cast<int>(i);
  return -1;
}

Status ReadLanes::post(uint64_t cookie, uint32_t rkey0, std::span<const RailKeyPair> keys, std::span<const ReadWr> wrs,
                       const std::string& peer, bool& qp_failed) {
  if (!WrId::fits(cookie)) return make_error(EINVAL, "RDMA READ cookie too large");
  // A chunk's WRs go to one QP (its last, signalled WR covers the rest).
  // The rail first: the one with the fewest bytes outstanding among those
  // with the keys and a QP that has room; then its least loaded QP, ties
  // broken round robin.
  const uint32_t n = static_cast<uint32_t>(wrs.size());
  std::array<bool, kMaxLaneRails> eligible{};
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const uint32_t r = lanes_[i].rail;
    if (r < keys.size() && keys[r].known && lane_fits(i, n)) eligible[r] = true;
  }
  const int rail = pick_rail(rails_, std::span<const bool>(eligible.data(), rails_.size()));
  int lane = -1;
  for (size_t k = 0; rail >= 0 && k < lanes_.size(); ++k) {
    const size_t i = (next_ + k) % lanes_.size();
    if (lanes_[i].rail != static_cast<uint32_t>(rail) || !lane_fits(i, n)) continue;
    if (lane < 0 || lanes_[i].wrs_out < lanes_[static_cast<size_t>(lane)].wrs_out) lane = static_cast<int>(i);
  }
  if (lane < 0) return make_error(EINVAL, "RDMA READ exceeds the queue");
  Lane& L = lanes_[static_cast<size_t>(lane)];
  const uint32_t rkey = keys[L.rail].rkey, lkey = keys[L.rail].lkey;
  uint64_t bytes = 0;
  next_ = static_cast<size_t>(lane) + 1;
  std::vector<ibv_send_wr> w(wrs.size());
  std::vector<ibv_sge> sg;
  size_t total_sges = 0;
  for (auto& r : wrs) total_sges += r.sges.size();
  sg.reserve(total_sges);
  for (size_t i = 0; i < wrs.size(); ++i) {
    if (wrs[i].sges.empty() || wrs[i].sges.size() > sge_) return make_error(EINVAL, "READ with too many SGEs");
    const size_t first = sg.size();
    for (auto& s : wrs[i].sges) sg.push_back({s.addr, s.length, lkey});
    w[i].opcode = IBV_WR_RDMA_READ;
    w[i].sg_list = &sg[first];
    w[i].num_sge = static_cast<int>(wrs[i].sges.size());
    w[i].wr.rdma.remote_addr = wrs[i].remote_addr;
    w[i].wr.rdma.rkey = rkey;
    w[i].next = i + 1 < wrs.size() ? &w[i + 1] : nullptr;
    bytes += wrs[i].length;
  }
  // RC completes in order, so the last WR's completion covers the chunk.
  w.back().send_flags = IBV_SEND_SIGNALED;
  w.back().wr_id = WrId{WrKind::read, cookie}.encode();
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(L.id->qp, w.data(), &bad)) {
    if (bad != w.data()) {
      // Part of the chain was posted but only its last WR would signal: we
      // could not tell when those finish, so the QP cannot be trusted.
      ibv_qp_attr qa{};
      qa.qp_state = IBV_QPS_ERR;
      ibv_modify_qp(L.id->qp, &qa, IBV_QP_STATE);
      qp_failed = true;
    }
    return make_error(rc, fmt::format("ibv_post_send (RDMA READ) on queue pair {} to {}", lane + 1, peer));
  }
  L.wrs_out += n;
  ++L.chunks;
  ++chunks_;
  wrs_out_ += n;
  RailLoad& R = rails_[L.rail];
  R.bytes_out += bytes;
  ++R.reads_out;
  InFlight f{static_cast<uint32_t>(lane), n, bytes, {}};
  // With one rail there is nowhere to re-read a chunk: no copy is kept.
  if (rails_.size() > 1) f.again = Orphan{cookie, rkey0, std::vector<ReadWr>(wrs.begin(), wrs.end())};
  reads_[cookie] = std::move(f);
  return {};
}

bool ReadLanes::finish(uint64_t cookie, bool ok) {
  auto it = reads_.find(cookie);
  if (it == reads_.end()) return false;
  const InFlight& f = it->second;
  lanes_[f.lane].wrs_out -= f.wrs;
  wrs_out_ -= f.wrs;
  RailLoad& R = rails_[lanes_[f.lane].rail];
  R.bytes_out -= f.bytes;
  --R.reads_out;
  if (ok) {
    R.bytes += f.bytes;
    ++R.chunks;
  }
  reads_.erase(it);
  return true;
}

int ReadLanes::rail_of(uint64_t cookie) const {
  auto it = reads_.find(cookie);
  return it == reads_.end() ? -1 : static_cast<int>(lanes_[it->second.lane].rail);
}

std::vector<Orphan> ReadLanes::fail_rail(size_t r) {
  std::vector<Orphan> out;
  if (r >= rails_.size()) return out;
  rails_[r].failed = true;
  for (auto it = reads_.begin(); it != reads_.end();) {
    const InFlight& f = it->second;
    if (lanes_[f.lane].rail != r) {
      ++it;
      continue;
    }
    lanes_[f.lane].wrs_out -= f.wrs;
    wrs_out_ -= f.wrs;
    rails_[r].bytes_out -= f.bytes;
    --rails_[r].reads_out;
    out.push_back(std::move(it->second.again));
    it = reads_.erase(it);
  }
  return out;
}

uint32_t ReadLanes::capacity() const {
  uint32_t best = 0;
  for (size_t i = 0; i < lanes_.size(); ++i)
    if (usable(i)) best = std::max(best, per_qp_ - lanes_[i].wrs_out);
  return std::min(best, budget_ - wrs_out_);
}

std::string ReadLanes::chunks_per_lane() const {
  if (chunks_ == 0) return {};
  std::string per;
  for (auto& l : lanes_)
    if (l.reads) per += fmt::format("{}{}", per.empty() ? "" : "/", l.chunks);
  return per;
}

}  // namespace rcp::rdma
