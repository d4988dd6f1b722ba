/// The daemon's table of sessions that accept extra connections (TCP
/// streams, RDMA queue pairs), keyed by the session's random token
/// (wire::new_session_token, from getrandom). A connection that quotes a
/// token is handed to that session here by the thread that accepted it; the
/// session picks it up on its own thread.
///
/// Why a table with rules rather than a map: the token comes from the
/// network, so a client must not be able to grow the daemon without bound.
/// Each session admits at most as many connections as its client announced
/// in the hello (≤ kMaxJoinedConnections, the first included) — before this
/// cap, 4,000 joins on one TCP session took the daemon to 4,014 fds — and a
/// session that has closed its entry refuses every later join, so nothing
/// is handed to a session that will never pick it up.
///
/// A session may also leave a Point with its entry: what a joining
/// connection is set up on (RDMA: the session's PD and CQ). join() can run
/// an `admit` step on it under the registry's lock, and close() takes the
/// same lock, so once close() has returned no join is using the Point any
/// more and the session may release what it names.
#pragma once

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "util/result.h"

namespace rcp {

/// Most connections one session may have, the first included: rcp --streams
/// allows 1..16 (TCP streams or RDMA queue pairs).
constexpr uint32_t kMaxJoinedConnections = 16;

/// How a registry words its refusals (each transport keeps the log lines
/// its operators and tests know).
struct JoinWording {
  std::string_view unknown = "its session token names no open session";  ///< unknown, zero or closed token
  std::string_view units = "connection(s)";                               ///< "announced N <units> and has them all"
};

/// The place a join would take: connection `number` of at most `max`, both
/// counting the session's first connection.
struct JoinSeat {
  uint32_t number = 0;
  uint32_t max = 0;
};

template <typename Conn, typename Point = std::monostate>
class JoinRegistry {
 public:
  explicit JoinRegistry(JoinWording words = {}) : words_(words) {}

  /// Opens `token` for joins: the session may have `announced` connections
  /// in all (clamped to 1..kMaxJoinedConnections), its first one included;
  /// joins are admitted on `point`. Call before the client can learn the
  /// token. False if the token is already open (a token must name one session).
  bool open(uint64_t token, uint32_t announced, Point point = {}) {
    if (token == 0) return false;
    std::lock_guard lk(mu_);
    auto [it, fresh] = sessions_.try_emplace(token);
    if (!fresh) return false;
    it->second.max = std::clamp<uint32_t>(announced, 1, kMaxJoinedConnections);
    it->second.point = std::move(point);
    return true;
  }

  /// Hands `conn` to the session `token`, moving from it only on success. A
  /// refusal says why (unknown or closed token, every announced connection
  /// already there); `conn` then stays with the caller.
  Status join(uint64_t token, Conn& conn) {
    return join(token, conn, [](Point&, Conn&, JoinSeat) { return Status{}; });
  }

  /// As join() above, but first runs `admit(Point&, Conn&, JoinSeat) ->
  /// Status` under the registry's lock, once the token and the cap allow
  /// the join: it sets `conn` up on the session's point, which cannot be
  /// closed meanwhile. If it fails, its error is the refusal, the join
  /// takes no seat and `conn` stays with the caller (admit must leave
  /// nothing of it on the point).
  template <typename Admit>
  Status join(uint64_t token, Conn& conn, Admit&& admit) {
    std::lock_guard lk(mu_);
    auto it = sessions_.find(token);
    if (token == 0 || it == sessions_.end()) return make_error(EPERM, std::string(words_.unknown));
    Entry& e = it->second;
    if (e.count >= e.max)
      return make_error(EPERM, "its session announced " + std::to_string(e.max) + " " + std::string(words_.units) +
                                   " and has them all");
    RCP_TRY(admit(e.point, conn, JoinSeat{e.count + 1, e.max}));
    ++e.count;
    e.fresh.push_back(std::move(conn));
    return {};
  }

  /// The connections that joined `token` since the last call (session thread).
  std::vector<Conn> take(uint64_t token) {
    std::lock_guard lk(mu_);
    auto it = sessions_.find(token);
    if (it == sessions_.end()) return {};
    return std::exchange(it->second.fresh, {});
  }

  /// Ends joins for `token`; returns what joined and was never taken, for the
  /// session to release with its own connections. Every join after this is
  /// refused, and no admit step is still running on the session's point.
  std::vector<Conn> close(uint64_t token) {
    std::lock_guard lk(mu_);
    auto it = sessions_.find(token);
    if (it == sessions_.end()) return {};
    std::vector<Conn> late = std::move(it->second.fresh);
    sessions_.erase(it);
    return late;
  }

  /// Connections that joined open sessions, beyond their first ones: what
  /// the daemon counts in max_connections for them. A joined connection
  /// counts until its session closes its entry.
  uint32_t joined() const {
    std::lock_guard lk(mu_);
    uint32_t n = 0;
    for (auto& [token, e] : sessions_) n += e.count - 1;
    return n;
  }

  /// Sessions open for joins (tests, logs).
  size_t size() const {
    std::lock_guard lk(mu_);
    return sessions_.size();
  }

 private:
  struct Entry {
    uint32_t count = 1;  ///< connections so far, the first included
    uint32_t max = 1;
    Point point{};
    std::vector<Conn> fresh;
  };
  const JoinWording words_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Entry> sessions_;
};

}  // namespace rcp
