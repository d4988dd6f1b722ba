// rawpeer: a hostile or broken TCP peer for the integration suite. It connects to a daemon
// and sends what a fuzzing attacker would — a truncated hello, a frame announcing a huge
// length, random bytes — to prove rcpd neither crashes nor allocates what it is told to.
// read-probe opens a get like a client, learns where the daemon's pool lies from the
// CHUNK_READYs of its first SLOTS chunks, then asks for bytes the pool does not hold (or, with
// "inside", bytes it does): the daemon must answer every such READ_REQ with a refusal (READ_ERR,
// or a hang-up), never with memory. Exit 0 when the answer is the expected one.
// flood asks for 4,000 chunks of the pool without reading a reply: the daemon must hang up.
//   rawpeer HOST PORT read-probe inside|past-end|at-end|below|far|wrap|bad-key|zero-key|flood MODULE/PATH SLOTS
// extra-joins N starts a session announcing 2 streams, then joins N more with its token: exactly
// one join must be accepted and the rest refused, and a join after the session ended too.
//   rawpeer HOST PORT truncated-hello|huge-frame|huge-read|random SEED|slow-hello|extra-joins N
// wrong-version sends a whole hello of another protocol version (the daemon must name it).
//   rawpeer HOST PORT wrong-version
// daemon is the other side: a broken daemon listening on HOST:PORT for one client (prints
// "listening" once it is), to prove the client's own checks. wrong-version: its hello speaks
// another protocol version. refuse-join: a session with a token whose every stream join is
// answered 0 (refused). Exit 0 once the client has hung up.
//   rawpeer HOST PORT daemon wrong-version|refuse-join
// idle opens N connections that never say a word and holds them SECONDS; slow-loris opens N that
// send a valid hello one byte every 4 s, until the daemon cuts them (or 40 s). With SPREAD > 0 the
// connections come from SPREAD loopback source addresses 127.0.1.1.. (so max_per_host does not
// stop them all; an IPv4 loopback daemon only). Both print what the daemon did with them.
//   rawpeer HOST PORT idle N SECONDS SPREAD [hello|tls]  (hello: say a valid hello, then nothing;
//                                                          tls: a hello asking for TLS, then nothing)
//   rawpeer HOST PORT slow-loris N SPREAD
// first-message sends, after a valid hello, a first message the daemon must refuse: a valid DONE
// (not OPEN), one of an unknown type, an AUTH_CHALLENGE (an auth message, not AUTH_REQUEST) or a
// truncated AUTH_REQUEST;
// prints the daemon's answer ("refused: TEXT" for an ERROR, or that it hung up).
//   rawpeer HOST PORT first-message done|unknown-type|auth-challenge|auth-truncated
// unread-answers opens a put and announces up to N files whose names the daemon refuses (each
// answered with a FILE_RESULT that quotes the 3,000-byte name), never reading an answer: the
// daemon must hang up once what it holds for this peer reaches its bound (transport/backlog.h),
// not hold every answer. Exit 0 when it hung up, printing after how many files.
//   rawpeer HOST PORT unread-answers MODULE/DIR N
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "wire/auth_messages.h"
#include "wire/codec.h"
#include "session/ledger.h"
#include "wire/messages.h"

namespace {

int dial(const char* host, const char* port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host, port, &hints, &res) != 0) return -1;
  int fd = socket(res->ai_family, SOCK_STREAM, 0);
  if (connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
    freeaddrinfo(res);
    return -1;
  }
  freeaddrinfo(res);
  return fd;
}

