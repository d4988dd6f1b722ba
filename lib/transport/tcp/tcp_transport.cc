#include "transport/tcp/tcp_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <liburing.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <fmt/core.h>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <unordered_map>

#include "hash/digest.h"
#include "util/log.h"
#include "wire/codec.h"

namespace rcp {
namespace {

constexpr size_t kFrameHeader = 16;  // kind u8, pad u8, pad u16, len u32, cookie u64
enum FrameKind : uint8_t { kMsg = 1, kReadReq = 2, kReadResp = 3, kReadErr = 4 };
/// Hello flags: the server's hello is followed by an 8-byte session token; a
/// client's hello with kHelloJoin is followed by that token and adds a stream
/// to the session (the same bits the RDMA transport uses for extra QPs).
using wire::kHelloJoin;
using wire::kHelloToken;
constexpr size_t kRxBuffer = 256 * 1024;
constexpr int kMaxIov = 64;
/// Zero-copy pays for its page pinning and completion notification only on
/// large sends (the kernel docs suggest ≥ 10 KiB; measured here on loopback,
/// where the kernel copies anyway, it is neutral at 1 MiB).
constexpr size_t kZeroCopyMin = 64 * 1024;

std::string addr_string(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (sa->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    return fmt::format("{}:{}", buf, ntohs(in->sin_port));
  }
  if (sa->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
    return fmt::format("[{}]:{}", buf, ntohs(in6->sin6_port));
  }
  return "?";
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
  uint32_t stream = 0;
};

/// Frame header bytes, shared so that a zero-copy send can keep them alive
/// until the kernel's notification even after the item itself moved on.
using Bytes = std::shared_ptr<std::vector<uint8_t>>;

struct OutItem {
  Bytes head = std::make_shared<std::vector<uint8_t>>();  // frame header (+ small payload)
  const uint8_t* data = nullptr;
  size_t data_len = 0;
  size_t sent = 0;  // of head.size() + data_len
};

/// One TCP connection of the session and its I/O state. At most one receive
/// and one send are in flight on it, which keeps each direction in order.
struct Stream {
  Fd sock;
  std::vector<uint8_t> rx = std::vector<uint8_t>(kRxBuffer);
  size_t rx_pos = 0, rx_len = 0;
  PendingRead* cur_read = nullptr;
  uint64_t cur_cookie = 0;
  uint32_t cur_done = 0;
  iovec rx_iov[kMaxIov];
  bool recv_busy = false, eof = false;
  bool recv_into_pool = false;  // the receive in flight writes into registered pool memory
  std::deque<OutItem> out;
  std::vector<OutItem> sending;             // items of the send in flight
  // Header buffers of zero-copy sends, by send sequence, until the kernel's
  // notification says it let go of them (notifications may come out of order).
  std::unordered_map<uint64_t, std::vector<Bytes>> zc_wait;
  uint64_t send_seq = 0;
  iovec tx_iov[kMaxIov];
  msghdr mh{};
  bool send_busy = false, send_zc = false;
};

/// Sessions waiting for extra streams, by token (daemon side).
struct JoinRegistry {
  std::mutex mu;
  std::map<uint64_t, std::vector<Fd>> pending;  // token -> sockets not yet picked up
};
JoinRegistry& registry() {
  static JoinRegistry r;
  return r;
}

class TcpTransport final : public Transport {
 public:
  TcpTransport(std::string peer, Negotiated n, bool zerocopy, uint64_t token)
      : peer_(std::move(peer)), neg_(n), zerocopy_(zerocopy), token_(token) {}

