#include "daemon/server.h"

#include <sys/epoll.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "util/fd.h"
#include "util/log.h"

namespace rcp {
namespace {

/// Sessions running, shared with their threads so it outlives the loop even
/// if a session outlives the shutdown wait.
struct Active {
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<uint32_t> n{0};
};

/// Runs fn on its own thread, counted so shutdown can wait for it.
template <typename F>
void spawn(const std::shared_ptr<Active>& active, F fn) {
  active->n++;
  std::thread([active, fn = std::move(fn)]() mutable {
    fn();
    std::lock_guard lk(active->mu);
    active->n--;
    active->cv.notify_all();
  }).detach();
}

}  // namespace

Status run_server(std::vector<std::unique_ptr<Listener>> listeners, const ServerConfig& cfg, SessionHandler handler) {
  Fd ep(::epoll_create1(EPOLL_CLOEXEC));
  if (!ep.valid()) return sys_error("epoll_create1");
  for (uint32_t i = 0; i < listeners.size(); ++i) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = i;
    if (::epoll_ctl(ep.get(), EPOLL_CTL_ADD, listeners[i]->fd(), &ev) != 0) return sys_error("epoll_ctl listener");
  }
  auto active = std::make_shared<Active>();
  auto refusing = std::make_shared<Active>();
  auto on_full = std::make_shared<SessionHandler>(cfg.on_full);
  auto shared_handler = std::make_shared<SessionHandler>(std::move(handler));
  while (!(cfg.stop && *cfg.stop)) {
    epoll_event out[4];
    int n = ::epoll_wait(ep.get(), out, 4, 500);
    for (int i = 0; i < n; ++i) {
      Listener& l = *listeners[out[i].data.u32];
      auto in = l.accept();
      if (!in.ok()) {
        log_error("{}", in.error().message());
        continue;
      }
      if (!in.value()) continue;
      const std::string kind = l.kind();
      if (active->n >= cfg.max_connections) {
        // The same lines rcpd has always logged for each transport.
        if (kind == "tcp")
          log_error("refusing a TCP connection: {} connections already", active->n.load());
        else
          log_error("refusing {}: {} connections already", in.value()->peer(), active->n.load());
        if (*on_full && refusing->n < kMaxRefusing) {
          std::shared_ptr<Incoming> incoming(std::move(in.value()));
          spawn(refusing, [incoming, on_full]() {
            auto t = incoming->finish();
            if (t.ok() && t.value()) (*on_full)(*t.value());
          });
        }
        continue;
      }
      std::shared_ptr<Incoming> incoming(std::move(in.value()));
      spawn(active, [incoming, kind, shared_handler]() {
        auto t = incoming->finish();
        if (!t.ok()) {
          log_error("{} connection from {} refused: {}", kind, incoming->peer(), t.error().message());
          return;
        }
        if (!t.value()) return;  // an extra stream or queue pair, now owned by its session
        (*shared_handler)(*t.value());
      });
    }
  }
  log_info("shutting down; waiting for {} session(s)", active->n.load());
  std::unique_lock lk(active->mu);
  active->cv.wait_for(lk, cfg.shutdown_wait, [&] { return active->n == 0; });
  lk.unlock();
  std::unique_lock lk2(refusing->mu);
  refusing->cv.wait_for(lk2, std::chrono::milliseconds(3000), [&] { return refusing->n == 0; });
  return {};
}

}  // namespace rcp
