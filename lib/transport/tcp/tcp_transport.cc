#include "transport/tcp/tcp_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <fmt/core.h>
#include <unordered_map>

#include "hash/digest.h"
#include "util/log.h"
#include "wire/codec.h"

namespace rcp {
namespace {

constexpr size_t kFrameHeader = 16;  // kind u8, pad u8, pad u16, len u32, cookie u64
enum FrameKind : uint8_t { kMsg = 1, kReadReq = 2, kReadResp = 3, kReadErr = 4 };

std::string addr_string(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (sa->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    port = ntohs(in->sin_port);
    return fmt::format("{}:{}", buf, port);
  }
  if (sa->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
    port = ntohs(in6->sin6_port);
  }
  return fmt::format("[{}]:{}", buf, port);
}

/// Blocking exact read/write with a deadline, for the hello only.
Status io_exact(int fd, uint8_t* p, size_t n, bool writing, int timeout_ms, const std::string& peer) {
  size_t done = 0;
  while (done < n) {
    pollfd pfd{fd, static_cast<short>(writing ? POLLOUT : POLLIN), 0};
    int pr = ::poll(&pfd, 1, timeout_ms);
    if (pr == 0) return make_error(ETIMEDOUT, "hello with " + peer);
    if (pr < 0) {
      if (errno == EINTR) continue;
      return sys_error("poll " + peer);
    }
    ssize_t r = writing ? ::send(fd, p + done, n - done, MSG_NOSIGNAL) : ::recv(fd, p + done, n - done, 0);
    if (r == 0) return make_error(ECONNRESET, "peer " + peer + " closed the connection during the hello");
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return sys_error("hello with " + peer);
    }
    done += static_cast<size_t>(r);
  }
  return {};
}

struct Region {
  uint8_t* base;
  size_t len;
  bool remote_read;
};

struct PendingRead {
  std::vector<Sge> sges;
  uint32_t length = 0;
};

struct OutItem {
  std::vector<uint8_t> head;  // frame header (+ small payload)
  const uint8_t* data = nullptr;
  size_t data_len = 0;
  size_t sent = 0;  // of head.size() + data_len
};

class TcpTransport final : public Transport {
 public:
  TcpTransport(Fd sock, std::string peer, Negotiated n) : sock_(std::move(sock)), peer_(std::move(peer)), neg_(n) {}

  Status init() {
    int flags = ::fcntl(sock_.get(), F_GETFL);
    if (flags < 0 || ::fcntl(sock_.get(), F_SETFL, flags | O_NONBLOCK) < 0) return sys_error("fcntl " + peer_);
    int ep = ::epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) return sys_error("epoll_create1");
    ep_.reset(ep);
    epoll_event ev{};
    ev.events = EPOLLIN;
    if (::epoll_ctl(ep_.get(), EPOLL_CTL_ADD, sock_.get(), &ev) < 0) return sys_error("epoll_ctl");
    rx_.resize(64 * 1024);
    return {};
  }

  std::string name() const override { return "tcp"; }
  std::string peer() const override { return peer_; }
  const Negotiated& negotiated() const override { return neg_; }

  Result<uint32_t> register_memory(void* base, size_t len, bool remote_read) override {
    regions_.push_back({static_cast<uint8_t*>(base), len, remote_read});
    return static_cast<uint32_t>(regions_.size());  // key = index + 1; 0 is never valid
  }

  void deregister_memory(uint32_t key) override {
    if (key >= 1 && key <= regions_.size()) regions_[key - 1] = {nullptr, 0, false};
  }

  Status send(std::span<const uint8_t> message) override {
    OutItem it;
    frame_header(it.head, kMsg, static_cast<uint32_t>(message.size()), 0);
    it.head.insert(it.head.end(), message.begin(), message.end());
    out_.push_back(std::move(it));
    return flush();
  }

  Status read(uint64_t cookie, uint32_t rkey, std::span<const ReadWr> wrs) override {
    if (wrs.empty()) return make_error(EINVAL, "empty read");
    PendingRead pr;
    for (const auto& wr : wrs) {
      pr.sges.insert(pr.sges.end(), wr.sges.begin(), wr.sges.end());
      pr.length += wr.length;
    }
    OutItem it;
    frame_header(it.head, kReadReq, 16, cookie);
    wire::Writer w(it.head);
    w.u64(wrs.front().remote_addr);
    w.u32(rkey);
    w.u32(pr.length);
    if (!reads_.emplace(cookie, std::move(pr)).second) return make_error(EINVAL, "duplicate read cookie");
    out_.push_back(std::move(it));
    return flush();
  }

  uint32_t read_capacity() const override {
    return reads_.size() >= neg_.reads_in_flight ? 0 : neg_.reads_in_flight - static_cast<uint32_t>(reads_.size());
  }

