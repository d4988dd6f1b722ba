/// The TCP transport's connection: one or more TCP streams of one session
/// and everything they have in flight, driven through one io_uring (the
/// shared Ring). Control messages travel on stream 0; read requests are
/// spread over all streams, and each is answered on the stream it came on.
/// Each stream has at most one receive and one send in flight, which keeps
/// both directions in order without locks — the transport is used by the
/// session's one thread only.
///
/// Split by concern: the I/O (submissions, completions, the send queue) is
/// tcp_transport.cc; what each received frame means (messages, read
/// requests served from registered memory, replies landing in scatter
/// lists) is framing.cc; the hello and the join of extra streams are
/// handshake.cc and listener.cc.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/ring.h"
#include "transport/join_registry.h"
#include "transport/tcp/tls.h"
#include "transport/transport.h"
#include "util/fd.h"

namespace rcp::tcp {

/// Receive buffer per stream: frame headers, control messages and the start
/// of read replies land here; the rest of a reply goes straight to its SGEs.
constexpr size_t kRxBuffer = 256 * 1024;
constexpr int kMaxIov = 64;
/// Zero-copy pays for its page pinning and completion notification only on
/// large sends (the kernel docs suggest ≥ 10 KiB; measured here on loopback,
/// where the kernel copies anyway, it is neutral at 1 MiB).
constexpr size_t kZeroCopyMin = 64 * 1024;
/// Bytes of reads in flight to a local peer (see read_capacity()).
constexpr uint64_t kLocalReadBytes = 4u << 20;

/// A socket that joined a session, with its TLS session when it is encrypted.
struct JoinedStream {
  Fd sock;
  std::unique_ptr<TlsStream> tls;
};
/// Daemon side: sockets that joined a session, by its token; the point is
/// whether the session is encrypted (a join must match it).
using StreamJoins = JoinRegistry<JoinedStream, bool>;
/// Plaintext encrypted per user-space TLS send (at most; records are 16 KiB).
constexpr size_t kTlsSendBatch = 512 * 1024;

/// Whether a connected socket's peer is on this host: a loopback address or
/// the socket's own local address (traffic between them goes through lo).
bool is_local_peer(int fd);

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

/// Frame header bytes (+ a control message's payload). A zero-copy send
/// takes them over until the kernel's notification (their heap buffer stays
/// where the send's iovec points) and leaves the item a copy, in case part
/// of it must be sent again. One allocation per item: a shared_ptr here cost
/// a second one on every message, zero-copy or not.
using Bytes = std::vector<uint8_t>;

struct OutItem {
  Bytes head;                     // frame header (+ small payload)
  const uint8_t* data = nullptr;  // read reply: registered pool memory
  size_t data_len = 0;
  size_t sent = 0;  // of head.size() + data_len
  bool reply = false;  // answers a peer's READ_REQ (counted in replies_owed_)
  uint32_t cost = 0;   // a control message: what it adds to unsent_ (transport/backlog.h)
};

/// One TCP connection of the session and its I/O state.
struct Stream {
  Fd sock;
  std::vector<uint8_t> rx = std::vector<uint8_t>(kRxBuffer);
  size_t rx_pos = 0, rx_len = 0;
  PendingRead* cur_read = nullptr;  // the read reply being received
  uint64_t cur_cookie = 0;
  uint32_t cur_done = 0;
  iovec rx_iov[kMaxIov];
  bool recv_busy = false, eof = false;
  bool recv_into_pool = false;  // the receive in flight writes into registered pool memory
  std::deque<OutItem> out;
  std::vector<OutItem> sending;  // items of the send in flight
  // Header buffers of zero-copy sends, by send sequence, until the kernel's
  // notification says it let go of them (notifications may come out of order).
  std::unordered_map<uint64_t, std::vector<Bytes>> zc_wait;
  uint64_t send_seq = 0;
  iovec tx_iov[kMaxIov];
  msghdr mh{};
  bool send_busy = false, send_zc = false;
  // TLS (encrypted sessions): the stream's TLS session; directions the
  // kernel does not offload go through tls_path.cc. tls_tx is the
  // ciphertext of the send in flight (tls->tx_next collects the next one).
  std::unique_ptr<TlsStream> tls;
  std::vector<uint8_t> tls_tx;
  size_t tls_tx_sent = 0;
};

class TcpTransport final : public Transport {
 public:
  /// token != 0 (daemon side): the session's entry in `joins`, closed when
  /// the transport goes; streams that join it are picked up in poll().
  TcpTransport(std::string peer, Negotiated n, bool zerocopy, uint64_t token = 0,
               std::shared_ptr<StreamJoins> joins = nullptr);
  ~TcpTransport() override;

