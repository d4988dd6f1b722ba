/// The daemon's accept loop, transport-neutral: one epoll over the
/// listeners' fds; each connection taken is finished (its hello) and served
/// on a thread of its own, so a slow or hostile client costs only its
/// thread; at most max_connections sessions at once (more are refused and
/// logged); on stop, it waits a bounded time for running sessions. What a
/// session does is the caller's handler — rcpd passes its OPEN/put/get
/// dispatch — so this loop knows nothing of files.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "transport/listener.h"
#include "util/result.h"

namespace rcp {

/// Runs one session: called on the session's thread with its transport.
using SessionHandler = std::function<void(Transport&)>;

struct ServerConfig {
  uint32_t max_connections = 64;
  /// Set (e.g. by a signal handler) to stop accepting; checked every 500 ms.
  const std::atomic<bool>* stop = nullptr;
  /// How long shutdown waits for running sessions.
  std::chrono::milliseconds shutdown_wait{10000};
  /// A connection beyond max_connections: finished (its hello) and handed to
  /// this on a thread of its own so the client hears why (rcpd answers its
  /// OPEN with "busy"); at most kMaxRefusing at once, beyond that they are
  /// just closed. Unset: closed at once.
  SessionHandler on_full;
};
constexpr uint32_t kMaxRefusing = 8;


/// Serves connections from `listeners` until *cfg.stop, then waits for the
/// sessions (up to cfg.shutdown_wait). Fails only when it cannot start.
Status run_server(std::vector<std::unique_ptr<Listener>> listeners, const ServerConfig& cfg, SessionHandler handler);

}  // namespace rcp