void send_all(int fd, const std::vector<uint8_t>& b) {
  size_t off = 0;
  while (off < b.size()) {
    ssize_t n = send(fd, b.data() + off, b.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;  // the daemon hung up: that is an acceptable answer
    off += static_cast<size_t>(n);
  }
}

std::vector<uint8_t> valid_hello(uint32_t flags = 0, uint16_t streams = 0, uint32_t max_chunk = 1 << 20) {
  rcp::wire::Hello h;
  h.ctrl_depth = 64;
  h.rd_init = h.rd_resp = 16;
  h.max_sge_rd = 16;
  h.checksums = 7;
  h.max_chunk = max_chunk;
  h.qps = streams;
  h.flags = flags;
  return rcp::wire::encode_hello(h);
}

/// Like dial, from loopback source address 127.0.1.`src` (0: any), connect
/// bounded to 3 s; -1 if it could not connect.
int dial_from(const char* host, const char* port, int src) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host, port, &hints, &res) != 0) return -1;
  int fd = socket(res->ai_family, SOCK_STREAM, 0);
  timeval tv{3, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (src > 0 && res->ai_family == AF_INET) {
    sockaddr_in me{};
    me.sin_family = AF_INET;
    me.sin_addr.s_addr = htonl((127u << 24) | (1u << 8) | static_cast<uint32_t>(src));
    if (bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof me) != 0) {
      std::perror("rawpeer: bind source address");
      close(fd);
      freeaddrinfo(res);
      return -1;
    }
  }
  if (connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
    close(fd);
    freeaddrinfo(res);
    return -1;
  }
  freeaddrinfo(res);
  return fd;
}

