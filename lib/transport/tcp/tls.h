/// TLS 1.3 for the TCP transport (rcp --encrypt, rcpd `encrypt`), with
/// OpenSSL. Each TCP stream of an encrypted session runs its own TLS 1.3
/// handshake right after the plain hello, inside the hello's deadline; the
/// session token and the join acknowledgement then travel inside TLS.
///
/// Trust: the daemon presents a self-signed certificate for a key it draws
/// at start (nothing to configure, nothing to leak from disk); the client
/// does not verify it against any PKI. What makes an encrypted session safe
/// against a man in the middle is the mutual authentication: the exporter
/// value of the first stream (RFC 8446 §7.5, `channel_binding()`) is mixed
/// into both HMAC proofs and the session keys, so a relay that terminates
/// TLS on both sides holds two different exporters and fails. Extra streams
/// must present the same certificate as the first one (the client pins it),
/// so they end at the same daemon. Without auth_users there is nothing to
/// bind to: encryption then keeps out passive eavesdroppers only.
///
/// Data path: where the kernel has TLS offload (kTLS, SSL_OP_ENABLE_KTLS)
/// and OpenSSL turned it on for a direction, that direction keeps the plain
/// io_uring path (the kernel encrypts/decrypts on the socket). Otherwise the
/// transport encrypts in user space: ciphertext is received and sent through
/// the same ring, and SSL reads and writes it through a BIO over the
/// stream's own buffers (`TlsStream::rx_*`, `tx_next`), never the socket.
#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "util/result.h"

namespace rcp::tcp {

using Clock = std::chrono::steady_clock;

/// When a hello must be over, and who may cut it short.
struct Deadline {
  Clock::time_point at;
  const std::atomic<bool>* cancel = nullptr;
  static Deadline in(int timeout_ms, const std::atomic<bool>* cancel = nullptr) {
    return {Clock::now() + std::chrono::milliseconds(timeout_ms), cancel};
  }
};

/// Waits until fd is readable/writable or the deadline passes (ETIMEDOUT)
/// or the hello is cancelled (ECANCELED), in slices of at most 100 ms.
Status wait_io(int fd, bool writing, const Deadline& dl, const std::string& peer);

/// Bytes of the exporter value bound into authentication.
constexpr size_t kChannelBindingSize = 32;

/// An SSL_CTX for one side: TLS 1.3 only, no session tickets (nothing
/// post-handshake for kTLS to trip over), kTLS asked for.
class TlsContext {
 public:
  /// The daemon's: a fresh P-256 key and a self-signed certificate for it.
  static Result<std::shared_ptr<TlsContext>> server();
  static Result<std::shared_ptr<TlsContext>> client();
  ~TlsContext();
  SSL_CTX* get() const { return ctx_; }
  bool is_server() const { return server_; }

 private:
  TlsContext(SSL_CTX* c, bool server) : ctx_(c), server_(server) {}
  SSL_CTX* ctx_;
  bool server_;
};

/// One TLS session on one stream.
class TlsStream {
 public:
  /// Runs the handshake on `fd` (made non-blocking for it and set back
  /// after), within `dl`. Client side: `pin`, when not empty, is the DER
  /// public key the daemon must present (extra streams: the first
  /// stream's); a different one is refused (EKEYREJECTED).
  static Result<std::unique_ptr<TlsStream>> handshake(const TlsContext& ctx, int fd, const Deadline& dl,
                                                      const std::string& peer,
                                                      std::span<const uint8_t> pin = {});
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  /// Blocking (under dl) exact write/read through TLS on the socket: the
  /// token and the join acknowledgement, before the stream moves to io_uring.
  Status write_exact(std::span<const uint8_t> data, const Deadline& dl);
  Status read_exact(std::span<uint8_t> out, const Deadline& dl);

  /// After the hello: directions that the kernel does not carry switch to
  /// user space (SSL over the stream's own buffers). Call once.
  void to_user_space();
  bool user_rx() const { return !ktls_rx_; }
  bool user_tx() const { return !ktls_tx_; }
  bool kernel() const { return ktls_rx_ && ktls_tx_; }
  /// "TLSv1.3 TLS_AES_256_GCM_SHA384, kernel offload" (or "user space").
  std::string describe() const;
  const std::vector<uint8_t>& channel_binding() const { return binding_; }
  /// The daemon's public key (DER), for pinning the extra streams.
  const std::vector<uint8_t>& peer_key() const { return peer_key_; }

  // ---- user-space data path (after to_user_space) ----
  /// Ciphertext received from the socket, not yet consumed by SSL.
  std::vector<uint8_t> rx = std::vector<uint8_t>(256 * 1024);
  size_t rx_pos = 0, rx_len = 0;
  /// Ciphertext SSL produced, waiting for the next send (the send in flight
  /// has its own buffer, so this may grow while one is in the kernel).
  std::vector<uint8_t> tx_next;
  /// Decrypts into out: bytes decrypted; 0 = needs more ciphertext;
  /// ECONNRESET for close_notify, EBADMSG for a record that does not
  /// authenticate or any other TLS failure (the message says which).
  Result<size_t> read(uint8_t* out, size_t n);
  /// Encrypts all of data into tx_next.
  Status write(std::span<const uint8_t> data);

 private:
  TlsStream() = default;
  SSL* ssl_ = nullptr;
  bool ktls_rx_ = false, ktls_tx_ = false;
  std::string peer_;
  std::vector<uint8_t> binding_;
  std::vector<uint8_t> peer_key_;
};

/// OpenSSL's error queue as text (emptied), for messages.
std::string tls_errors();

}  // namespace rcp::tcp
