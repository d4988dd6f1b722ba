// TLS 1.3 for TCP streams (tls.h): contexts, the handshake under the
// hello's deadline, and the user-space record path over a stream's buffers.
#include "transport/tcp/tls.h"

#include <fcntl.h>
#include <poll.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstring>
#include <fmt/core.h>

namespace rcp::tcp {
namespace {

/// A cancelled hello notices within this long (the daemon evicts the oldest
/// pending hello when a new connection needs its place): wait_io polls in
/// slices this long while the hello can be cancelled.
constexpr int kCancelSliceMs = 100;
constexpr char kExporterLabel[] = "EXPORTER-rcp-channel-binding";

/// The socket non-blocking while SSL works on it directly (the hello's
/// socket is blocking: io_uring then never sees EAGAIN), restored after.
class NonBlocking {
 public:
  explicit NonBlocking(int fd) : fd_(fd), flags_(::fcntl(fd, F_GETFL)) {
    if (flags_ >= 0) ::fcntl(fd_, F_SETFL, flags_ | O_NONBLOCK);
  }
  ~NonBlocking() {
    if (flags_ >= 0) ::fcntl(fd_, F_SETFL, flags_);
  }

 private:
  int fd_, flags_;
};

/// Waits for what an SSL call asked for; a hard failure is an error naming `what`.
Status retry_or_fail(SSL* ssl, int rc, int fd, const Deadline& dl, const std::string& peer, const char* what) {
  const int e = SSL_get_error(ssl, rc);
  if (e == SSL_ERROR_WANT_READ) return wait_io(fd, false, dl, peer);
  if (e == SSL_ERROR_WANT_WRITE) return wait_io(fd, true, dl, peer);
  if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)) {
    ERR_clear_error();
    return make_error(ECONNRESET, fmt::format("peer {} closed the connection during the TLS {}", peer, what));
  }
  return make_error(EPROTO, fmt::format("TLS {} with {} failed: {}", what, peer, tls_errors()));
}

// ---- the BIO over a stream's own buffers (user-space data path) ----

int buf_write(BIO* b, const char* data, size_t n, size_t* written) {
  auto* t = static_cast<TlsStream*>(BIO_get_data(b));
  t->tx_next.insert(t->tx_next.end(), data, data + n);
  *written = n;
  return 1;
}

int buf_read(BIO* b, char* out, size_t n, size_t* got) {
  BIO_clear_retry_flags(b);
  auto* t = static_cast<TlsStream*>(BIO_get_data(b));
  const size_t avail = t->rx_len - t->rx_pos;
  if (avail == 0) {
    BIO_set_retry_read(b);
    *got = 0;
    return 0;
  }
  const size_t k = std::min(avail, n);
  std::memcpy(out, t->rx.data() + t->rx_pos, k);
  t->rx_pos += k;
  *got = k;
  return 1;
}

long buf_ctrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }

BIO_METHOD* buffer_method() {
  static BIO_METHOD* m = [] {
    BIO_METHOD* bm = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "rcp stream buffers");
    BIO_meth_set_write_ex(bm, buf_write);
    BIO_meth_set_read_ex(bm, buf_read);
    BIO_meth_set_ctrl(bm, buf_ctrl);
    BIO_meth_set_create(bm, [](BIO* b) {
      BIO_set_init(b, 1);
      return 1;
    });
    return bm;
  }();
  return m;
}

Result<SSL_CTX*> base_context(bool server) {
  SSL_CTX* c = SSL_CTX_new(TLS_method());
  if (!c) return make_error(ENOMEM, "TLS context: " + tls_errors());
  SSL_CTX_set_min_proto_version(c, TLS1_3_VERSION);
  SSL_CTX_set_max_proto_version(c, TLS1_3_VERSION);
  // AES-128-GCM first: the fastest with AES-NI, and what kTLS offloads everywhere.
  SSL_CTX_set_ciphersuites(c, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256");
  // No tickets: no post-handshake record that a kTLS receive would choke on,
  // and no resumption state to keep.
  SSL_CTX_set_options(c, SSL_OP_ENABLE_KTLS | SSL_OP_NO_TICKET);
  SSL_CTX_set_num_tickets(c, 0);
  SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
  if (!server) SSL_CTX_set_verify(c, SSL_VERIFY_NONE, nullptr);  // see tls.h: trust comes from authentication
  return c;
}

}  // namespace

