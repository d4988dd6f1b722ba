#include "daemon/server.h"

#include <sys/epoll.h>

#include <algorithm>
#include <condition_variable>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "util/fd.h"
#include "util/heap.h"
#include "util/log.h"

namespace rcp {

std::string peer_host(const std::string& peer) {
  std::string h = peer;
  if (auto c = h.rfind(':'); c != std::string::npos) h.resize(c);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  return h;
}

bool LogLimiter::allow(const std::string& key, std::chrono::steady_clock::time_point now, uint64_t& suppressed) {
  if (keys_.size() > 1024) {
    std::erase_if(keys_, [&](const auto& kv) { return now - kv.second.last >= interval_; });
    // Still more: thousands of addresses within one interval. Forget them
    // all (they may each log once more) rather than grow without bound.
    if (keys_.size() > 4096) keys_.clear();
  }
  auto [it, fresh] = keys_.try_emplace(key);
  Entry& e = it->second;
  if (!fresh && now - e.last < interval_) {
    ++e.dropped;
    return false;
  }
  suppressed = e.dropped;
  e.dropped = 0;
  e.last = now;
  return true;
}

namespace {

using Clock = std::chrono::steady_clock;

/// A connection whose handshake runs on its thread.
struct Pending {
  std::shared_ptr<Incoming> in;
  std::string host;
  Clock::time_point since;
  bool evicted = false;  ///< its counts were released when it was evicted
};

/// What the loop and the session threads share; it outlives the loop if a
/// session outlives the shutdown wait.
struct State {
  explicit State(std::chrono::milliseconds log_interval) : limiter(log_interval) {}
  std::mutex mu;
  std::condition_variable cv;
  uint32_t threads = 0;   ///< session threads running (shutdown waits for them)
  uint32_t refusing = 0;  ///< connections over the limit being told "busy"
  uint32_t sessions = 0;  ///< connections past their handshake, serving a session
  bool ended = false;     ///< a connection's thread ended since the heap was last trimmed
  std::list<std::shared_ptr<Pending>> pending;  ///< oldest first
  std::unordered_map<std::string, uint32_t> per_host;  ///< sessions + pending, by peer address
  LogLimiter limiter;

  void host_add(const std::string& h) { ++per_host[h]; }
  void host_release(const std::string& h) {
    auto it = per_host.find(h);
    if (it != per_host.end() && --it->second == 0) per_host.erase(it);
  }
  /// Logs an error line at most once per key per interval (caller holds mu).
  template <typename... Args>
  void limited(const std::string& key, fmt::format_string<Args...> f, Args&&... args) {
    uint64_t dropped = 0;
    if (!limiter.allow(key, Clock::now(), dropped)) return;
    std::string line = fmt::format(f, std::forward<Args>(args)...);
    if (dropped) line += fmt::format(" ({} more like it not logged)", dropped);
    log_error("{}", line);
  }
  /// Cancels the oldest pending handshake and releases its counts now (its
  /// thread closes the socket within 100 ms). Caller holds mu.
  bool evict_oldest(const char* why) {
    if (pending.empty()) return false;
    auto p = pending.front();
    pending.pop_front();
    p->evicted = true;
    host_release(p->host);
    p->in->cancel();
    const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - p->since).count();
    limited("evict " + p->host, "evicting a pending handshake from {} ({} ms old, no hello yet): {}", p->in->peer(),
            age, why);
    return true;
  }
};

}  // namespace

