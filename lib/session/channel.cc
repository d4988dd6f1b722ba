#include "session/channel.h"

#include <sys/epoll.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/core.h>

#include "util/fd.h"
#include "util/log.h"
#include "util/test_faults.h"

namespace rcp {

using wire::Message;

namespace {
uint32_t get_len(const std::vector<uint8_t>& b) {
  return (uint32_t{b[8]} << 24) | (uint32_t{b[9]} << 16) | (uint32_t{b[10]} << 8) | uint32_t{b[11]};
}
void put_len(std::vector<uint8_t>& b, uint32_t v) {
  b[8] = static_cast<uint8_t>(v >> 24);
  b[9] = static_cast<uint8_t>(v >> 16);
  b[10] = static_cast<uint8_t>(v >> 8);
  b[11] = static_cast<uint8_t>(v);
}
}  // namespace

Channel::~Channel() = default;

void Channel::enable_mac(auth::Role self, const auth::SessionKeys& keys) {
  mac_ = std::make_unique<auth::MessageMac>(self, keys);
}

Status Channel::send(const Message& m) {
  std::vector<uint8_t>& buf = tx_;
  buf.clear();
  RCP_TRY(wire::encode(m, buf));
  log_debug("send {} to {}", wire::type_name(wire::type_of(m)), t_.peer());
  if (mac_) {
    if (buf.size() + auth::kTagSize > wire::max_message(wire::type_of(m)))
      return make_error(EMSGSIZE, fmt::format("{} too long to seal ({} bytes)", wire::type_name(wire::type_of(m)), buf.size()));
    put_len(buf, get_len(buf) + static_cast<uint32_t>(auth::kTagSize));
    const auth::Tag tag = mac_->seal(buf);
    // Test only: a man in the middle flipping a bit of the N-th sealed message
    // after it was sealed (the last payload byte: the name of a FILE_BEGIN).
    if (static_cast<int64_t>(sealed_sent_++) == test_faults().tamper_control && buf.size() > wire::kHeaderSize)
      buf.back() ^= 0x01;
    buf.insert(buf.end(), tag.begin(), tag.end());
  }
  return t_.send(buf);
}

Status Channel::send_auth(const wire::AuthMessage& m) {
  std::vector<uint8_t> buf;
  RCP_TRY(wire::encode_auth(m, buf));
  log_debug("send {} to {}", wire::auth_type_name(wire::auth_type_of(m)), t_.peer());
  return t_.send(buf);
}

Status Channel::open_sealed(TransportEvent& e) {
  if (!mac_ || e.kind != TransportEvent::Kind::message) return {};
  auto& b = e.message;
  if (b.size() < wire::kHeaderSize + auth::kTagSize || get_len(b) < auth::kTagSize)
    return make_error(EBADMSG, fmt::format("{}: control message without its MAC on an authenticated session", t_.peer()));
  const size_t n = b.size() - auth::kTagSize;
  if (Status s = mac_->open({b.data(), n}, {b.data() + n, auth::kTagSize}); !s.ok())
    return make_error(EBADMSG, fmt::format("{}: control message failed its MAC check (altered, replayed or "
                                           "reordered in transit); session refused", t_.peer()));
  b.resize(n);
  put_len(b, get_len(b) - static_cast<uint32_t>(auth::kTagSize));
  return {};
}

Status Channel::poll(std::vector<TransportEvent>& out) {
  const size_t first = out.size();
  if (!backlog_.empty()) {
    for (auto& e : backlog_) out.push_back(std::move(e));
    backlog_.clear();
  }
  RCP_TRY(t_.poll(out));
  for (size_t i = first; i < out.size(); ++i) RCP_TRY(open_sealed(out[i]));
  return {};
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

Status Channel::start_sending() { return t_.poll(backlog_); }

Result<std::vector<uint8_t>> Channel::receive_frame(int timeout_ms, const std::atomic<bool>* cancel) {
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
      // (No read is issued before the transfer, so no transport reports one
      // here; were it to, its empty message fails the decode that follows.)
      RCP_TRY(open_sealed(e));
      return std::move(e.message);
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

Result<Message> Channel::receive(int timeout_ms, const std::atomic<bool>* cancel) {
  RCP_ASSIGN(std::vector<uint8_t> frame, receive_frame(timeout_ms, cancel));
  auto m = wire::decode(frame);
  if (!m.ok()) return make_error(m.error().code, "from " + t_.peer() + ": " + m.error().context);
  if (auto* em = std::get_if<wire::ErrorMsg>(&m.value())) return make_error(em->err, t_.peer() + ": " + em->message);
  return m;
}
}  // namespace rcp
