#include "transport/rdma/read_lanes.h"

#include <algorithm>
#include <fmt/core.h>

#include "transport/rdma/wr_id.h"

namespace rcp::rdma {

void ReadLanes::add(CmId id, uint32_t rd_atomic, bool up) {
  Lane l;
  l.id = id.get();
  l.rd_atomic = rd_atomic;
  l.up = up;
  owned_.push_back(std::move(id));
  lanes_.push_back(l);
}

int ReadLanes::find(const rdma_cm_id* id) const {
  for (size_t i = 0; i < lanes_.size(); ++i)
    if (lanes_[i].id == id) return static_cast<int>(i);
  return -1;
}

Status ReadLanes::post(uint64_t cookie, uint32_t rkey, uint32_t lkey, std::span<const ReadWr> wrs,
                       const std::string& peer, bool& qp_failed) {
  if (!WrId::fits(cookie)) return make_error(EINVAL, "RDMA READ cookie too large");
  // A chunk's WRs go to one QP (its last, signalled WR covers the rest);
  // chunks go to the least loaded QP, ties broken round robin.
  const uint32_t n = static_cast<uint32_t>(wrs.size());
  int lane = -1;
  for (size_t k = 0; k < lanes_.size(); ++k) {
    const size_t i = (next_ + k) % lanes_.size();
    if (!usable(i) || per_qp_ - lanes_[i].wrs_out < n) continue;
    if (lane < 0 || lanes_[i].wrs_out < lanes_[static_cast<size_t>(lane)].wrs_out) lane = static_cast<int>(i);
  }
  if (lane < 0) return make_error(EINVAL, "RDMA READ exceeds the queue");
  Lane& L = lanes_[static_cast<size_t>(lane)];
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
  reads_[cookie] = InFlight{static_cast<uint32_t>(lane), n};
  return {};
}

void ReadLanes::finish(uint64_t cookie) {
  auto it = reads_.find(cookie);
  if (it == reads_.end()) return;
  lanes_[it->second.lane].wrs_out -= it->second.wrs;
  wrs_out_ -= it->second.wrs;
  reads_.erase(it);
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
  for (auto& l : lanes_) per += fmt::format("{}{}", per.empty() ? "" : "/", l.chunks);
  return per;
}

}  // namespace rcp::rdma