std::string tls_errors() {
  std::string s;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!s.empty()) s += "; ";
    s += buf;
  }
  return s.empty() ? "unknown TLS error" : s;
}

Status wait_io(int fd, bool writing, const Deadline& dl, const std::string& peer) {
  for (;;) {
    if (dl.cancel && dl.cancel->load()) return make_error(ECANCELED, "hello with " + peer + " evicted for a newer connection");
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(dl.at - Clock::now()).count();
    if (left <= 0) return make_error(ETIMEDOUT, "hello with " + peer);
    const int wait = static_cast<int>(std::min<long long>(left, dl.cancel ? kCancelSliceMs : left));
    pollfd pfd{fd, static_cast<short>(writing ? POLLOUT : POLLIN), 0};
    const int pr = ::poll(&pfd, 1, wait);
    if (pr > 0) return {};
    if (pr < 0 && errno != EINTR) return sys_error("poll " + peer);
  }
}

// ---- contexts ----

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

Result<std::shared_ptr<TlsContext>> TlsContext::client() {
  RCP_ASSIGN(SSL_CTX * c, base_context(false));
  return std::shared_ptr<TlsContext>(new TlsContext(c, false));
}

Result<std::shared_ptr<TlsContext>> TlsContext::server() {
  RCP_ASSIGN(SSL_CTX * c, base_context(true));
  std::shared_ptr<TlsContext> ctx(new TlsContext(c, true));
  EVP_PKEY* key = EVP_EC_gen("P-256");
  if (!key) return make_error(EIO, "TLS: cannot generate the daemon's key: " + tls_errors());
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key_guard(key, EVP_PKEY_free);
  X509* x = X509_new();
  if (!x) return make_error(ENOMEM, "TLS: " + tls_errors());
  std::unique_ptr<X509, decltype(&X509_free)> x_guard(x, X509_free);
  uint8_t serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) return make_error(EIO, "TLS: no random serial: " + tls_errors());
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  bool ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != nullptr;
  BN_free(bn);
  X509_NAME* name = X509_get_subject_name(x);
  ok = ok && X509_set_version(x, 2) == 1 && X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
       X509_gmtime_adj(X509_getm_notAfter(x), 10L * 365 * 86400) &&
       X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("rcpd"), -1, -1,
                                  0) == 1 &&
       X509_set_issuer_name(x, name) == 1 && X509_set_pubkey(x, key) == 1 && X509_sign(x, key, EVP_sha256()) > 0 &&
       SSL_CTX_use_certificate(c, x) == 1 && SSL_CTX_use_PrivateKey(c, key) == 1;
  if (!ok) return make_error(EIO, "TLS: cannot make the daemon's certificate: " + tls_errors());
  return ctx;
}

// ---- one stream ----

TlsStream::~TlsStream() { SSL_free(ssl_); }