  int wait_fd() const override { return ep_.get(); }

  Status arm() override {
    epoll_event ev{};
    ev.events = EPOLLIN | (out_.empty() ? 0u : static_cast<uint32_t>(EPOLLOUT));
    if (ev.events != armed_) {
      if (::epoll_ctl(ep_.get(), EPOLL_CTL_MOD, sock_.get(), &ev) < 0) return sys_error("epoll_ctl");
      armed_ = ev.events;
    }
    return {};
  }

  bool send_pending() const override { return !out_.empty(); }

  Status poll(std::vector<TransportEvent>& events) override {
    if (closed_) return {};
    Status st = flush();
    if (!st.ok()) return close_with(events, st.error().message());
    for (int round = 0; round < 64; ++round) {
      // Receive straight into a pending read's scatter list when one is being filled.
      if (cur_read_) {
        Status rs = recv_into_read(events);
        if (!rs.ok()) return close_with(events, rs.error().message());
        if (cur_read_) break;  // would block
        continue;
      }
      if (rx_len_ - rx_pos_ < kFrameHeader || (need_ > 0 && rx_len_ - rx_pos_ < kFrameHeader + need_)) {
        if (rx_pos_ > 0) {
          std::memmove(rx_.data(), rx_.data() + rx_pos_, rx_len_ - rx_pos_);
          rx_len_ -= rx_pos_;
          rx_pos_ = 0;
        }
        ssize_t r = ::recv(sock_.get(), rx_.data() + rx_len_, rx_.size() - rx_len_, 0);
        if (r == 0) return close_with(events, "peer " + peer_ + " closed the connection");
        if (r < 0) {
          if (errno == EAGAIN || errno == EINTR) break;
          return close_with(events, fmt::format("receive from {}: {}", peer_, std::strerror(errno)));
        }
        rx_len_ += static_cast<size_t>(r);
        continue;
      }
      Status fs = parse_frame(events);
      if (!fs.ok()) return close_with(events, fs.error().message());
    }
    st = flush();
    if (!st.ok()) return close_with(events, st.error().message());
    return {};
  }

 private:
  static void frame_header(std::vector<uint8_t>& out, uint8_t kind, uint32_t len, uint64_t cookie) {
    wire::Writer w(out);
    w.u8(kind);
    w.u8(0);
    w.u16(0);
    w.u32(len);
    w.u64(cookie);
  }

  Status close_with(std::vector<TransportEvent>& events, std::string why) {
    if (closed_) return {};
    closed_ = true;
    TransportEvent ev;
    ev.kind = TransportEvent::Kind::closed;
    ev.status = ECONNRESET;
    ev.detail = std::move(why);
    events.push_back(std::move(ev));
    for (auto& [cookie, pr] : reads_) {
      TransportEvent rf;
      rf.kind = TransportEvent::Kind::read_done;
      rf.cookie = cookie;
      rf.status = ECONNRESET;
      rf.detail = "connection lost";
      events.push_back(std::move(rf));
    }
    reads_.clear();
    cur_read_ = nullptr;
    out_.clear();
    return {};
  }

  /// Parses one complete-or-partial frame at rx_pos_. need_ records the
  /// payload length still to be buffered for MSG/READ_REQ frames.
  Status parse_frame(std::vector<TransportEvent>& events) {
    wire::Reader r({rx_.data() + rx_pos_, kFrameHeader});
    const uint8_t kind = r.u8();
    r.u8();
    r.u16();
    const uint32_t len = r.u32();
    const uint64_t cookie = r.u64();
    switch (kind) {
      case kMsg: {
        if (len < wire::kHeaderSize || len > wire::kMaxMessage)
          return make_error(EPROTO, fmt::format("{} sent a control frame of {} bytes", peer_, len));
        if (rx_len_ - rx_pos_ < kFrameHeader + len) {
          need_ = len;
          return {};
        }
        TransportEvent ev;
        ev.kind = TransportEvent::Kind::message;
        const uint8_t* p = rx_.data() + rx_pos_ + kFrameHeader;
        ev.message.assign(p, p + len);
        events.push_back(std::move(ev));
        rx_pos_ += kFrameHeader + len;
        need_ = 0;
        return {};
      }
      case kReadReq: {
        if (len != 16) return make_error(EPROTO, fmt::format("{} sent a read request of {} bytes", peer_, len));
        if (rx_len_ - rx_pos_ < kFrameHeader + len) {
          need_ = len;
          return {};
        }
        wire::Reader q({rx_.data() + rx_pos_ + kFrameHeader, 16});
        const uint64_t addr = q.u64();
        const uint32_t key = q.u32();
        const uint32_t rlen = q.u32();
        rx_pos_ += kFrameHeader + len;
        need_ = 0;
        serve_read(cookie, addr, key, rlen);
        return {};
      }
      case kReadResp: {
        auto it = reads_.find(cookie);
        if (it == reads_.end() || it->second.length != len)
          return make_error(EPROTO, fmt::format("{} sent {} bytes for a read that was not asked for", peer_, len));
        rx_pos_ += kFrameHeader;
        need_ = 0;
        cur_cookie_ = cookie;
        cur_read_ = &it->second;
        cur_done_ = 0;
        return recv_into_read(events);
      }
      case kReadErr: {
        auto it = reads_.find(cookie);
        if (it == reads_.end()) return make_error(EPROTO, fmt::format("{} refused a read that was not asked for", peer_));
        rx_pos_ += kFrameHeader;
        reads_.erase(it);
        TransportEvent ev;
        ev.kind = TransportEvent::Kind::read_done;
        ev.cookie = cookie;
        ev.status = EACCES;
        ev.detail = "peer refused the read (range outside its registered memory)";
        events.push_back(std::move(ev));
        return {};
      }
      default: return make_error(EPROTO, fmt::format("{} sent an unknown frame kind {}", peer_, kind));
    }
  }