/// Reads what is waiting without blocking; false once the daemon has closed.
bool still_open(int fd) {
  char buf[256];
  for (;;) {
    ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (r > 0) continue;
    if (r == 0) return false;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

/// N connections that say nothing (or, with `say` "hello", a valid hello and
/// then nothing: sessions waiting for their OPEN; with "tls", a hello asking
/// for TLS and then no TLS handshake), held `secs` seconds.
int idle(const char* host, const char* port, int n, int secs, int spread, const std::string& say) {
  std::vector<int> fds;
  int failed = 0;
  for (int i = 0; i < n; ++i) {
    int fd = dial_from(host, port, spread > 0 ? 1 + i % spread : 0);
    if (fd < 0) {
      ++failed;
      continue;
    }
    if (say == "hello") send_all(fd, valid_hello(0, 1));
    if (say == "tls") send_all(fd, valid_hello(rcp::wire::kHelloTls, 1));
    fds.push_back(fd);
  }
  std::printf("rawpeer idle: %zu of %d connected (%d not)\n", fds.size(), n, failed);
  std::fflush(stdout);
  sleep(static_cast<unsigned>(secs));
  int open = 0;
  for (int fd : fds) {
    open += still_open(fd);
    close(fd);
  }
  std::printf("rawpeer idle: after %d s the daemon had closed %zu of them, %d still open\n", secs, fds.size() - open,
              open);
  return 0;
}

/// N connections sending a valid hello one byte every 4 s; reports how long
/// the longest survived. Exit 0 when the daemon cut every one of them.
int slow_loris(const char* host, const char* port, int n, int spread) {
  using Clock = std::chrono::steady_clock;
  const auto hello = valid_hello();
  struct Conn {
    int fd;
    size_t sent = 0;
    Clock::time_point start;
    double cut_after = -1;
  };
  std::vector<Conn> cs;
  for (int i = 0; i < n; ++i) {
    int fd = dial_from(host, port, spread > 0 ? 1 + i % spread : 0);
    if (fd >= 0) cs.push_back(Conn{fd, 0, Clock::now()});
  }
  const auto t0 = Clock::now();
  size_t open = cs.size();
  while (open > 0 && Clock::now() - t0 < std::chrono::seconds(40)) {
    for (auto& c : cs) {
      if (c.cut_after >= 0) continue;
      if (!still_open(c.fd) ||
          (c.sent < hello.size() && send(c.fd, &hello[c.sent], 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1)) {
        c.cut_after = std::chrono::duration<double>(Clock::now() - c.start).count();
        --open;
        continue;
      }
      ++c.sent;
    }
    // Wait 4 s, but notice a hang-up as it happens (to time it).
    const auto next = Clock::now() + std::chrono::seconds(4);
    while (open > 0 && Clock::now() < next) {
      std::vector<pollfd> pf;
      std::vector<Conn*> who;
      for (auto& c : cs)
        if (c.cut_after < 0) {
          pf.push_back(pollfd{c.fd, POLLIN | POLLRDHUP, 0});
          who.push_back(&c);
        }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
      if (poll(pf.data(), pf.size(), static_cast<int>(std::max<long long>(left, 0))) <= 0) break;
      for (size_t i = 0; i < pf.size(); ++i)
        if (pf[i].revents && !still_open(who[i]->fd)) {
          who[i]->cut_after = std::chrono::duration<double>(Clock::now() - who[i]->start).count();
          --open;
        }
    }
  }
  double longest = 0;
  size_t max_sent = 0;
  for (auto& c : cs) {
    longest = std::max(longest, c.cut_after);
    max_sent = std::max(max_sent, c.sent);
    close(c.fd);
  }
  std::printf("rawpeer slow-loris: %zu connections, %zu cut by the daemon, %zu still open; longest lived %.1f s, "
              "sent at most %zu hello bytes\n",
              cs.size(), cs.size() - open, open, longest, max_sent);
  return open == 0 && !cs.empty() ? 0 : 1;
}

/// Reads exactly n bytes (5 s per recv); false on EOF, error or timeout.
bool recv_exact(int fd, uint8_t* p, size_t n) {
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  size_t got = 0;
  while (got < n) {
    ssize_t r = recv(fd, p + got, n - got, 0);
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

/// One join with `token`: true if the daemon echoed the token (accepted),
/// false if it answered 0 or hung up (refused). The socket stays open in fds.
bool join(const char* host, const char* port, uint64_t token, std::vector<int>& fds) {
  int fd = dial(host, port);
  if (fd < 0) return false;
  fds.push_back(fd);
  auto out = valid_hello(rcp::wire::kHelloJoin, 2);
  rcp::wire::Writer(out).u64(token);
  send_all(fd, out);
  uint8_t in[rcp::wire::kHelloSize + 8];
  if (!recv_exact(fd, in, sizeof in)) return false;
  return get_u64(in + rcp::wire::kHelloSize) == token;
}

/// A session announcing 2 streams, then n joins; then one more after it ended.
int extra_joins(const char* host, const char* port, int n) {
  int first = dial(host, port);
  if (first < 0) return 1;
  send_all(first, valid_hello(0, 2));
  uint8_t in[rcp::wire::kHelloSize + 8];
  if (!recv_exact(first, in, sizeof in)) {
    std::printf("rawpeer extra-joins: no hello and token from the daemon\n");
    return 1;
  }
  const uint64_t token = get_u64(in + rcp::wire::kHelloSize);
  std::vector<int> fds;
  int accepted = 0, refused = 0;
  for (int i = 0; i < n; ++i) (join(host, port, token, fds) ? accepted : refused)++;
  // End the session, give the daemon a moment to notice, then try again.
  close(first);
  for (int fd : fds) close(fd);
  fds.clear();
  usleep(1500 * 1000);
  const bool late = join(host, port, token, fds);
  for (int fd : fds) close(fd);
  std::printf("rawpeer extra-joins: announced 2 streams, %d joins: %d accepted, %d refused; join after the end %s\n",
              n, accepted, refused, late ? "ACCEPTED" : "refused");
  return accepted == 1 && refused == n - 1 && !late ? 0 : 1;
}

/// Reads until the daemon closes (or 5 s pass); returns bytes received.
size_t drain(int fd) {
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[4096];
  size_t total = 0;
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return total;
    total += static_cast<size_t>(n);
  }
}

// The TCP transport's frames: kind u8, pad u8, pad u16, len u32, cookie u64, then len bytes.
constexpr uint8_t kFrameMsg = 1, kFrameReadReq = 2, kFrameReadResp = 3, kFrameReadErr = 4;
struct Frame {
  uint8_t kind = 0;
  uint32_t len = 0;
  uint64_t cookie = 0;
  std::vector<uint8_t> payload;
};

std::vector<uint8_t> frame(uint8_t kind, uint64_t cookie, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> out;
  rcp::wire::Writer w(out);
  w.u8(kind);
  w.u8(0);
  w.u16(0);
  w.u32(static_cast<uint32_t>(payload.size()));
  w.u64(cookie);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

/// The next frame, payload included (read replies up to 64 MiB); false when the daemon hung up.
bool next_frame(int fd, Frame& f) {
  uint8_t h[16];
  if (!recv_exact(fd, h, sizeof h)) return false;
  rcp::wire::Reader r({h, sizeof h});
  f.kind = r.u8();
  r.u8();
  r.u16();
  f.len = r.u32();
  f.cookie = r.u64();
  if (f.len > rcp::wire::kMaxChunk) return false;
  f.payload.resize(f.len);
  return recv_exact(fd, f.payload.data(), f.len);
}

/// flood: valid READ_REQs for a whole chunk of the lent pool, 4,000 of them, while reading none
/// of the replies (a client that asks on without reading). The daemon owes them faster than the
/// socket takes them; it must cut the connection, not queue every answer. Exit 0 when it hung up
/// before serving them all.
int read_flood(int fd, uint64_t base, uint32_t chunk, uint32_t key) {
  constexpr uint32_t kRequests = 4000;
  std::vector<uint8_t> all;
  for (uint32_t i = 1; i <= kRequests; ++i) {
    std::vector<uint8_t> req;
    rcp::wire::Writer w(req);
    w.u64(base);
    w.u32(key);
    w.u32(chunk);
    std::vector<uint8_t> f = frame(kFrameReadReq, i, req);
    all.insert(all.end(), f.begin(), f.end());
  }
  send_all(fd, all);
  uint32_t served = 0;
  Frame f;
  while (served < kRequests && next_frame(fd, f))
    if (f.kind == kFrameReadResp) ++served;
  std::printf("rawpeer read-probe flood: %u reads of %u bytes asked, none read until the end: daemon %s after serving %u\n",
              kRequests, chunk, served < kRequests ? "hung up" : "kept the connection", served);
  return served < kRequests ? 0 : 1;
}

int read_probe(int fd, const std::string& where, const std::string& path, uint32_t slots) {
  // Hello both ways: the daemon's is followed by its session token.
  send_all(fd, valid_hello(0, 0, 64 * 1024));  // the daemon's chunks (and slots) are 64 KiB
  std::vector<uint8_t> theirs(rcp::wire::kHelloTokenSize);
  if (!recv_exact(fd, theirs.data(), theirs.size())) {
    std::fprintf(stderr, "rawpeer: no hello from the daemon\n");
    return 1;
  }
  rcp::wire::Open open;
  open.op = rcp::wire::Op::get;
  open.path = path;
  std::vector<uint8_t> msg;
  if (!rcp::wire::encode(open, msg).ok()) return 2;
  send_all(fd, frame(kFrameMsg, 0, msg));
  // Every slot of the pool is lent before any comes back: their chunks map the pool.
  std::vector<rcp::wire::ChunkReady> chunks;
  Frame f;
  while (chunks.size() < slots) {
    if (!next_frame(fd, f) || f.kind != kFrameMsg) {
      std::fprintf(stderr, "rawpeer: the daemon hung up before lending %u slots\n", slots);
      return 1;
    }
    auto m = rcp::wire::decode(f.payload);
    if (!m.ok()) return 1;
    if (auto* e = std::get_if<rcp::wire::ErrorMsg>(&m.value())) {
      std::fprintf(stderr, "rawpeer: the daemon refused the get: %s\n", e->message.c_str());
      return 1;
    }
    if (auto* c = std::get_if<rcp::wire::ChunkReady>(&m.value())) chunks.push_back(*c);
  }
  uint64_t base = ~uint64_t{0}, end = 0;
  const uint32_t chunk = chunks.front().length;
  const uint32_t key = chunks.front().rkey;
  for (auto& c : chunks) {
    base = std::min(base, c.addr);
    end = std::max(end, c.addr + c.length);
    if (c.length != chunk || c.rkey != key) {
      std::fprintf(stderr, "rawpeer: chunks of unequal length or keys: use a file of at least %u full chunks\n", slots);
      return 1;
    }
  }
  if (end - base != uint64_t{slots} * chunk) {
    std::fprintf(stderr, "rawpeer: the %u chunks do not tile one pool\n", slots);
    return 1;
  }
  if (where == "flood") return read_flood(fd, base, chunk, key);
  uint64_t addr = base;
  uint32_t len = chunk, k = key;
  if (where == "inside") {
    addr = base + chunk;
  } else if (where == "past-end") {  // the last slot and one byte more
    addr = end - chunk + 1;
  } else if (where == "at-end") {  // one byte, just past the pool
    addr = end;
    len = 1;
  } else if (where == "below") {  // from one byte before the pool
    addr = base - 1;
  } else if (where == "far") {  // memory the connection never registered
    addr = base + (uint64_t{1} << 32);
    len = 4096;
  } else if (where == "wrap") {  // a range whose end wraps around 2^64
    addr = ~uint64_t{0} - 4095;
    len = 8192;
  } else if (where == "bad-key") {
    k = key + 1;
  } else if (where == "zero-key") {
    k = 0;
  } else {
    std::fprintf(stderr, "rawpeer: unknown probe %s\n", where.c_str());
    return 2;
  }
  std::vector<uint8_t> req;
  rcp::wire::Writer w(req);
  w.u64(addr);
  w.u32(k);
  w.u32(len);
  constexpr uint64_t kCookie = 0x5eed;
  send_all(fd, frame(kFrameReadReq, kCookie, req));
  // The answer: skip control messages, stop at the reply to our cookie or a hang-up.
  const char* answer = "closed the connection";
  bool served = false;
  while (next_frame(fd, f)) {
    if (f.kind == kFrameMsg) continue;
    if (f.cookie != kCookie) continue;
    if (f.kind == kFrameReadResp) {
      served = true;
      answer = "sent the bytes";
    } else if (f.kind == kFrameReadErr) {
      answer = "refused it (READ_ERR)";
    } else {
      answer = "sent an unknown frame";
    }
    break;
  }
  const bool want_served = where == "inside";
  std::printf("rawpeer read-probe %s: read of %u bytes at %#llx (key %u; pool [%#llx, %#llx) key %u): daemon %s\n",
              where.c_str(), len, static_cast<unsigned long long>(addr), k, static_cast<unsigned long long>(base),
              static_cast<unsigned long long>(end), key, answer);
  return served == want_served ? 0 : 1;
}

}  // namespace

/// Sends a get for `path` and the further paths `more` (module-relative; with
/// `relative`, --files-from's form) exactly as given, bypassing the client's
/// own cleaning, and prints what comes back: "refused: TEXT" for an ERROR,
/// "sent: NAME" for each FILE_BEGIN, "skipped: TEXT" for each FILE_SKIPPED.
/// A valid hello, the daemon's token, then `open`: 0 when sent, 1 if the
/// daemon did not answer the hello, 2 if `open` does not encode.
int hello_and_open(int fd, const rcp::wire::Open& open) {
  send_all(fd, valid_hello(0, 0, 64 * 1024));
  std::vector<uint8_t> theirs(rcp::wire::kHelloTokenSize);
  if (!recv_exact(fd, theirs.data(), theirs.size())) return 1;
  std::vector<uint8_t> msg;
  if (!rcp::wire::encode(open, msg).ok()) return 2;
  send_all(fd, frame(kFrameMsg, 0, msg));
  return 0;
}

int open_get(int fd, const std::string& path, std::vector<std::string> more, bool relative) {
  rcp::wire::Open open;
  open.op = rcp::wire::Op::get;
  open.path = path;
  open.more = std::move(more);
  if (relative) open.flags |= rcp::wire::kOpenRelative;
  if (int rc = hello_and_open(fd, open); rc != 0) return rc;
  Frame f;
  while (next_frame(fd, f)) {
    if (f.kind != kFrameMsg) continue;
    auto m = rcp::wire::decode(f.payload);
    if (!m.ok()) return 1;
    if (auto* e = std::get_if<rcp::wire::ErrorMsg>(&m.value())) {
      std::printf("refused: %s\n", e->message.c_str());
      return 0;
    }
    if (auto* b = std::get_if<rcp::wire::FileBegin>(&m.value())) std::printf("sent: %s\n", b->name.c_str());
    if (auto* w = std::get_if<rcp::wire::SmallFile>(&m.value())) std::printf("sent: %s\n", w->begin.name.c_str());
    if (auto* k = std::get_if<rcp::wire::FileSkipped>(&m.value())) std::printf("skipped: %s\n", k->message.c_str());
    if (std::holds_alternative<rcp::wire::Finish>(m.value())) return 0;
  }
  return 0;
}

int unread_answers(int fd, const std::string& path, uint32_t n) {
  rcp::wire::Open open;
  open.op = rcp::wire::Op::put;
  open.path = path;
  open.flags = rcp::wire::kOpenMulti;
  if (int rc = hello_and_open(fd, open); rc != 0) return rc;
  Frame f;
  if (!next_frame(fd, f) || f.kind != kFrameMsg) return 1;
  auto ok = rcp::wire::decode(f.payload);
  if (!ok.ok() || !std::holds_alternative<rcp::wire::OpenOk>(ok.value())) {
    std::printf("the put was not opened\n");
    return 1;
  }
  const rcp::wire::Digest empty = rcp::FileLedger(rcp::Checksum::xxh128, 0).file_digest();
  const std::string stem = "../" + std::string(3000, 'u');
  std::vector<uint8_t> msg;
  for (uint32_t id = 1; id <= n; ++id) {
    std::vector<uint8_t> out;
    for (const rcp::wire::Message& m : {rcp::wire::Message{rcp::wire::FileBegin{id, 0, 0100644, 0, stem + std::to_string(id)}},
                                        rcp::wire::Message{rcp::wire::FileEnd{id, 0, empty}}}) {
      msg.clear();
      if (!rcp::wire::encode(m, msg).ok()) return 2;
      auto fr = frame(kFrameMsg, 0, msg);
      out.insert(out.end(), fr.begin(), fr.end());
    }
    for (size_t off = 0; off < out.size();) {
      const ssize_t k = send(fd, out.data() + off, out.size() - off, MSG_NOSIGNAL);
      if (k <= 0) {
        std::printf("the daemon hung up after %u files announced\n", id - 1);
        return 0;
      }
      off += static_cast<size_t>(k);
    }
  }
  // All sent: the daemon may still be answering; it must hang up without being read.
  pollfd p{fd, POLLRDHUP, 0};
  if (poll(&p, 1, 30000) == 1) {
    std::printf("the daemon hung up after all %u files were announced\n", n);
    return 0;
  }
  std::printf("the daemon held every answer to %u files and did not hang up\n", n);
  return 1;
}

int first_message(int fd, const std::string& kind) {
  send_all(fd, valid_hello(0, 0, 64 * 1024));
  std::vector<uint8_t> theirs(rcp::wire::kHelloTokenSize);
  if (!recv_exact(fd, theirs.data(), theirs.size())) return 1;
  std::vector<uint8_t> msg;
  if (kind == "done" || kind == "unknown-type") {
    if (!rcp::wire::encode(rcp::wire::Done{}, msg).ok()) return 2;
    if (kind == "unknown-type") msg[6] = 0x03, msg[7] = 0xE7;  // type 999
  } else if (kind == "auth-challenge") {
    rcp::wire::AuthChallenge c;
    c.server_nonce.fill(7);
    if (!rcp::wire::encode_auth(c, msg).ok()) return 2;
  } else if (kind == "auth-truncated") {
    rcp::wire::AuthRequest a;
    a.user = "alice";
    a.module = "data";
    a.client_nonce.fill(7);
    if (!rcp::wire::encode_auth(a, msg).ok()) return 2;
    msg.resize(msg.size() - 5);  // the nonce cut short, the length field saying so
    const uint32_t len = static_cast<uint32_t>(msg.size() - rcp::wire::kHeaderSize);
    for (int i = 0; i < 4; ++i) msg[8 + i] = static_cast<uint8_t>(len >> (24 - 8 * i));
  } else {
    std::fprintf(stderr, "rawpeer: unknown first message %s\n", kind.c_str());
    return 2;
  }
  send_all(fd, frame(kFrameMsg, 0, msg));
  Frame f;
  while (next_frame(fd, f)) {
    if (f.kind != kFrameMsg) continue;
    auto m = rcp::wire::decode(f.payload);
    if (m.ok()) {
      if (auto* e = std::get_if<rcp::wire::ErrorMsg>(&m.value())) {
        std::printf("rawpeer first-message %s: refused: %s\n", kind.c_str(), e->message.c_str());
        return 0;
      }
    }
    std::printf("rawpeer first-message %s: the daemon answered something else\n", kind.c_str());
    return 1;
  }
  std::printf("rawpeer first-message %s: the daemon hung up\n", kind.c_str());
  return 0;
}

/// A hello of the protocol version after this one.
std::vector<uint8_t> wrong_version_hello(uint32_t flags = 0) {
  auto out = valid_hello(flags, 1);
  const uint16_t v = static_cast<uint16_t>(((out[4] << 8) | out[5]) + 1);  // big-endian, after the magic
  out[4] = static_cast<uint8_t>(v >> 8);
  out[5] = static_cast<uint8_t>(v);
  return out;
}

/// The broken daemon (see the header): serves connections until the client
/// hangs up on the first one.
int fake_daemon(const char* host, const char* port, const std::string& how) {
  if (how != "wrong-version" && how != "refuse-join") {
    std::fprintf(stderr, "rawpeer: daemon wrong-version|refuse-join\n");
    return 2;
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (getaddrinfo(host, port, &hints, &res) != 0) return 1;
  int ls = socket(res->ai_family, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(ls, res->ai_addr, res->ai_addrlen) != 0 || listen(ls, 8) != 0) {
    std::perror("rawpeer daemon: bind");
    freeaddrinfo(res);
    return 1;
  }
  freeaddrinfo(res);
  std::printf("rawpeer daemon %s: listening\n", how.c_str());
  std::fflush(stdout);
  std::vector<int> conns;
  int joins = 0;
  for (;;) {
    pollfd pf{ls, POLLIN, 0};
    if (poll(&pf, 1, 20000) <= 0) break;
    int c = accept(ls, nullptr, nullptr);
    if (c < 0) break;
    conns.push_back(c);
    if (how == "wrong-version") {
      send_all(c, wrong_version_hello(rcp::wire::kHelloToken));
      break;
    }
    send_all(c, valid_hello(rcp::wire::kHelloToken, 1));
    uint8_t in[rcp::wire::kHelloSize];
    if (!recv_exact(c, in, sizeof in)) break;
    auto theirs = rcp::wire::decode_hello({in, sizeof in});
    if (!theirs.ok()) break;
    std::vector<uint8_t> answer;
    if (theirs->flags & rcp::wire::kHelloJoin) {
      uint8_t token[8];
      if (!recv_exact(c, token, sizeof token)) break;
      rcp::wire::Writer(answer).u64(0);  // refused
      ++joins;
    } else {
      rcp::wire::Writer(answer).u64(0x5eed5eed5eed5eedull);
    }
    send_all(c, answer);
    if (joins > 0) break;
  }
  const size_t got = conns.empty() ? 0 : drain(conns.front());
  std::printf("rawpeer daemon %s: %zu connection(s), %d join(s) refused; the client hung up after %zu more bytes\n",
              how.c_str(), conns.size(), joins, got);
  for (int c : conns) close(c);
  close(ls);
  return conns.empty() ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: rawpeer HOST PORT MODE [SEED]\n");
    return 2;
  }
  if (std::string(argv[3]) == "idle" && argc > 6)
    return idle(argv[1], argv[2], std::atoi(argv[4]), std::atoi(argv[5]), std::atoi(argv[6]), argc > 7 ? argv[7] : "");
  if (std::string(argv[3]) == "slow-loris" && argc > 5)
    return slow_loris(argv[1], argv[2], std::atoi(argv[4]), std::atoi(argv[5]));
  if (std::string(argv[3]) == "daemon" && argc > 4) return fake_daemon(argv[1], argv[2], argv[4]);
  if (std::string(argv[3]) == "extra-joins") return extra_joins(argv[1], argv[2], argc > 4 ? std::atoi(argv[4]) : 40);
  int fd = dial(argv[1], argv[2]);
  if (fd < 0) {
    std::perror("rawpeer: connect");
    return 1;
  }
  std::string mode = argv[3];
  if ((mode == "open-get" || mode == "open-get-relative") && argc > 4) {
    int rc = open_get(fd, argv[4], std::vector<std::string>(argv + 5, argv + argc), mode == "open-get-relative");
    close(fd);
    return rc;
  }
  if (mode == "unread-answers" && argc > 5) {
    int rc = unread_answers(fd, argv[4], static_cast<uint32_t>(std::atoi(argv[5])));
    close(fd);
    return rc;
  }
  if (mode == "first-message" && argc > 4) {
    int rc = first_message(fd, argv[4]);
    close(fd);
    return rc;
  }
  if (mode == "read-probe") {
    if (argc < 7) {
      std::fprintf(stderr, "usage: rawpeer HOST PORT read-probe WHERE MODULE/PATH SLOTS\n");
      return 2;
    }
    int rc = read_probe(fd, argv[4], argv[5], static_cast<uint32_t>(std::atoi(argv[6])));
    close(fd);
    return rc;
  }
  std::vector<uint8_t> out;
  if (mode == "truncated-hello") {
    out = valid_hello();
    out.resize(13);
  } else if (mode == "wrong-version") {
    out = wrong_version_hello();
  } else if (mode == "huge-frame" || mode == "huge-read") {
    out = valid_hello();
    rcp::wire::Writer w(out);
    w.u8(mode == "huge-frame" ? 1 : 3);  // a control frame, or a read response nobody asked for
    w.u8(0);
    w.u16(0);
    w.u32(0xfffffff0u);  // "4 GiB follow"
    w.u64(1);
    for (int i = 0; i < 4096; ++i) out.push_back(0xab);
  } else if (mode == "random") {
    std::mt19937 rng(argc > 4 ? static_cast<unsigned>(std::atoi(argv[4])) : 1u);
    size_t n = 16 + rng() % 20000;
    for (size_t i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>(rng()));
    if (rng() % 2) {  // half the time behind a valid hello, to reach the frame parser
      auto h = valid_hello();
      out.insert(out.begin(), h.begin(), h.end());
    }
  } else {
    std::fprintf(stderr, "rawpeer: unknown mode %s\n", mode.c_str());
    return 2;
  }
  send_all(fd, out);
  shutdown(fd, SHUT_WR);
  size_t got = drain(fd);
  std::printf("rawpeer %s: sent %zu bytes, daemon answered %zu bytes and closed\n", mode.c_str(), out.size(), got);
  close(fd);
  return 0;
}