  /// Sets up the ring (on the thread that will use the transport) and
  /// adopts the first stream.
  Status init(Fd first, std::unique_ptr<TlsStream> tls = nullptr);
  /// An extra stream; an encrypted session's streams all carry TLS.
  void add_stream(Fd sock, std::unique_ptr<TlsStream> tls = nullptr);

  std::string name() const override { return "tcp"; }
  std::string describe() const override;
  std::string peer() const override { return peer_; }
  const Negotiated& negotiated() const override { return neg_; }
  Result<uint32_t> register_memory(void* base, size_t len, bool remote_read) override;
  void deregister_memory(uint32_t key) override;
  Status send(std::span<const uint8_t> message) override;
  Status read(uint64_t cookie, uint32_t rkey, std::span<const ReadWr> wrs) override;
  uint32_t read_capacity() const override;
  Status poll(std::vector<TransportEvent>& out) override;
  int wait_fd() const override { return ring_->event_fd(); }
  Status arm() override;
  bool send_pending() const override;
  size_t unsent_bytes() const override { return unsent_; }
  size_t max_message() const override { return wire::kMaxLargeMessage; }
  bool encrypted() const override { return !streams_.empty() && streams_[0]->tls != nullptr; }
  std::vector<uint8_t> channel_binding() const override {
    return encrypted() ? streams_[0]->tls->channel_binding() : std::vector<uint8_t>{};
  }

 private:
  // tests/fuzz/fuzz_frames.cc feeds parse() a hostile stream's bytes without a socket.
  friend struct FrameFeeder;
  // tcp_transport.cc: I/O
  void take_joins();
  void pump();
  template <typename Op>
  bool queue(Op op);
  void submit_recv(uint32_t i, Stream& s);
  void submit_send(uint32_t i, Stream& s);
  void on_cqe(uint64_t ud, int res, uint32_t flags, std::vector<TransportEvent>& events);
  void on_send_done(Stream& s, uint64_t seq, int res, uint32_t flags, std::vector<TransportEvent>& events);
  bool reads_on(uint32_t stream) const;
  void close_with(std::vector<TransportEvent>& events, std::string why);
  void sent_whole(const OutItem& it);
  // framing.cc: received frames
  Status parse(uint32_t i, Stream& s, std::vector<TransportEvent>& events);
  Status fill_read(Stream& s, std::vector<TransportEvent>& events);
  Status serve_read(Stream& s, uint64_t cookie, uint64_t addr, uint32_t key, uint32_t len);
  // tls_path.cc: user-space TLS on a stream
  void submit_tls_recv(uint32_t i, Stream& s);
  Status on_tls_recv(uint32_t i, Stream& s, size_t n, std::vector<TransportEvent>& events);
  void submit_tls_send(uint32_t i, Stream& s);
  void on_tls_send_done(Stream& s, int res, std::vector<TransportEvent>& events);
  static bool tls_send_waiting(const Stream& s);

  std::string peer_;
  Negotiated neg_;
  bool zerocopy_;
  uint64_t token_;
  std::shared_ptr<StreamJoins> joins_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<Region> regions_;
  std::unordered_map<uint64_t, PendingRead> reads_;
  // Answers to the peer's READ_REQs queued and not yet handed to the kernel
  // (or to TLS), over all streams: serve_read() bounds them.
  uint32_t replies_owed_ = 0;
  // Control messages queued and not yet handed over whole (to the kernel,
  // or to TLS): what they cost and how many (send() bounds them).
  size_t unsent_ = 0, unsent_msgs_ = 0;
  uint64_t next_stream_ = 0;
  bool closed_ = false;
  std::string tls_error_;  // an encryption failure in pump(), reported by poll()
  bool fixed_ = false;
  bool local_peer_ = false;  // the first stream's peer is an address of this host
  uint8_t* fixed_base_ = nullptr;
  size_t fixed_len_ = 0;
  uint64_t fixed_reads_ = 0;
  // Last: destroyed first, so no request outlives the stream buffers it names.
  std::unique_ptr<Ring> ring_;
};

}  // namespace rcp::tcp
