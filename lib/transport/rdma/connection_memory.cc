// Connection: the session's memory on every rail. Rail 0 (the control QP's
// device) registers at once; another rail only once queue pairs of the
// session have joined on it: a rail left out at connect, or one rcpd has
// not picked up yet, would otherwise pin the whole pool again on a device
// no READ uses. A rail whose queue pairs arrive later registers then
// (register_late_rails) and, for memory the peer reads, tells the peer its
// rkey there with RAIL_KEYS; until that arrives the peer reads over the
// rails it has keys for (ReadLanes picks among those).
#include <algorithm>
#include <chrono>
#include <system_error>
#include <thread>
#include <fmt/core.h>

#include "transport/rdma/connection.h"
#include "util/log.h"
#include "util/test_faults.h"

namespace rcp::rdma {
namespace {

/// Registrations a peer may announce rail keys for: it registers its pool
/// once per connection, so 4 is generous; more is a peer growing our map.
constexpr size_t kMaxPeerRailKeys = 4;

int access_for(bool remote_read, bool iwarp) {
  int access = IBV_ACCESS_LOCAL_WRITE;
  if (remote_read) access |= IBV_ACCESS_REMOTE_READ;
  if (!remote_read && iwarp) access |= IBV_ACCESS_REMOTE_WRITE;  // iWARP READ sinks need it
  return access;
}

}  // namespace

bool Connection::rail_joined(size_t r) const {
  // (A queue pair whose join the client gave up on goes away: it carries nothing.)
  for (size_t i = 0; i < lanes_.size(); ++i)
    if (lanes_[i].rail == r && !lanes_[i].disconnected) return true;
  return false;
}

void Connection::keep_rail_mr(Rail& r, uint32_t key, Mr mr, bool remote_read, wire::RailKeys& announce) {
  if (!remote_read) {
    r.sink_lkey = mr->lkey;
    r.sink_registered = true;
  }
  announce.rkeys.push_back({r.index, mr->rkey});
  r.mrs.emplace(key, std::move(mr));
}

Result<uint32_t> Connection::register_memory(void* base, size_t len, bool remote_read) {
  if (len > caps_.max_mr_size)
    return make_error(EINVAL, fmt::format("{}: buffer pool of {} bytes exceeds max_mr_size {}", caps_.name, len, caps_.max_mr_size));
  const int access = access_for(remote_read, caps_.iwarp);
  // Every rail registers the same memory on its own PD, all at once: one
  // thread per extra rail, rail 0 on this one. A registration pins the
  // pages and fills the device's translation table (milliseconds per
  // 16 MiB pool on soft-RoCE, more with bigger pools); in parallel N rails
  // take about one registration's time instead of N.
  const auto t0 = std::chrono::steady_clock::now();
  const size_t n = rails_.size() + 1;
  // Test-only fault switch: rcpd registers on no other rail here, as if
  // every rail's queue pairs were picked up after this (register_late_rails).
  const bool hold_rails = test_faults().rdma_rail_late;
  auto wanted = [&](size_t i) { return i == 0 || (!hold_rails && rails_[i - 1]->failed.empty() && rail_joined(i)); };
  std::vector<ibv_mr*> got(n, nullptr);
  std::vector<int> err(n, 0);
  auto reg = [&](size_t i) {
    ibv_pd* pd = i == 0 ? pd_.get() : rails_[i - 1]->pd.get();
    got[i] = ibv_reg_mr(pd, base, len, access);
    if (!got[i]) err[i] = errno;
  };
  {
    std::vector<std::thread> threads;
    for (size_t i = 1; i < n; ++i) {
      if (!wanted(i)) continue;
      try {
        threads.emplace_back(reg, i);
      } catch (const std::system_error&) {
        reg(i);  // no thread to be had: register it here, after the others started
      }
    }
    reg(0);
    for (auto& t : threads) t.join();
  }
  // Own every registration first, so a failure releases those that worked.
  std::vector<Mr> mrs;
  for (ibv_mr* m : got) mrs.emplace_back(m);
  size_t registered = 0;
  for (size_t i = 0; i < n; ++i) {
    if (mrs[i] || !wanted(i)) {
      registered += mrs[i] ? 1 : 0;
      continue;
    }
    if (i == 0) return make_error(err[0], fmt::format("ibv_reg_mr of {} bytes on {} (check `ulimit -l`)", len, caps_.name));
    return make_error(err[i], fmt::format("ibv_reg_mr of {} bytes on {} (rail {})", len, rails_[i - 1]->caps.name, i));
  }
  const uint32_t key = remote_read ? mrs[0]->rkey : mrs[0]->lkey;
  if (!remote_read) sink_lkey_ = mrs[0]->lkey;
  mrs_.emplace(key, std::move(mrs[0]));
  if (rails_.empty()) return key;
  regs_[key] = Registration{base, len, remote_read};
  // A rail still standing without queue pairs may get them later: look again then.
  for (size_t i = 1; i < n; ++i) rail_regs_due_ = rail_regs_due_ || (!mrs[i] && rails_[i - 1]->failed.empty());
  log_debug("{}: {} bytes registered on {} of {} rails in parallel in {:.1f} ms", caps_.name, len, registered, n,
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  wire::RailKeys rk{key, {}};
  for (size_t i = 1; i < n; ++i)
    if (mrs[i]) keep_rail_mr(*rails_[i - 1], key, std::move(mrs[i]), remote_read, rk);
  // The peer reads this memory over our other rails with these rkeys; the
  // message precedes every message quoting the key on the control QP (none
  // while no other rail has queue pairs: the decoder refuses an empty list).
  if (remote_read && !rk.rkeys.empty()) RCP_TRY(queue_control(wire::encode_rail_keys(rk)));
  // Test-only fault switch: a lying daemon announcing keys for registrations
  // it never made, as many as the client keeps and one more.
  if (remote_read && !rk.rkeys.empty() && test_faults().rdma_rail_keys_lie)
    for (uint32_t k = 1; k <= 4; ++k) RCP_TRY(queue_control(wire::encode_rail_keys(wire::RailKeys{key ^ (k << 20), rk.rkeys})));
  return key;
}

Status Connection::register_late_rails() {
  rail_regs_due_ = false;
  for (const auto& [key, g] : regs_) {
    wire::RailKeys rk{key, {}};
    for (size_t i = 1; i <= rails_.size(); ++i) {
      Rail& r = *rails_[i - 1];
      if (!r.failed.empty() || r.mrs.contains(key)) continue;
      if (!rail_joined(i)) {
        rail_regs_due_ = true;  // not yet: its queue pairs may still come
        continue;
      }
      const auto t0 = std::chrono::steady_clock::now();
      Mr mr(ibv_reg_mr(r.pd.get(), g.base, g.len, access_for(g.remote_read, caps_.iwarp)));
      if (!mr) {
        // The rail carries no READ of this memory; the others go on.
        fail_rail(i, fmt::format("ibv_reg_mr of {} bytes after its queue pairs joined: {}", g.len,
                                 std::error_code(errno, std::generic_category()).message()));
        continue;
      }
      log_debug("{}: {} bytes registered on rail {} ({}) after its queue pairs joined, in {:.1f} ms", caps_.name, g.len,
                i + 1, r.caps.name,
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      keep_rail_mr(r, key, std::move(mr), g.remote_read, rk);
    }
    if (g.remote_read && !rk.rkeys.empty()) RCP_TRY(queue_control(wire::encode_rail_keys(rk)));
  }
  return {};
}

void Connection::deregister_memory(uint32_t key) {
  for (auto& r : rails_) r->mrs.erase(key);
  mrs_.erase(key);
  regs_.erase(key);
}

std::array<RailKeyPair, kMaxLaneRails> Connection::keys_for(uint32_t rkey0) const {
  std::array<RailKeyPair, kMaxLaneRails> k{};
  k[0] = {rkey0, sink_lkey_, true};
  auto it = peer_keys_.find(rkey0);
  for (size_t i = 0; i < rails_.size() && i + 1 < k.size(); ++i) {
    const Rail& r = *rails_[i];
    if (it == peer_keys_.end() || !r.sink_registered || r.index >= wire::kMaxRails) continue;
    if (const auto& rk = it->second[r.index]) k[i + 1] = {*rk, r.sink_lkey, true};
  }
  return k;
}

void Connection::take_rail_keys(std::vector<TransportEvent>& events, size_t first) {
  // A lie ends the session: the messages after it (more of ours among
  // them, which the engine would call unknown) are dropped with it.
  auto refuse = [&](size_t at, std::string why) {
    events.erase(std::remove_if(events.begin() + static_cast<std::ptrdiff_t>(at), events.end(),
                                [](const TransportEvent& e) { return e.kind == TransportEvent::Kind::message; }),
                 events.end());
    close_with(events, std::move(why));
  };
  for (size_t i = first; i < events.size();) {
    TransportEvent& e = events[i];
    if (e.kind == TransportEvent::Kind::message && wire::is_rail_stats(e.message)) {
      auto c = wire::decode_rail_stats(e.message);
      events.erase(events.begin() + static_cast<std::ptrdiff_t>(i));
      if (!c.ok()) {
        refuse(i, fmt::format("peer {}: {}", peer_name_, c.error().context));
        return;
      }
      for (const wire::RailCount& rc : c.value()) {
        // Rail 0 or a rail this side joined: the peer cannot report another.
        const bool ours = rc.rail == 0 || std::any_of(rails_.begin(), rails_.end(),
                                                      [&](const auto& r) { return r->index == rc.rail; });
        if (!ours) {
          refuse(i, fmt::format("peer {}: RAIL_STATS names rail {}, which this session did not join",
                                         peer_name_, rc.rail));
          return;
        }
        peer_counts_[rc.rail] = rc;
      }
      continue;
    }
    if (e.kind != TransportEvent::Kind::message || !wire::is_rail_keys(e.message)) {
      ++i;
      continue;
    }
    auto k = wire::decode_rail_keys(e.message);
    events.erase(events.begin() + static_cast<std::ptrdiff_t>(i));
    if (!k.ok()) {
      refuse(i, fmt::format("peer {}: {}", peer_name_, k.error().context));
      return;
    }
    if (!peer_keys_.contains(k->key) && peer_keys_.size() >= kMaxPeerRailKeys) {
      refuse(i, fmt::format("peer {}: RAIL_KEYS for more than {} registrations", peer_name_, kMaxPeerRailKeys));
      return;
    }
    auto& slot = peer_keys_[k->key];
    for (const wire::RailKey& rk : k->rkeys) slot[rk.rail] = rk.rkey;
  }
}

}  // namespace rcp::rdma