  /// Moves bytes for the current READ_RESP, first from what is buffered,
  /// then straight from the socket into the scatter list.
  Status recv_into_read(std::vector<TransportEvent>& events) {
    PendingRead& pr = *cur_read_;
    while (cur_done_ < pr.length) {
      // Locate the SGE holding byte cur_done_.
      size_t idx = 0;
      uint32_t base = 0;
      while (base + pr.sges[idx].length <= cur_done_) base += pr.sges[idx++].length;
      const uint32_t in_sge = cur_done_ - base;
      if (rx_pos_ < rx_len_) {
        size_t n = std::min<size_t>(rx_len_ - rx_pos_, pr.sges[idx].length - in_sge);
        std::memcpy(reinterpret_cast<uint8_t*>(pr.sges[idx].addr) + in_sge, rx_.data() + rx_pos_, n);
        rx_pos_ += n;
        cur_done_ += static_cast<uint32_t>(n);
        continue;
      }
      iovec iov[64];
      int n = 0;
      iov[n].iov_base = reinterpret_cast<uint8_t*>(pr.sges[idx].addr) + in_sge;
      iov[n++].iov_len = pr.sges[idx].length - in_sge;
      for (size_t k = idx + 1; k < pr.sges.size() && n < 64; ++k) {
        iov[n].iov_base = reinterpret_cast<void*>(pr.sges[k].addr);
        iov[n++].iov_len = pr.sges[k].length;
      }
      ssize_t r = ::readv(sock_.get(), iov, n);
      if (r == 0) return make_error(ECONNRESET, "peer " + peer_ + " closed the connection");
      if (r < 0) {
        if (errno == EAGAIN || errno == EINTR) return {};
        return sys_error("receive from " + peer_);
      }
      cur_done_ += static_cast<uint32_t>(r);
    }
    TransportEvent ev;
    ev.kind = TransportEvent::Kind::read_done;
    ev.cookie = cur_cookie_;
    events.push_back(std::move(ev));
    reads_.erase(cur_cookie_);
    cur_read_ = nullptr;
    return {};
  }

  /// Answers a READ_REQ, but only from memory this connection registered for
  /// remote reading, exactly as an RNIC validates an rkey.
  void serve_read(uint64_t cookie, uint64_t addr, uint32_t key, uint32_t len) {
    OutItem it;
    const Region* reg = (key >= 1 && key <= regions_.size()) ? &regions_[key - 1] : nullptr;
    const uint64_t base = reg ? reinterpret_cast<uint64_t>(reg->base) : 0;
    if (!reg || !reg->remote_read || len == 0 || len > wire::kMaxChunk || addr < base ||
        addr - base > reg->len || reg->len - (addr - base) < len) {
      log_error("refusing read of {} bytes at {:#x} (key {}) from {}: outside registered memory", len, addr, key, peer_);
      frame_header(it.head, kReadErr, 0, cookie);
    } else {
      frame_header(it.head, kReadResp, len, cookie);
      it.data = reinterpret_cast<const uint8_t*>(addr);
      it.data_len = len;
    }
    out_.push_back(std::move(it));
  }

