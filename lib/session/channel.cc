#include "session/channel.h"

#include <sys/epoll.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "util/fd.h"
#include "util/log.h"

namespace rcp {

using wire::Message;

Status Channel::send(const Message& m) {
  std::vector<uint8_t> buf;
  RCP_TRY(wire::encode(m, buf));
  log_debug("send {} to {}", wire::type_name(wire::type_of(m)), t_.peer());
  return t_.send(buf);
}

Status Channel::poll(std::vector<TransportEvent>& out) {
  if (!backlog_.empty()) {
    for (auto& e : backlog_) out.push_back(std::move(e));
    backlog_.clear();
  }
  return t_.poll(out);
}

void Channel::flush(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::vector<TransportEvent> ev;
  while (t_.send_pending() && std::chrono::steady_clock::now() < deadline) {
    ev.clear();
    if (!t_.poll(ev).ok()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

Result<Message> Channel::receive(int timeout_ms, const std::atomic<bool>* cancel) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  Fd ep(::epoll_create1(EPOLL_CLOEXEC));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ::epoll_ctl(ep.get(), EPOLL_CTL_ADD, t_.wait_fd(), &ev);
  for (;;) {
    if (backlog_.empty()) RCP_TRY(t_.poll(backlog_));
    if (!backlog_.empty()) {
      TransportEvent e = std::move(backlog_.front());
      backlog_.erase(backlog_.begin());
      if (e.kind == TransportEvent::Kind::closed) return make_error(e.status, e.detail);
      if (e.kind != TransportEvent::Kind::message)
        return make_error(EPROTO, "unexpected read completion before the transfer started");
      auto m = wire::decode(e.message);
      if (!m.ok()) return make_error(m.error().code, "from " + t_.peer() + ": " + m.error().context);
      if (auto* em = std::get_if<wire::ErrorMsg>(&m.value()))
        return make_error(em->err, t_.peer() + ": " + em->message);
      return m;
    }
    if (cancel && cancel->load()) return make_error(EINTR, "interrupted");
    RCP_TRY(t_.arm());
    RCP_TRY(t_.poll(backlog_));
    if (!backlog_.empty()) continue;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return make_error(ETIMEDOUT, "no answer from " + t_.peer());
    epoll_event out;
    ::epoll_wait(ep.get(), &out, 1, static_cast<int>(std::min<long>(left, 200)));
  }
}
}  // namespace rcp
