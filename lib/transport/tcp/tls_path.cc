// User-space TLS on a stream of the TCP transport (tls.h, connection.h):
// ciphertext is received and sent through the same ring as plain streams;
// SSL decrypts it into the same places the plain path receives into (the
// stream's receive buffer, or straight into a read reply's scatter list),
// and encrypts queued frames into the buffer the next send carries. What
// each decrypted frame means is unchanged (framing.cc).
#include <cstring>
#include <fmt/core.h>

#include "transport/tcp/completion_id.h"
#include "transport/tcp/connection.h"
#include "util/log.h"

namespace rcp::tcp {
namespace {

/// As TcpTransport::queue: when the submission queue is full, submits what
/// it holds and tries once more.
template <typename Op>
bool queue_op(Ring& ring, Op op) {
  if (op()) return true;
  (void)ring.submit();
  return op();
}

}  // namespace

void TcpTransport::submit_tls_recv(uint32_t i, Stream& s) {
  TlsStream& t = *s.tls;
  if (t.rx_pos > 0) {
    std::memmove(t.rx.data(), t.rx.data() + t.rx_pos, t.rx_len - t.rx_pos);
    t.rx_len -= t.rx_pos;
    t.rx_pos = 0;
  }
  // SSL takes every byte it is given before it asks for more, so the buffer
  // is empty here; a full one would be a bug, not the peer's doing.
  if (t.rx_len == t.rx.size()) return;
  const uint64_t ud = *CompletionId{IoOp::recv, i}.encode();
  const int fd = s.sock.get();
  if (!queue_op(*ring_, [&] { return ring_->recv(fd, t.rx.data() + t.rx_len, t.rx.size() - t.rx_len, ud); })) return;
  s.recv_into_pool = false;
  s.recv_busy = true;
}

/// Decrypts what arrived, frame by frame: into the receive buffer, or, while
/// a read reply is arriving and nothing else is buffered, straight into its
/// scatter list (as the plain path receives it there).
Status TcpTransport::on_tls_recv(uint32_t i, Stream& s, size_t n, std::vector<TransportEvent>& events) {
  TlsStream& t = *s.tls;
  t.rx_len += n;
  while (!closed_) {
    uint8_t* dst = nullptr;
    size_t room = 0;
    const bool into_reply = s.cur_read && s.rx_pos == s.rx_len;
    if (into_reply) {
      PendingRead& pr = *s.cur_read;
      size_t idx = 0;
      uint32_t base = 0;
      while (base + pr.sges[idx].length <= s.cur_done) base += pr.sges[idx++].length;
      const uint32_t in_sge = s.cur_done - base;
      dst = reinterpret_cast<uint8_t*>(pr.sges[idx].addr) + in_sge;
      room = pr.sges[idx].length - in_sge;
    } else {
      if (s.rx_pos > 0) {
        std::memmove(s.rx.data(), s.rx.data() + s.rx_pos, s.rx_len - s.rx_pos);
        s.rx_len -= s.rx_pos;
        s.rx_pos = 0;
      }
      dst = s.rx.data() + s.rx_len;
      room = s.rx.size() - s.rx_len;
      // parse() consumes every whole frame and no frame outgrows the buffer.
      if (room == 0) return make_error(EPROTO, fmt::format("{}: receive buffer full of an incomplete frame", peer_));
    }
    RCP_ASSIGN(size_t got, t.read(dst, room));
    if (got == 0) break;  // SSL needs more ciphertext
    if (into_reply) {
      s.cur_done += static_cast<uint32_t>(got);
    } else {
      s.rx_len += got;
    }
    RCP_TRY(parse(i, s, events));
  }
  return {};
}

bool TcpTransport::tls_send_waiting(const Stream& s) {
  return s.tls && s.tls->user_tx() && (s.tls_tx_sent < s.tls_tx.size() || !s.tls->tx_next.empty());
}

/// Once the previous ciphertext is all sent: encrypts queued frames (up to
/// kTlsSendBatch of plaintext) and sends the result with a plain sendmsg —
/// the ciphertext is ours, so a zero-copy send would save nothing.
void TcpTransport::submit_tls_send(uint32_t i, Stream& s) {
  TlsStream& t = *s.tls;
  if (s.tls_tx_sent == s.tls_tx.size()) {
    size_t batch = 0;
    while (!s.out.empty() && batch < kTlsSendBatch) {
      OutItem& it = s.out.front();
      Status st = t.write({it.head.data(), it.head.size()});
      if (st.ok() && it.data_len > 0) st = t.write({it.data, it.data_len});
      if (!st.ok()) {
        tls_error_ = st.error().message();
        return;
      }
      batch += it.head.size() + it.data_len;
      sent_whole(it);  // (its ciphertext is bounded by the batch)
      s.out.pop_front();
    }
    s.tls_tx.clear();
    std::swap(s.tls_tx, t.tx_next);  // keeps both buffers' capacity
    s.tls_tx_sent = 0;
  }
  if (s.tls_tx_sent == s.tls_tx.size()) return;
  s.tx_iov[0] = {s.tls_tx.data() + s.tls_tx_sent, s.tls_tx.size() - s.tls_tx_sent};
  s.mh = {};
  s.mh.msg_iov = s.tx_iov;
  s.mh.msg_iovlen = 1;
  s.send_zc = false;
  const uint64_t seq = CompletionId::next_seq(s.send_seq);
  const uint64_t ud = *CompletionId{IoOp::send, i, seq}.encode();
  if (!queue_op(*ring_, [&] { return ring_->sendmsg(s.sock.get(), &s.mh, MSG_NOSIGNAL, false, ud); })) return;
  s.send_seq = seq;
  s.send_busy = true;
}

void TcpTransport::on_tls_send_done(Stream& s, int res, std::vector<TransportEvent>& events) {
  s.send_busy = false;
  if (res < 0) return close_with(events, fmt::format("send to {}: {}", peer_, std::strerror(-res)));
  s.tls_tx_sent += static_cast<size_t>(res);  // the rest goes with the next pump
}

}  // namespace rcp::tcp
