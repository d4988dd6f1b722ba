// The TCP transport's I/O: the send queue of each stream, receives and
// sendmsg (zero-copy for read replies) through the shared Ring, and the
// completions that drive them. See connection.h.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <fmt/core.h>

#include "transport/backlog.h"
#include "transport/tcp/completion_id.h"
#include "transport/tcp/connection.h"
#include "transport/tcp/framing.h"
#include "util/log.h"
#include "util/test_faults.h"
#include "wire/codec.h"

namespace rcp::tcp {

TcpTransport::TcpTransport(std::string peer, Negotiated n, bool zerocopy, uint64_t token,
                           std::shared_ptr<StreamJoins> joins)
    : peer_(std::move(peer)), neg_(n), zerocopy_(zerocopy), token_(token), joins_(std::move(joins)) {}

TcpTransport::~TcpTransport() {
  log_debug("{}: {} read replies received with READ_FIXED", peer_, fixed_reads_);
  // No stream may join from here on; one that joined but was never picked
  // up is closed with the others.
  if (joins_ && token_) joins_->close(token_);
  if (ring_) {
    // Sockets shut down before the ring drains so pending receives end; no
    // operation may outlive the buffers it names. A zero-copy notification
    // for a dead peer may wait for its retransmissions: bounded (1 s each).
    for (auto& s : streams_) ::shutdown(s->sock.get(), SHUT_RDWR);
    ring_->set_exit_drain_ms(1000);
    ring_.reset();
  }
}

Status TcpTransport::init(Fd first, std::unique_ptr<TlsStream> tls) {
  RCP_ASSIGN(ring_, Ring::create(256));
  if (zerocopy_) zerocopy_ = ring_->supports(IORING_OP_SENDMSG_ZC);
  // A zero-copy skb delivered to a socket of this host is copied by the
  // kernel anyway (skb_copy_ubufs, in the receiver's softirq), so to a local
  // peer SEND_ZC only adds page pinning and a notification per send:
  // measured on loopback, 2 GiB push, 1.40 -> 1.29 CPU-s/GiB both ends
  // (bench/README.md). Real NICs keep it.
  local_peer_ = is_local_peer(first.get());
  neg_.local_peer = local_peer_;
  if (zerocopy_ && local_peer_ && !test_faults().zerocopy_local) zerocopy_ = false;
  add_stream(std::move(first), std::move(tls));
  return {};
}

void TcpTransport::add_stream(Fd sock, std::unique_ptr<TlsStream> tls) {
  int one = 1;
  ::setsockopt(sock.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  auto s = std::make_unique<Stream>();
  s->sock = std::move(sock);
  if (tls) {
    tls->to_user_space();
    s->tls = std::move(tls);
  }
  streams_.push_back(std::move(s));
}

std::string TcpTransport::describe() const {
  // A user-space TLS send copies (encrypts) the data: zero-copy does not apply.
  const bool zc = zerocopy_ && !(encrypted() && streams_[0]->tls->user_tx());
  const std::string cap = local_peer_ ? fmt::format(" ({} MiB at most)", kLocalReadBytes >> 20) : "";
  std::string d = fmt::format("tcp: {} stream(s), {} reads in flight{}, zero-copy send {}", streams_.size(),
                              neg_.reads_in_flight, cap, zc ? "on" : local_peer_ ? "off (local peer)" : "off");
  if (encrypted()) d += ", encrypted: " + streams_[0]->tls->describe();
  return d;
}

Result<uint32_t> TcpTransport::register_memory(void* base, size_t len, bool remote_read) {
  // The sink's landing zone is also registered with this ring as a fixed
  // buffer, so read replies are received with READ_FIXED straight into it
  // (no per-request page pinning). One registration per ring; io_uring
  // limits a fixed buffer to 1 GiB. Without it, replies use readv.
  if (!remote_read && !fixed_ && len <= (size_t{1} << 30)) {
    iovec iov{base, len};
    if (ring_->register_buffers({&iov, 1}).ok()) {
      fixed_ = true;
      fixed_base_ = static_cast<uint8_t*>(base);
      fixed_len_ = len;
    }
  }
  regions_.push_back({static_cast<uint8_t*>(base), len, remote_read});
  return static_cast<uint32_t>(regions_.size());  // key = index + 1; 0 is never valid
}

void TcpTransport::deregister_memory(uint32_t key) {
  if (key < 1 || key > regions_.size()) return;
  const Region r = regions_[key - 1];
  regions_[key - 1] = {nullptr, 0, false};
  // A receive still landing in this memory (the session is aborting) must
  // end before the memory is freed: hang up and wait for it. The fixed
  // buffer itself stays registered until the ring goes (unregistering
  // would wait for every request in flight, idle receives included).
  auto busy = [&] {
    for (auto& st : streams_)
      if (st->recv_busy && st->recv_into_pool) return true;
    return false;
  };
  if (!busy()) return;
  log_debug("{}: aborting receives into a pool of {} bytes being released", peer_, r.len);
  for (auto& st : streams_) ::shutdown(st->sock.get(), SHUT_RDWR);
  (void)ring_->submit();
  while (busy() && ring_->wait(5000)) {
    ring_->reap([&](uint64_t ud, int, uint32_t flags) {
      auto id = CompletionId::decode(ud, static_cast<uint32_t>(streams_.size()));
      if (!id) return;
      Stream& s = *streams_[id->stream];
      if (id->op == IoOp::send) {
        if (!(flags & IORING_CQE_F_NOTIF)) s.send_busy = false;
      } else {
        s.recv_busy = false;
      }
    });
  }
  closed_ = true;
}

Status TcpTransport::send(std::span<const uint8_t> message) {
  const size_t cost = unsent_cost(message.size() + kFrameHeader);
  if (unsent_ + cost > kMaxUnsent) return unsent_error(peer_, unsent_, unsent_msgs_);
  OutItem it;
  it.cost = static_cast<uint32_t>(cost);
  unsent_ += cost;
  ++unsent_msgs_;
  it.head.reserve(kFrameHeader + message.size());
  put_frame_header(it.head, kMsg, static_cast<uint32_t>(message.size()), 0);
  it.head.insert(it.head.end(), message.begin(), message.end());
  streams_[0]->out.push_back(std::move(it));
  return {};
}

Status TcpTransport::read(uint64_t cookie, uint32_t rkey, std::span<const ReadWr> wrs) {
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
  it.head.reserve(kFrameHeader + kReadReqPayload);
  put_frame_header(it.head, kReadReq, kReadReqPayload, cookie);
  wire::Writer w(it.head);
  w.u64(wrs.front().remote_addr);
  w.u32(rkey);
  w.u32(pr.length);
  const uint32_t s = pr.stream;
  if (!reads_.emplace(cookie, std::move(pr)).second) return make_error(EINVAL, "duplicate read cookie");
  streams_[s]->out.push_back(std::move(it));
  return {};
}

uint32_t TcpTransport::read_capacity() const {
  const uint32_t n = static_cast<uint32_t>(reads_.size());
  if (n >= neg_.reads_in_flight) return 0;
  // To a local peer there is no bandwidth-delay product to cover, and every
  // byte in flight is pool memory the copies pass through: fewer keep it in
  // the cache (2 GiB push, sink: 0.72 -> 0.60 CPU-s/GiB with 4 MiB instead
  // of 16). Bytes, not reads: small files need many small reads in flight.
  if (local_peer_) {
    uint64_t bytes = 0;
    for (const auto& [cookie, pr] : reads_) bytes += pr.length;
    if (bytes >= kLocalReadBytes) return 0;
  }
  return neg_.reads_in_flight - n;
}

Status TcpTransport::arm() {
  // Submit what poll() queued, so that its completion wakes the eventfd.
  pump();
  return ring_->submit();
}

bool TcpTransport::send_pending() const {
  for (auto& s : streams_)
    if (!s->out.empty() || s->send_busy || tls_send_waiting(*s)) return true;
  return false;
}

Status TcpTransport::poll(std::vector<TransportEvent>& events) {
  if (closed_) return {};
  ring_->drain_event_fd();
  take_joins();
  for (int round = 0; round < 4 && !closed_; ++round) {
    pump();
    RCP_TRY(ring_->submit());
    unsigned n = ring_->reap([&](uint64_t ud, int res, uint32_t flags) {
      // Completions after a close only retire their requests.
      if (!closed_) on_cqe(ud, res, flags, events);
    });
    if (n == 0) break;
  }
  if (!tls_error_.empty()) close_with(events, tls_error_);
  return {};
}

void TcpTransport::take_joins() {
  if (!joins_ || !token_) return;
  std::vector<JoinedStream> fresh = joins_->take(token_);
  if (fresh.empty()) return;
  for (auto& f : fresh) add_stream(std::move(f.sock), std::move(f.tls));
  log_debug("{}: now {} stream(s)", peer_, streams_.size());
}

/// Starts a receive and a send on every stream that has none in flight.
void TcpTransport::pump() {
  if (closed_) return;
  for (uint32_t i = 0; i < streams_.size(); ++i) {
    Stream& s = *streams_[i];
    if (!s.recv_busy && !s.eof) submit_recv(i, s);
    if (!s.send_busy && (!s.out.empty() || tls_send_waiting(s))) submit_send(i, s);
  }
}

/// Queues one Ring operation; when the submission queue is full, submits
/// what it holds and tries once more.
template <typename Op>
bool TcpTransport::queue(Op op) {
  if (op()) return true;
  (void)ring_->submit();
  return op();
}

void TcpTransport::submit_recv(uint32_t i, Stream& s) {
  if (s.tls && s.tls->user_rx()) return submit_tls_recv(i, s);
  const int fd = s.sock.get();
  if (s.cur_read && s.rx_pos == s.rx_len) {
    // A read reply is arriving: receive straight into its scatter list.
    const uint64_t ud = *CompletionId{IoOp::recv_reply, i}.encode();
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
      if (!queue([&] { return ring_->read_fixed(fd, start, static_cast<unsigned>(run), 0, 0, ud); })) return;
      ++fixed_reads_;
    } else {
      int n = 0;
      s.rx_iov[n].iov_base = start;
      s.rx_iov[n++].iov_len = pr.sges[idx].length - in_sge;
      for (size_t k = idx + 1; k < pr.sges.size() && n < kMaxIov; ++k)
        s.rx_iov[n++] = {reinterpret_cast<void*>(pr.sges[k].addr), pr.sges[k].length};
      if (!queue([&] { return ring_->readv(fd, s.rx_iov, static_cast<unsigned>(n), ud); })) return;
    }
    s.recv_into_pool = true;
  } else {
    if (s.rx_pos > 0) {
      std::memmove(s.rx.data(), s.rx.data() + s.rx_pos, s.rx_len - s.rx_pos);
      s.rx_len -= s.rx_pos;
      s.rx_pos = 0;
    }
    const uint64_t ud = *CompletionId{IoOp::recv, i}.encode();
    if (!queue([&] { return ring_->recv(fd, s.rx.data() + s.rx_len, s.rx.size() - s.rx_len, ud); })) return;
    s.recv_into_pool = false;
  }
  s.recv_busy = true;
}

void TcpTransport::submit_send(uint32_t i, Stream& s) {
  if (s.tls && s.tls->user_tx()) return submit_tls_send(i, s);
  int n = 0;
  size_t data_bytes = 0;
  while (!s.out.empty() && n < kMaxIov - 1) {
    OutItem& it = s.out.front();
    size_t skip = it.sent;
    if (skip < it.head.size()) {
      s.tx_iov[n++] = {it.head.data() + skip, it.head.size() - skip};
      skip = 0;
    } else {
      skip -= it.head.size();
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
  const uint64_t seq = CompletionId::next_seq(s.send_seq);
  const uint64_t ud = *CompletionId{IoOp::send, i, seq}.encode();
  if (!queue([&] { return ring_->sendmsg(s.sock.get(), &s.mh, MSG_NOSIGNAL, s.send_zc, ud); })) {
    // No room even after a submit: put the items back for the next pump.
    for (size_t j = s.sending.size(); j > 0; --j) s.out.push_front(std::move(s.sending[j - 1]));
    s.sending.clear();
    return;
  }
  s.send_seq = seq;
  if (s.send_zc) {
    auto& keep = s.zc_wait[seq];
    for (auto& it : s.sending) {
      keep.push_back(std::move(it.head));
      it.head = keep.back();
    }
  }
  s.send_busy = true;
}

void TcpTransport::on_cqe(uint64_t ud, int res, uint32_t flags, std::vector<TransportEvent>& events) {
  auto id = CompletionId::decode(ud, static_cast<uint32_t>(streams_.size()));
  if (!id) {
    log_error("{}: io_uring completion {:#x} names no stream of this connection", peer_, ud);
    return;
  }
  const uint32_t i = id->stream;
  Stream& s = *streams_[i];
  if (id->op == IoOp::send) return on_send_done(s, id->seq, res, flags, events);
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
  if (s.tls && s.tls->user_rx()) {
    Status st = on_tls_recv(i, s, static_cast<size_t>(res), events);
    if (!st.ok()) close_with(events, st.error().message());
    return;
  }
  if (id->op == IoOp::recv_reply) {
    s.cur_done += static_cast<uint32_t>(res);
  } else {
    s.rx_len += static_cast<size_t>(res);
  }
  Status st = parse(i, s, events);
  if (!st.ok()) close_with(events, st.error().message());
}

void TcpTransport::on_send_done(Stream& s, uint64_t seq, int res, uint32_t flags, std::vector<TransportEvent>& events) {
  if (flags & IORING_CQE_F_NOTIF) {  // the kernel let go of that zero-copy send's buffers
    s.zc_wait.erase(seq);
    return;
  }
  if (s.tls && s.tls->user_tx()) return on_tls_send_done(s, res, events);
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
    size_t rem = f.head.size() + f.data_len - f.sent;
    if (left >= rem) {
      left -= rem;
      f.sent += rem;
    } else {
      f.sent += left;
      left = 0;
      break;
    }
  }
  for (size_t j = 0; j < k; ++j) sent_whole(s.sending[j]);
  // What was not (fully) sent goes back to the front, in order.
  for (size_t j = s.sending.size(); j > k; --j) s.out.push_front(std::move(s.sending[j - 1]));
  s.sending.clear();
}

bool TcpTransport::reads_on(uint32_t stream) const {
  for (const auto& [cookie, pr] : reads_)
    if (pr.stream == stream) return true;
  return false;
}

/// An item left whole: what it held is released.
void TcpTransport::sent_whole(const OutItem& it) {
  if (it.reply) --replies_owed_;
  if (it.cost) {
    unsent_ -= it.cost;
    --unsent_msgs_;
  }
}

void TcpTransport::close_with(std::vector<TransportEvent>& events, std::string why) {
  if (closed_) return;
  closed_ = true;
  events.push_back(TransportEvent::closed(ECONNRESET, std::move(why)));
  for (auto& [cookie, pr] : reads_) events.push_back(TransportEvent::read_done(cookie, ECONNRESET, "connection lost"));
  reads_.clear();
  for (auto& s : streams_) s->cur_read = nullptr;
}

}  // namespace rcp::tcp