  ~TcpTransport() override {
    log_debug("{}: {} read replies received with READ_FIXED", peer_, fixed_reads_);
    if (token_) {
      std::lock_guard lk(registry().mu);
      registry().pending.erase(token_);
    }
    if (ring_ok_) {
      // Sockets close before the ring so pending operations end, then the
      // ring is drained: no operation may outlive the buffers it names.
      for (auto& s : streams_) ::shutdown(s->sock.get(), SHUT_RDWR);
      io_uring_submit(&ring_);
      unsigned inflight = inflight_;
      io_uring_cqe* cqe;
      __kernel_timespec ts{1, 0};
      while (inflight > 0 && io_uring_wait_cqe_timeout(&ring_, &cqe, &ts) == 0) {
        if (!(cqe->flags & IORING_CQE_F_MORE)) --inflight;
        io_uring_cqe_seen(&ring_, cqe);
      }
      io_uring_queue_exit(&ring_);
    }
  }

  Status init(Fd first) {
    int rc = io_uring_queue_init(256, &ring_, 0);
    if (rc < 0) return make_error(-rc, "io_uring_queue_init (tcp)");
    ring_ok_ = true;
    efd_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!efd_.valid()) return sys_error("eventfd");
    rc = io_uring_register_eventfd(&ring_, efd_.get());
    if (rc < 0) return make_error(-rc, "io_uring_register_eventfd");
    if (zerocopy_) {
      io_uring_probe* p = io_uring_get_probe_ring(&ring_);
      zerocopy_ = p && io_uring_opcode_supported(p, IORING_OP_SENDMSG_ZC);
      if (p) io_uring_free_probe(p);
    }
    add_stream(std::move(first));
    return {};
  }