Result<std::unique_ptr<TlsStream>> TlsStream::handshake(const TlsContext& ctx, int fd, const Deadline& dl,
                                                        const std::string& peer, std::span<const uint8_t> pin) {
  std::unique_ptr<TlsStream> t(new TlsStream());
  t->peer_ = peer;
  t->ssl_ = SSL_new(ctx.get());
  if (!t->ssl_ || SSL_set_fd(t->ssl_, fd) != 1) return make_error(ENOMEM, "TLS session: " + tls_errors());
  if (ctx.is_server()) {
    SSL_set_accept_state(t->ssl_);
  } else {
    SSL_set_connect_state(t->ssl_);
  }
  NonBlocking nb(fd);
  ERR_clear_error();
  for (;;) {
    const int rc = SSL_do_handshake(t->ssl_);
    if (rc == 1) break;
    RCP_TRY(retry_or_fail(t->ssl_, rc, fd, dl, peer, "handshake"));
  }
  t->binding_.resize(kChannelBindingSize);
  if (SSL_export_keying_material(t->ssl_, t->binding_.data(), t->binding_.size(), kExporterLabel,
                                 sizeof kExporterLabel - 1, nullptr, 0, 0) != 1)
    return make_error(EPROTO, "TLS exporter: " + tls_errors());
  if (!ctx.is_server()) {
    X509* cert = SSL_get1_peer_certificate(t->ssl_);
    if (!cert) return make_error(EPROTO, "TLS: " + peer + " presented no certificate");
    EVP_PKEY* pk = X509_get0_pubkey(cert);
    unsigned char* der = nullptr;
    const int len = pk ? i2d_PUBKEY(pk, &der) : -1;
    X509_free(cert);
    if (len <= 0) return make_error(EPROTO, "TLS: cannot read the public key of " + peer);
    t->peer_key_.assign(der, der + len);
    OPENSSL_free(der);
    if (!pin.empty() && !std::equal(pin.begin(), pin.end(), t->peer_key_.begin(), t->peer_key_.end()))
      return make_error(EKEYREJECTED, "TLS: " + peer + " presented a different key than the session's first stream "
                                      "(a man in the middle on this stream?)");
  }
  t->ktls_tx_ = BIO_get_ktls_send(SSL_get_wbio(t->ssl_));
  t->ktls_rx_ = BIO_get_ktls_recv(SSL_get_rbio(t->ssl_));
  return t;
}

Status TlsStream::write_exact(std::span<const uint8_t> data, const Deadline& dl) {
  const int fd = SSL_get_fd(ssl_);
  NonBlocking nb(fd);
  ERR_clear_error();
  size_t done = 0;
  while (done < data.size()) {
    size_t w = 0;
    const int rc = SSL_write_ex(ssl_, data.data() + done, data.size() - done, &w);
    if (rc == 1) {
      done += w;
      continue;
    }
    RCP_TRY(retry_or_fail(ssl_, rc, fd, dl, peer_, "write"));
  }
  return {};
}

Status TlsStream::read_exact(std::span<uint8_t> out, const Deadline& dl) {
  const int fd = SSL_get_fd(ssl_);
  NonBlocking nb(fd);
  ERR_clear_error();
  size_t done = 0;
  while (done < out.size()) {
    size_t r = 0;
    const int rc = SSL_read_ex(ssl_, out.data() + done, out.size() - done, &r);
    if (rc == 1) {
      done += r;
      continue;
    }
    RCP_TRY(retry_or_fail(ssl_, rc, fd, dl, peer_, "read"));
  }
  return {};
}

void TlsStream::to_user_space() {
  if (kernel()) return;
  BIO* b = BIO_new(buffer_method());
  BIO_set_data(b, this);
  SSL_set_bio(ssl_, b, b);  // one BIO both ways: one reference, freed with the SSL
}

std::string TlsStream::describe() const {
  const char* where = kernel() ? "kernel TLS offload" : (ktls_rx_ || ktls_tx_) ? "kernel TLS one way, user space the other" : "user-space TLS";
  return fmt::format("{} {}, {}", SSL_get_version(ssl_), SSL_get_cipher_name(ssl_), where);
}

Result<size_t> TlsStream::read(uint8_t* out, size_t n) {
  size_t got = 0;
  ERR_clear_error();
  const int rc = SSL_read_ex(ssl_, out, n, &got);
  if (rc == 1) return got;
  const int e = SSL_get_error(ssl_, rc);
  if (e == SSL_ERROR_WANT_READ) return size_t{0};
  if (e == SSL_ERROR_ZERO_RETURN) return make_error(ECONNRESET, "peer " + peer_ + " ended TLS (close_notify)");
  return make_error(EBADMSG, fmt::format("TLS record from {} refused: {}", peer_, tls_errors()));
}

Status TlsStream::write(std::span<const uint8_t> data) {
  size_t done = 0;
  ERR_clear_error();
  while (done < data.size()) {
    size_t w = 0;
    if (SSL_write_ex(ssl_, data.data() + done, data.size() - done, &w) != 1)
      return make_error(EIO, fmt::format("TLS encryption for {}: {}", peer_, tls_errors()));
    done += w;
  }
  return {};
}

}  // namespace rcp::tcp
