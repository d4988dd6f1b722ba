/// The daemon's accept loop, transport-neutral: one epoll over the
/// listeners' fds; each connection taken is finished (its hello) and served
/// on a thread of its own, so a slow or hostile client costs only its
/// thread; on stop, it waits a bounded time for running sessions. What a
/// session does is the caller's handler — rcpd passes its OPEN/put/get
/// dispatch — so this loop knows nothing of files.
///
/// What a connection may hold, and why (the numbers are the defaults):
/// - max_connections (64) counts every connection: sessions, streams and
///   queue pairs that joined one (Listener::joined()), and handshakes still
///   in progress. Beyond it a new connection is refused — unless some of
///   them are pending handshakes: then the oldest pending one is evicted,
///   because a connection that has not finished its hello has shown nothing
///   and a legitimate client must not be locked out by idle sockets.
/// - max_pending (64) handshakes in progress at once, counted on their own:
///   when full, a new connection evicts the oldest pending one (cancelled,
///   its thread ends within 100 ms). Each hello also has a whole-hello
///   deadline (ListenerConfig::tcp_hello_ms, 5 s), so a slow-loris peer
///   holds a slot for at most 5 s, and only until 64 newer connections came.
///   Worst case 64 sockets (+1 while an evicted one closes) and as many
///   threads, whatever peers do; an attacker who opens connections faster
///   than a legitimate hello completes (a few ms) can still evict it.
/// - max_per_host (8) sessions and pending handshakes from one peer address
///   (joined streams are bounded by their session's announced count, ≤16):
///   one host cannot take every slot, nor evict every pending handshake.
/// - Refusals, evictions and failed hellos are logged at most once per peer
///   address and reason per refusal_log_interval (10 s), with the number
///   left unlogged, so a flood cannot flood the log.
/// - accept() out of descriptors (EMFILE/ENFILE): the listener is taken out
///   of the epoll set for accept_backoff (100 ms) instead of spinning on a
///   socket that stays readable, the oldest pending handshake is evicted to
///   free a descriptor; logged once per refusal_log_interval, not per try.
/// - Memory: when the loop has been idle for 500 ms after any connection's
///   thread ended, the heap's free pages go back to the kernel
///   (util/heap.h), so a flood of handshakes does not leave the daemon
///   holding what its threads freed (limits suite: +12.6 MiB stayed without).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/listener.h"
#include "util/result.h"

namespace rcp {

/// Runs one session: called on the session's thread with its transport.
using SessionHandler = std::function<void(Transport&)>;
/// Tells a refused connection why (the text of its ERROR).
using RefusalHandler = std::function<void(Transport&, const std::string& why)>;

struct ServerConfig {
  uint32_t max_connections = 64;
  uint32_t max_per_host = 8;  ///< 0: no per-address limit
  /// 64, not fewer: legitimate bursts are that wide — two clients starting
  /// --streams 16 copies at once open 32 connections, and 24 clients pulling
  /// at once under ASan (hellos of tens of ms) had the oldest evicted at 16.
  uint32_t max_pending = 64;
  /// Set (e.g. by a signal handler) to stop accepting; checked every 500 ms.
  const std::atomic<bool>* stop = nullptr;
  /// How long shutdown waits for running sessions.
  std::chrono::milliseconds shutdown_wait{10000};
  /// A connection beyond max_connections: finished (its hello) and handed to
  /// this with the reason, on a thread of its own, so
  /// the client hears why (rcpd answers its OPEN with "busy"); at most
  /// kMaxRefusing at once, beyond that they are just closed. Unset: closed.
  /// (Beyond max_per_host a connection is closed at once: one address
  /// flooding should cost the daemon nothing.)
  RefusalHandler on_refused;
  std::chrono::milliseconds refusal_log_interval{10000};
  std::chrono::milliseconds accept_backoff{100};
};
constexpr uint32_t kMaxRefusing = 8;


/// Serves connections from `listeners` until *cfg.stop, then waits for the
/// sessions (up to cfg.shutdown_wait). Fails only when it cannot start.
Status run_server(std::vector<std::unique_ptr<Listener>> listeners, const ServerConfig& cfg, SessionHandler handler);

/// The address part of a peer as listeners name it ("1.2.3.4:5" → "1.2.3.4",
/// "[::1]:5" and "::1:5" → "::1"): what max_per_host counts.
std::string peer_host(const std::string& peer);

/// Decides which of a stream of repeated log lines to write: the first for
/// a key, then at most one per interval, each saying how many were dropped
/// since. Not thread-safe (the caller locks). Bounded: keys idle for an
/// interval are forgotten once it holds more than 1024 (all of them past 4096).
class LogLimiter {
 public:
  explicit LogLimiter(std::chrono::milliseconds interval) : interval_(interval) {}
  /// True if the line for `key` should be written now; `suppressed` is then
  /// how many were dropped since the last one written.
  bool allow(const std::string& key, std::chrono::steady_clock::time_point now, uint64_t& suppressed);
  size_t size() const { return keys_.size(); }

 private:
  struct Entry {
    std::chrono::steady_clock::time_point last;
    uint64_t dropped = 0;
  };
  std::chrono::milliseconds interval_;
  std::unordered_map<std::string, Entry> keys_;
};

}  // namespace rcp