  void add_stream(Fd sock) {
    int one = 1;
    ::setsockopt(sock.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto s = std::make_unique<Stream>();
    s->sock = std::move(sock);
    streams_.push_back(std::move(s));
  }

  std::string name() const override { return "tcp"; }
  std::string describe() const override {
    return fmt::format("tcp: {} stream(s), {} reads in flight, zero-copy send {}", streams_.size(),
                       neg_.reads_in_flight, zerocopy_ ? "on" : "off");
  }
  std::string peer() const override { return peer_; }
  const Negotiated& negotiated() const override { return neg_; }

  Result<uint32_t> register_memory(void* base, size_t len, bool remote_read) override {
    // The sink's landing zone is also registered with this ring as a fixed
    // buffer, so read replies are received with READ_FIXED straight into it
    // (no per-request page pinning). One registration per ring; io_uring
    // limits a fixed buffer to 1 GiB.
    if (!remote_read && !fixed_ && len <= (size_t{1} << 30)) {
      iovec iov{base, len};
      if (io_uring_register_buffers(&ring_, &iov, 1) == 0) {
        fixed_ = true;
        fixed_base_ = static_cast<uint8_t*>(base);
        fixed_len_ = len;
      }
    }
    regions_.push_back({static_cast<uint8_t*>(base), len, remote_read});
    return static_cast<uint32_t>(regions_.size());  // key = index + 1; 0 is never valid
  }

  void deregister_memory(uint32_t key) override {
    if (key < 1 || key > regions_.size()) return;
    const Region r = regions_[key - 1];
    regions_[key - 1] = {nullptr, 0, false};
    // A receive still landing in this memory (the session is aborting) must
    // end before the memory is freed: hang up and wait for it. The fixed
    // buffer itself stays registered until the ring goes (unregistering
    // would wait for every request in flight, idle receives included).
    bool busy = false;
    for (auto& st : streams_) busy |= st->recv_busy && st->recv_into_pool;
    if (!busy) return;
    log_debug("{}: aborting receives into a pool of {} bytes being released", peer_, r.len);
    for (auto& st : streams_) ::shutdown(st->sock.get(), SHUT_RDWR);
    io_uring_submit(&ring_);
    __kernel_timespec ts{5, 0};
    io_uring_cqe* cqe;
    for (;;) {
      busy = false;
      for (auto& st : streams_) busy |= st->recv_busy && st->recv_into_pool;
      if (!busy || io_uring_wait_cqe_timeout(&ring_, &cqe, &ts) != 0) break;
      const uint64_t ud = cqe->user_data;
      const uint32_t flags = cqe->flags;
      io_uring_cqe_seen(&ring_, cqe);
      if (!(flags & IORING_CQE_F_MORE)) --inflight_;
      const uint32_t i = static_cast<uint32_t>((ud >> 8) & 0xff);
      const int kind = static_cast<int>(ud & 0xff);
      if (i < streams_.size() && (kind == 1 || kind == 2)) streams_[i]->recv_busy = false;
      if (i < streams_.size() && kind == 3 && !(flags & IORING_CQE_F_NOTIF)) streams_[i]->send_busy = false;
    }
    closed_ = true;
  }

  Status send(std::span<const uint8_t> message) override {
    OutItem it;
    frame_header(*it.head, kMsg, static_cast<uint32_t>(message.size()), 0);
    it.head->insert(it.head->end(), message.begin(), message.end());
    streams_[0]->out.push_back(std::move(it));
    return {};
  }

  Status read(uint64_t cookie, uint32_t rkey, std::span<const ReadWr> wrs) override {
    if (closed_) return make_error(ENOTCONN, "read on a closed connection to " + peer_);
    if (wrs.empty()) return make_error(EINVAL, "empty read");
    PendingRead pr;
    for (const auto& wr : wrs) {
      pr.sges.insert(pr.sges.end(), wr.sges.begin(), wr.sges.end());
      pr.length += wr.length;
    }
    pr.stream = static_cast<uint32_t>(next_stream_++ % streams_.size());
    // Never onto a stream the peer has closed: nothing would answer there.
    for (size_t k = 0; k < streams_.size() && streams_[pr.stream]->eof; ++k)
      pr.stream = static_cast<uint32_t>(next_stream_++ % streams_.size());
    if (streams_[pr.stream]->eof) return make_error(ENOTCONN, "read on a closed connection to " + peer_);
    OutItem it;
    frame_header(*it.head, kReadReq, 16, cookie);
    wire::Writer w(*it.head);
    w.u64(wrs.front().remote_addr);
    w.u32(rkey);
    w.u32(pr.length);
    const uint32_t s = pr.stream;
    if (!reads_.emplace(cookie, std::move(pr)).second) return make_error(EINVAL, "duplicate read cookie");
    streams_[s]->out.push_back(std::move(it));
    return {};
  }

  uint32_t read_capacity() const override {
    return reads_.size() >= neg_.reads_in_flight ? 0 : neg_.reads_in_flight - static_cast<uint32_t>(reads_.size());
  }

  int wait_fd() const override { return efd_.get(); }
  Status arm() override {
    // Submit what poll() queued, so that its completion wakes the eventfd.
    pump();
    io_uring_submit(&ring_);
    return {};
  }

  bool send_pending() const override {
    for (auto& s : streams_)
      if (!s->out.empty() || s->send_busy) return true;
    return false;
  }

  Status poll(std::vector<TransportEvent>& events) override {
    if (closed_) return {};
    uint64_t v;
    while (::read(efd_.get(), &v, sizeof v) == sizeof v) {
    }
    take_joins();
    for (int round = 0; round < 4 && !closed_; ++round) {
      pump();
      io_uring_submit(&ring_);
      unsigned n = 0;
      io_uring_cqe* cqe;
      while (!closed_ && io_uring_peek_cqe(&ring_, &cqe) == 0) {
        const uint64_t ud = cqe->user_data;
        const int res = cqe->res;
        const uint32_t flags = cqe->flags;
        io_uring_cqe_seen(&ring_, cqe);
        if (!(flags & IORING_CQE_F_MORE)) --inflight_;
        ++n;
        on_cqe(ud, res, flags, events);
      }
      if (n == 0) break;
    }
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

  void take_joins() {
    if (!token_) return;
    std::vector<Fd> fresh;
    {
      std::lock_guard lk(registry().mu);
      auto it = registry().pending.find(token_);
      if (it == registry().pending.end() || it->second.empty()) return;
      fresh.swap(it->second);
    }
    for (auto& f : fresh) add_stream(std::move(f));
    log_debug("{}: now {} stream(s)", peer_, streams_.size());
  }

  /// Starts a receive and a send on every stream that has none in flight.
  void pump() {
    if (closed_) return;
    for (uint32_t i = 0; i < streams_.size(); ++i) {
      Stream& s = *streams_[i];
      if (!s.recv_busy && !s.eof) submit_recv(i, s);
      if (!s.send_busy && !s.out.empty()) submit_send(i, s);
    }
  }

  io_uring_sqe* sqe() {
    io_uring_sqe* q = io_uring_get_sqe(&ring_);
    if (!q) {
      io_uring_submit(&ring_);
      q = io_uring_get_sqe(&ring_);
    }
    return q;
  }

  void submit_recv(uint32_t i, Stream& s) {
    io_uring_sqe* q = sqe();
    if (!q) return;
    if (s.cur_read && s.rx_pos == s.rx_len) {
      // A read reply is arriving: receive straight into its scatter list.
      PendingRead& pr = *s.cur_read;
      size_t idx = 0;
      uint32_t base = 0;
      while (base + pr.sges[idx].length <= s.cur_done) base += pr.sges[idx++].length;
      const uint32_t in_sge = s.cur_done - base;
      // When the rest of the reply lands in one contiguous run of the fixed
      // buffer (the sink hands out adjacent blocks), read it with READ_FIXED.
      uint8_t* start = reinterpret_cast<uint8_t*>(pr.sges[idx].addr) + in_sge;
      uint64_t run = pr.sges[idx].length - in_sge;
      for (size_t k = idx + 1; k < pr.sges.size() && pr.sges[k].addr == pr.sges[k - 1].addr + pr.sges[k - 1].length; ++k)
        run += pr.sges[k].length;
      if (fixed_ && run == pr.length - s.cur_done && start >= fixed_base_ && start + run <= fixed_base_ + fixed_len_) {
        io_uring_prep_read_fixed(q, s.sock.get(), start, static_cast<unsigned>(run), 0, 0);
        io_uring_sqe_set_data64(q, (uint64_t{i} << 8) | 2);
        s.recv_busy = true;
        s.recv_into_pool = true;
        ++inflight_;
        ++fixed_reads_;
        return;
      }
      int n = 0;
      s.rx_iov[n].iov_base = reinterpret_cast<uint8_t*>(pr.sges[idx].addr) + in_sge;
      s.rx_iov[n++].iov_len = pr.sges[idx].length - in_sge;
      for (size_t k = idx + 1; k < pr.sges.size() && n < kMaxIov; ++k)
        s.rx_iov[n++] = {reinterpret_cast<void*>(pr.sges[k].addr), pr.sges[k].length};
      io_uring_prep_readv(q, s.sock.get(), s.rx_iov, static_cast<unsigned>(n), 0);
      io_uring_sqe_set_data64(q, (uint64_t{i} << 8) | 2);
      s.recv_into_pool = true;
    } else {
      if (s.rx_pos > 0) {
        std::memmove(s.rx.data(), s.rx.data() + s.rx_pos, s.rx_len - s.rx_pos);
        s.rx_len -= s.rx_pos;
        s.rx_pos = 0;
      }
      io_uring_prep_recv(q, s.sock.get(), s.rx.data() + s.rx_len, s.rx.size() - s.rx_len, 0);
      io_uring_sqe_set_data64(q, (uint64_t{i} << 8) | 1);
      s.recv_into_pool = false;
    }
    s.recv_busy = true;
    ++inflight_;
  }

  void submit_send(uint32_t i, Stream& s) {
    io_uring_sqe* q = sqe();
    if (!q) return;
    int n = 0;
    size_t data_bytes = 0;
    while (!s.out.empty() && n < kMaxIov - 1) {
      OutItem& it = s.out.front();
      size_t skip = it.sent;
      if (skip < it.head->size()) {
        s.tx_iov[n++] = {it.head->data() + skip, it.head->size() - skip};
        skip = 0;
      } else {
        skip -= it.head->size();
      }
      if (it.data_len > skip) {
        s.tx_iov[n++] = {const_cast<uint8_t*>(it.data) + skip, it.data_len - skip};
        data_bytes += it.data_len - skip;
      }
      s.sending.push_back(std::move(it));
      s.out.pop_front();
    }
    s.mh = {};
    s.mh.msg_iov = s.tx_iov;
    s.mh.msg_iovlen = static_cast<size_t>(n);
    s.send_zc = zerocopy_ && data_bytes >= kZeroCopyMin;
    if (s.send_zc)
      io_uring_prep_sendmsg_zc(q, s.sock.get(), &s.mh, MSG_NOSIGNAL);
    else
      io_uring_prep_sendmsg(q, s.sock.get(), &s.mh, MSG_NOSIGNAL);
    ++s.send_seq;
    if (s.send_zc) {
      auto& keep = s.zc_wait[s.send_seq];
      for (auto& it : s.sending) keep.push_back(it.head);
    }
    io_uring_sqe_set_data64(q, (s.send_seq << 16) | (uint64_t{i} << 8) | 3);
    s.send_busy = true;
    ++inflight_;
  }

  void on_cqe(uint64_t ud, int res, uint32_t flags, std::vector<TransportEvent>& events) {
    const uint32_t i = static_cast<uint32_t>((ud >> 8) & 0xff);
    const int kind = static_cast<int>(ud & 0xff);
    if (i >= streams_.size()) return;
    Stream& s = *streams_[i];
    if (kind == 3) return on_send_done(s, ud >> 16, res, flags, events);
    s.recv_busy = false;
    if (res == 0) {
      s.eof = true;
      // The connection ends when stream 0, the control stream, ends. An extra
      // stream may reach EOF first when the peer hangs up after its last
      // message (the streams are closed together, and their completions come
      // in any order): with no read waiting on it, that is no failure, and the
      // control stream still delivers what the peer sent last.
      if (i != 0 && !reads_on(i)) return;
      return close_with(events, "peer " + peer_ + " closed the connection");
    }
    if (res < 0) {
      if (res == -EAGAIN || res == -EINTR) return;
      s.eof = true;
      return close_with(events, fmt::format("receive from {}: {}", peer_, std::strerror(-res)));
    }
    if (kind == 2) {
      s.cur_done += static_cast<uint32_t>(res);
    } else {
      s.rx_len += static_cast<size_t>(res);
    }
    Status st = parse(i, s, events);
    if (!st.ok()) close_with(events, st.error().message());
  }

  void on_send_done(Stream& s, uint64_t seq, int res, uint32_t flags, std::vector<TransportEvent>& events) {
    if (flags & IORING_CQE_F_NOTIF) {  // the kernel let go of that zero-copy send's buffers
      s.zc_wait.erase(seq);
      return;
    }
    // A zero-copy send without a notification to come holds nothing.
    if (s.send_zc && !(flags & IORING_CQE_F_MORE)) s.zc_wait.erase(seq);
    s.send_busy = false;
    if (res < 0) {
      if (s.send_zc && (res == -EOPNOTSUPP || res == -EINVAL)) {
        zerocopy_ = false;  // clean fallback: resend the same items with a plain sendmsg
        res = 0;
      } else {
        return close_with(events, fmt::format("send to {}: {}", peer_, std::strerror(-res)));
      }
    }
    size_t left = static_cast<size_t>(res);
    size_t k = 0;
    for (; k < s.sending.size() && left > 0; ++k) {
      OutItem& f = s.sending[k];
      size_t rem = f.head->size() + f.data_len - f.sent;
      if (left >= rem) {
        left -= rem;
        f.sent += rem;
      } else {
        f.sent += left;
        left = 0;
        break;
      }
    }
    // What was not (fully) sent goes back to the front, in order.
    for (size_t j = s.sending.size(); j > k; --j) s.out.push_front(std::move(s.sending[j - 1]));
    s.sending.clear();
  }

  bool reads_on(uint32_t stream) const {
    for (const auto& [cookie, pr] : reads_)
      if (pr.stream == stream) return true;
    return false;
  }

  void close_with(std::vector<TransportEvent>& events, std::string why) {
    if (closed_) return;
    closed_ = true;
    events.push_back(TransportEvent::closed(ECONNRESET, std::move(why)));
    for (auto& [cookie, pr] : reads_) events.push_back(TransportEvent::read_done(cookie, ECONNRESET, "connection lost"));
    reads_.clear();
    for (auto& s : streams_) s->cur_read = nullptr;
  }

  /// Consumes every complete frame buffered on a stream.
  Status parse(uint32_t i, Stream& s, std::vector<TransportEvent>& events) {
    for (;;) {
      if (s.cur_read) {
        RCP_TRY(fill_read(s, events));
        if (s.cur_read) return {};  // needs more bytes
        continue;
      }
      if (s.rx_len - s.rx_pos < kFrameHeader) return {};
      wire::Reader r({s.rx.data() + s.rx_pos, kFrameHeader});
      const uint8_t kind = r.u8();
      r.u8();
      r.u16();
      const uint32_t len = r.u32();
      const uint64_t cookie = r.u64();
      const size_t avail = s.rx_len - s.rx_pos - kFrameHeader;
      const uint8_t* payload = s.rx.data() + s.rx_pos + kFrameHeader;
      switch (kind) {
        case kMsg: {
          if (i != 0) return make_error(EPROTO, fmt::format("{} sent a control frame on a data stream", peer_));
          if (len < wire::kHeaderSize || len > wire::kMaxMessage)
            return make_error(EPROTO, fmt::format("{} sent a control frame of {} bytes", peer_, len));
          if (avail < len) return {};
          TransportEvent ev;
          ev.kind = TransportEvent::Kind::message;
          ev.message.assign(payload, payload + len);
          events.push_back(std::move(ev));
          s.rx_pos += kFrameHeader + len;
          break;
        }
        case kReadReq: {
          if (len != 16) return make_error(EPROTO, fmt::format("{} sent a read request of {} bytes", peer_, len));
          if (avail < len) return {};
          wire::Reader q({payload, 16});
          const uint64_t addr = q.u64();
          const uint32_t key = q.u32();
          const uint32_t rlen = q.u32();
          s.rx_pos += kFrameHeader + len;
          serve_read(s, cookie, addr, key, rlen);
          break;
        }
        case kReadResp: {
          auto it = reads_.find(cookie);
          if (it == reads_.end() || it->second.length != len || it->second.stream != i)
            return make_error(EPROTO, fmt::format("{} sent {} bytes for a read that was not asked for", peer_, len));
          s.rx_pos += kFrameHeader;
          s.cur_cookie = cookie;
          s.cur_read = &it->second;
          s.cur_done = 0;
          break;
        }
        case kReadErr: {
          auto it = reads_.find(cookie);
          if (it == reads_.end()) return make_error(EPROTO, fmt::format("{} refused a read that was not asked for", peer_));
          s.rx_pos += kFrameHeader;
          reads_.erase(it);
          events.push_back(TransportEvent::read_done(
              cookie, EACCES, "peer refused the read (range outside its registered memory)"));
          break;
        }
        default: return make_error(EPROTO, fmt::format("{} sent an unknown frame kind {}", peer_, kind));
      }
    }
  }

  /// Copies what is buffered of the current read reply into its scatter
  /// list; the rest is received there directly (submit_recv).
  Status fill_read(Stream& s, std::vector<TransportEvent>& events) {
    PendingRead& pr = *s.cur_read;
    while (s.cur_done < pr.length && s.rx_pos < s.rx_len) {
      size_t idx = 0;
      uint32_t base = 0;
      while (base + pr.sges[idx].length <= s.cur_done) base += pr.sges[idx++].length;
      const uint32_t in_sge = s.cur_done - base;
      size_t n = std::min<size_t>(s.rx_len - s.rx_pos, pr.sges[idx].length - in_sge);
      std::memcpy(reinterpret_cast<uint8_t*>(pr.sges[idx].addr) + in_sge, s.rx.data() + s.rx_pos, n);
      s.rx_pos += n;
      s.cur_done += static_cast<uint32_t>(n);
    }
    if (s.cur_done < pr.length) return {};
    events.push_back(TransportEvent::read_done(s.cur_cookie));
    reads_.erase(s.cur_cookie);
    s.cur_read = nullptr;
    return {};
  }

  /// Answers a READ_REQ, but only from memory this connection registered for
  /// remote reading, exactly as an RNIC validates an rkey.
  void serve_read(Stream& s, uint64_t cookie, uint64_t addr, uint32_t key, uint32_t len) {
    OutItem it;
    const Region* reg = (key >= 1 && key <= regions_.size()) ? &regions_[key - 1] : nullptr;
    const uint64_t base = reg ? reinterpret_cast<uint64_t>(reg->base) : 0;
    if (!reg || !reg->remote_read || len == 0 || len > wire::kMaxChunk || addr < base || addr - base > reg->len ||
        reg->len - (addr - base) < len) {
      log_error("refusing read of {} bytes at {:#x} (key {}) from {}: outside registered memory", len, addr, key, peer_);
      frame_header(*it.head, kReadErr, 0, cookie);
    } else {
      frame_header(*it.head, kReadResp, len, cookie);
      it.data = reinterpret_cast<const uint8_t*>(addr);
      it.data_len = len;
    }
    s.out.push_back(std::move(it));
  }

  std::string peer_;
  Negotiated neg_;
  bool zerocopy_;
  uint64_t token_;
  io_uring ring_{};
  bool ring_ok_ = false;
  Fd efd_;
  unsigned inflight_ = 0;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<Region> regions_;
  std::unordered_map<uint64_t, PendingRead> reads_;
  uint64_t next_stream_ = 0;
  bool closed_ = false;
  bool fixed_ = false;
  uint8_t* fixed_base_ = nullptr;
  size_t fixed_len_ = 0;
  uint64_t fixed_reads_ = 0;
};

wire::Hello local_hello(const TcpOptions& opt, uint32_t flags) {
  wire::Hello h;
  h.ctrl_depth = 64;  // unused on TCP (the stream has its own flow control), but must be valid
  h.rd_init = static_cast<uint16_t>(opt.reads_in_flight);
  h.rd_resp = static_cast<uint16_t>(opt.reads_in_flight);
  h.max_sge_rd = 64;
  h.checksums = supported_checksums();
  h.max_chunk = opt.max_chunk;
  h.flags = flags;
  return h;
}

Negotiated negotiate(const TcpOptions& opt, const wire::Hello& peer) {
  Negotiated n;
  n.reads_in_flight = std::max<uint32_t>(1, std::min<uint32_t>(opt.reads_in_flight, peer.rd_resp));
  n.max_sge = 64;
  n.max_chunk = peer.max_chunk;
  n.checksums = static_cast<uint16_t>(peer.checksums & supported_checksums());
  return n;
}

Status send_u64(int fd, uint64_t v, int timeout_ms, const std::string& peer) {
  std::vector<uint8_t> b;
  wire::Writer(b).u64(v);
  return io_exact(fd, b.data(), b.size(), true, timeout_ms, peer);
}

Result<uint64_t> recv_u64(int fd, int timeout_ms, const std::string& peer) {
  uint8_t b[8];
  RCP_TRY(io_exact(fd, b, 8, false, timeout_ms, peer));
  wire::Reader r({b, 8});
  return r.u64();
}

/// Sends our hello, reads and checks the peer's.
Result<wire::Hello> exchange_hello(int fd, const std::string& peer, const TcpOptions& opt, uint32_t flags) {
  auto mine = wire::encode_hello(local_hello(opt, flags));
  RCP_TRY(io_exact(fd, mine.data(), mine.size(), true, opt.timeout_ms, peer));
  std::vector<uint8_t> theirs(wire::kHelloSize);
  RCP_TRY(io_exact(fd, theirs.data(), theirs.size(), false, opt.timeout_ms, peer));
  auto h = wire::decode_hello(theirs);
  if (!h.ok()) return make_error(h.error().code, "hello from " + peer + ": " + h.error().context);
  return h;
}

Result<Fd> dial(const std::string& host, uint16_t port, std::string& peer) {
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
    peer = addr_string(ai->ai_addr);
    if (::connect(s.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      last = sys_error("tcp connect to " + peer);
      continue;
    }
    return s;
  }
  return last;
}

}  // namespace

Result<std::unique_ptr<Transport>> tcp_connect(const std::string& host, uint16_t port, const TcpOptions& opt) {
  std::string peer;
  RCP_ASSIGN(Fd first, dial(host, port, peer));
  RCP_ASSIGN(wire::Hello h, exchange_hello(first.get(), peer, opt, 0));
  uint64_t token = 0;
  if (h.flags & kHelloToken) {
    RCP_ASSIGN(token, recv_u64(first.get(), opt.timeout_ms, peer));
  }
  auto t = std::make_unique<TcpTransport>(peer, negotiate(opt, h), opt.zerocopy, 0);
  RCP_TRY(t->init(std::move(first)));
  // Extra streams join the session with its token; a daemon that offers no
  // token gets one stream.
  for (uint32_t i = 1; token != 0 && i < opt.streams; ++i) {
    std::string p2;
    RCP_ASSIGN(Fd s, dial(host, port, p2));
    RCP_TRY(exchange_hello(s.get(), p2, opt, kHelloJoin));
    RCP_TRY(send_u64(s.get(), token, opt.timeout_ms, p2));
    // The daemon confirms the join only once the stream belongs to the session.
    RCP_ASSIGN(uint64_t ack, recv_u64(s.get(), opt.timeout_ms, p2));
    if (ack != token) return make_error(EPROTO, "stream join refused by " + p2);
    t->add_stream(std::move(s));
  }
  return std::unique_ptr<Transport>(std::move(t));
}

Result<std::unique_ptr<Transport>> tcp_accept(Fd sock, const std::string& peer, const TcpOptions& opt) {
  uint64_t token = 0;
  {
    static std::mutex mu;
    static std::mt19937_64 rng{std::random_device{}()};
    std::lock_guard lk(mu);
    while (token == 0) token = rng();
  }
  // The client speaks first about joining, so read its hello before choosing ours.
  std::vector<uint8_t> theirs(wire::kHelloSize);
  auto mine = wire::encode_hello(local_hello(opt, kHelloToken));
  RCP_TRY(io_exact(sock.get(), mine.data(), mine.size(), true, opt.timeout_ms, peer));
  RCP_TRY(io_exact(sock.get(), theirs.data(), theirs.size(), false, opt.timeout_ms, peer));
  auto h = wire::decode_hello(theirs);
  if (!h.ok()) return make_error(h.error().code, "hello from " + peer + ": " + h.error().context);
  if (h->flags & kHelloJoin) {
    RCP_ASSIGN(uint64_t want, recv_u64(sock.get(), opt.timeout_ms, peer));
    int fd = sock.get();
    {
      std::lock_guard lk(registry().mu);
      auto it = registry().pending.find(want);
      if (it == registry().pending.end()) return make_error(EPROTO, "stream join from " + peer + " names no session");
      Fd dup(::dup(fd));  // the session owns the socket from here on
      it->second.push_back(std::move(dup));
    }
    RCP_TRY(send_u64(fd, want, opt.timeout_ms, peer));
    return std::unique_ptr<Transport>();
  }
  // Registered before the client learns the token, so its joins always find
  // the session; the transport's destructor unregisters it.
  {
    std::lock_guard lk(registry().mu);
    registry().pending[token];
  }
  auto t = std::make_unique<TcpTransport>(peer, negotiate(opt, h.value()), opt.zerocopy, token);
  RCP_TRY(send_u64(sock.get(), token, opt.timeout_ms, peer));
  RCP_TRY(t->init(std::move(sock)));
  return std::unique_ptr<Transport>(std::move(t));
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