Status run_server(std::vector<std::unique_ptr<Listener>> listeners, const ServerConfig& cfg, SessionHandler handler) {
  Fd ep(::epoll_create1(EPOLL_CLOEXEC));
  if (!ep.valid()) return sys_error("epoll_create1");
  auto watch = [&](uint32_t i, int op) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = i;
    return ::epoll_ctl(ep.get(), op, listeners[i]->fd(), &ev);
  };
  for (uint32_t i = 0; i < listeners.size(); ++i)
    if (watch(i, EPOLL_CTL_ADD) != 0) return sys_error("epoll_ctl listener");
  auto st = std::make_shared<State>(cfg.refusal_log_interval);
  auto shared_handler = std::make_shared<SessionHandler>(std::move(handler));
  auto on_refused = std::make_shared<RefusalHandler>(cfg.on_refused);
  // A refused connection is told why (its OPEN is answered "busy") on a
  // thread of its own, at most kMaxRefusing at once; beyond that just closed.
  // Caller holds st->mu.
  auto tell = [&](const std::shared_ptr<Pending>& p, std::string why) {
    if (!*on_refused || st->refusing >= kMaxRefusing) return;
    ++st->refusing;
    ++st->threads;
    std::thread([st, p, on_refused, why = std::move(why)]() {
      auto t = p->in->finish();
      if (t.ok() && t.value()) (*on_refused)(*t.value(), why);
      if (t.ok()) t.value().reset();
      std::lock_guard lk(st->mu);
      --st->refusing;
      --st->threads;
      st->ended = true;
      st->cv.notify_all();
    }).detach();
  };
  const uint32_t max_conn = std::max<uint32_t>(1, cfg.max_connections);
  const uint32_t max_pending = std::clamp<uint32_t>(cfg.max_pending, 1, max_conn);
  const uint32_t max_host = cfg.max_per_host ? cfg.max_per_host : UINT32_MAX;
  // Listeners out of the epoll set after EMFILE, and when they come back.
  std::vector<Clock::time_point> resume(listeners.size());
  std::vector<bool> paused(listeners.size(), false);

  while (!(cfg.stop && *cfg.stop)) {
    int timeout = 500;
    const auto now = Clock::now();
    for (uint32_t i = 0; i < listeners.size(); ++i) {
      if (!paused[i]) continue;
      if (now >= resume[i]) {
        paused[i] = false;
        if (watch(i, EPOLL_CTL_ADD) != 0) log_error("epoll_ctl: re-adding listener: {}", std::strerror(errno));
      } else {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(resume[i] - now).count() + 1;
        timeout = std::min<int>(timeout, static_cast<int>(left));
      }
    }
    epoll_event out[4];
    int n = ::epoll_wait(ep.get(), out, 4, timeout);
    for (int i = 0; i < n; ++i) {
      const uint32_t li = out[i].data.u32;
      if (paused[li]) continue;
      Listener& l = *listeners[li];
      auto in = l.accept();
      if (!in.ok()) {
        const int code = in.error().code;
        std::lock_guard lk(st->mu);
        if (code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM) {
          // The connection stays queued and the fd readable: stop polling it
          // for a while rather than spin, and free a descriptor if a pending
          // handshake holds one.
          paused[li] = true;
          resume[li] = Clock::now() + cfg.accept_backoff;
          ::epoll_ctl(ep.get(), EPOLL_CTL_DEL, l.fd(), nullptr);
          uint64_t dropped = 0;
          if (st->limiter.allow(std::string("accept ") + l.kind(), Clock::now(), dropped))
            log_error("{}: not accepting for {} ms at a time until descriptors free up{}", in.error().message(),
                      cfg.accept_backoff.count(),
                      dropped ? fmt::format(" ({} more back-offs not logged)", dropped) : std::string());
          st->evict_oldest("out of file descriptors");
        } else {
          st->limited(std::string("accept ") + l.kind() + " " + std::to_string(code), "{}", in.error().message());
        }
        continue;
      }
      if (!in.value()) continue;
      const std::string kind = l.kind();
      auto p = std::make_shared<Pending>();
      p->in = std::shared_ptr<Incoming>(std::move(in.value()));
      p->host = peer_host(p->in->peer());
      p->since = Clock::now();
      {
        std::lock_guard lk(st->mu);
        uint32_t joined = 0;
        for (auto& li2 : listeners) joined += li2->joined();
        auto hit = st->per_host.find(p->host);
        const uint32_t from_host = hit == st->per_host.end() ? 0 : hit->second;
        if (from_host >= max_host) {
          st->limited("host " + p->host, "refusing {} connections from {}: it has {} already (max_per_host {})", kind,
                      p->host, from_host, max_host);
          continue;  // p (and its socket) goes now
        }
        const uint32_t total = st->sessions + joined + static_cast<uint32_t>(st->pending.size());
        if (total >= max_conn && !st->evict_oldest("connection limit reached")) {
          st->limited("full " + p->host, "refusing a {} connection from {}: {} connections already (max_connections {})",
                      kind, p->host, total, max_conn);
          tell(p, fmt::format("the daemon is busy: it serves at most {} connections at once "
                              "(max_connections); try again later", max_conn));
          continue;
        }
        if (st->pending.size() >= max_pending) st->evict_oldest("too many handshakes in progress");
        st->pending.push_back(p);
        st->host_add(p->host);
        ++st->threads;
      }
      std::thread([st, p, kind, shared_handler]() {
        auto t = p->in->finish();
        bool serve = false;
        {
          std::lock_guard lk(st->mu);
          if (!p->evicted) {
            st->pending.remove(p);
          } else if (t.ok() && t.value()) {
            st->host_add(p->host);  // finished after all: count it again as the session it is
          }
          if (t.ok() && t.value()) {
            ++st->sessions;
            serve = true;
          } else {
            if (!p->evicted) st->host_release(p->host);
            if (!t.ok() && !p->evicted) {
              // One line per peer address and kind of failure (digits, such
              // as the peer's port, do not make a failure new).
              std::string key = "hello " + p->host + " " + t.error().message();
              std::erase_if(key, [](char c) { return c >= '0' && c <= '9'; });
              st->limited(key, "{} connection from {} refused: {}", kind, p->in->peer(), t.error().message());
            }
          }
        }
        // (nullptr without error: an extra stream or queue pair, now owned by its session)
        if (serve) (*shared_handler)(*t.value());
        if (t.ok()) t.value().reset();  // the session's connection closes before it stops counting
        std::lock_guard lk(st->mu);
        if (serve) {
          --st->sessions;
          st->host_release(p->host);
        }
        --st->threads;
        st->ended = true;
        st->cv.notify_all();
      }).detach();
    }
    if (n == 0) {
      // Idle for 500 ms: what ended threads freed goes back to the kernel
      // (util/heap.h: up to 12.6 MiB stayed resident after a handshake
      // flood). Outside the lock; at most once per idle period.
      bool trim;
      {
        std::lock_guard lk(st->mu);
        trim = std::exchange(st->ended, false);
      }
      if (trim) release_free_heap();
    }
  }
  std::unique_lock lk(st->mu);
  for (auto& p : st->pending) p->in->cancel();
  log_info("shutting down; waiting for {} session(s)", st->threads);
  st->cv.wait_for(lk, cfg.shutdown_wait, [&] { return st->threads == 0; });
  return {};
}

}  // namespace rcp