  Status flush() {
    while (!out_.empty()) {
      iovec iov[64];
      int n = 0;
      for (auto it = out_.begin(); it != out_.end() && n < 62; ++it) {
        size_t skip = it == out_.begin() ? it->sent : 0;
        if (skip < it->head.size()) {
          iov[n].iov_base = it->head.data() + skip;
          iov[n++].iov_len = it->head.size() - skip;
          skip = 0;
        } else {
          skip -= it->head.size();
        }
        if (it->data_len > skip) {
          iov[n].iov_base = const_cast<uint8_t*>(it->data) + skip;
          iov[n++].iov_len = it->data_len - skip;
        }
      }
      msghdr mh{};
      mh.msg_iov = iov;
      mh.msg_iovlen = static_cast<size_t>(n);
      ssize_t w = ::sendmsg(sock_.get(), &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0) {
        if (errno == EAGAIN || errno == EINTR) return {};
        return sys_error("send to " + peer_);
      }
      size_t left = static_cast<size_t>(w);
      while (left > 0 && !out_.empty()) {
        OutItem& f = out_.front();
        size_t rem = f.head.size() + f.data_len - f.sent;
        if (left >= rem) {
          left -= rem;
          out_.pop_front();
        } else {
          f.sent += left;
          left = 0;
        }
      }
    }
    return {};
  }

  Fd sock_;
  Fd ep_;
  std::string peer_;
  Negotiated neg_;
  std::vector<Region> regions_;
  std::unordered_map<uint64_t, PendingRead> reads_;
  std::deque<OutItem> out_;
  std::vector<uint8_t> rx_;
  size_t rx_pos_ = 0, rx_len_ = 0, need_ = 0;
  PendingRead* cur_read_ = nullptr;
  uint64_t cur_cookie_ = 0;
  uint32_t cur_done_ = 0;
  uint32_t armed_ = EPOLLIN;
  bool closed_ = false;
};

wire::Hello local_hello(const TcpOptions& opt) {
  wire::Hello h;
  h.ctrl_depth = 64;  // unused on TCP (the stream has its own flow control), but must be valid
  h.rd_init = static_cast<uint16_t>(opt.reads_in_flight);
  h.rd_resp = static_cast<uint16_t>(opt.reads_in_flight);
  h.max_sge_rd = 64;
  h.checksums = supported_checksums();
  h.max_chunk = opt.max_chunk;
  return h;
}

Result<std::unique_ptr<Transport>> finish(Fd sock, const std::string& peer, const TcpOptions& opt) {
  int one = 1;
  ::setsockopt(sock.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  auto mine = wire::encode_hello(local_hello(opt));
  RCP_TRY(io_exact(sock.get(), mine.data(), mine.size(), true, opt.timeout_ms, peer));
  std::vector<uint8_t> theirs(wire::kHelloSize);
  RCP_TRY(io_exact(sock.get(), theirs.data(), theirs.size(), false, opt.timeout_ms, peer));
  auto h = wire::decode_hello(theirs);
  if (!h.ok()) return make_error(h.error().code, "hello from " + peer + ": " + h.error().context);
  Negotiated n;
  n.reads_in_flight = std::max<uint32_t>(1, std::min<uint32_t>(opt.reads_in_flight, h->rd_resp));
  n.max_sge = 64;
  n.max_chunk = h->max_chunk;
  n.checksums = static_cast<uint16_t>(h->checksums & supported_checksums());
  auto t = std::make_unique<TcpTransport>(std::move(sock), peer, n);
  RCP_TRY(t->init());
  return std::unique_ptr<Transport>(std::move(t));
}

}  // namespace

Result<std::unique_ptr<Transport>> tcp_connect(const std::string& host, uint16_t port, const TcpOptions& opt) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_family = AF_UNSPEC;
  addrinfo* res = nullptr;
  std::string ps = std::to_string(port);
  int gai = ::getaddrinfo(host.c_str(), ps.c_str(), &hints, &res);
  if (gai != 0) return make_error(EHOSTUNREACH, fmt::format("resolve '{}': {}", host, gai_strerror(gai)));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  Error last = make_error(EHOSTUNREACH, "connect to " + host);
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    Fd s(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
    if (!s.valid()) {
      last = sys_error("socket");
      continue;
    }
    std::string peer = addr_string(ai->ai_addr);
    if (::connect(s.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      last = sys_error("tcp connect to " + peer);
      continue;
    }
    return finish(std::move(s), peer, opt);
  }
  return last;
}

Result<std::unique_ptr<Transport>> tcp_accept(Fd sock, const std::string& peer, const TcpOptions& opt) {
  return finish(std::move(sock), peer, opt);
}

Result<Fd> tcp_listen(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_family = AF_UNSPEC;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  std::string ps = std::to_string(port);
  int gai = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), ps.c_str(), &hints, &res);
  if (gai != 0) return make_error(EINVAL, fmt::format("resolve listen address '{}': {}", host, gai_strerror(gai)));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  Fd s(::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return sys_error("socket");
  int one = 1;
  ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(s.get(), res->ai_addr, res->ai_addrlen) != 0)
    return sys_error(fmt::format("bind tcp {}", addr_string(res->ai_addr)));
  if (::listen(s.get(), 64) != 0) return sys_error("listen");
  return s;
}

}  // namespace rcp
