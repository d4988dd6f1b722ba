// hashpipe: the least a verified copy over TCP must do — socat's loop with rcp's
// chunk digest at both ends — as a row beside socat and rcp (bench/verified_pipe.sh).
//
//   hashpipe send FILE HOST PORT   read 1 MiB, xxh128 it (rcp's digest_of), send the
//                                  length and digest, then the bytes; one blocking loop
//   hashpipe recv FILE PORT        accept one connection; receive each chunk, digest it,
//                                  compare, write it to a temp file beside FILE; rename
//                                  the temp file onto FILE at the end (exit 1 on a
//                                  mismatch, the temp file removed)
//
// What it leaves out of rcp's work: the request round trips (the sink pulls), the pool,
// metadata, the protocol's messages. What it keeps: both ends hash every byte, the
// receiver writes only verified bytes and the file appears whole. So socat's rate is what
// no verification costs, and hashpipe's is the floor under what verification costs on this
// machine — rcp against it shows what rcp's own machinery costs. Same host only (the
// header is in host byte order). One thread per end, plain syscalls.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hash/digest.h"
#include "loopback.h"

namespace {

constexpr size_t kChunk = 1 << 20;  // rcp's default chunk, socat's -b 1048576

struct Header {
  uint32_t len;
  uint8_t digest[16];
};

// The receiver's temporary file, removed by every way out but the rename, so
// a failed run leaves nothing behind (as rcp's own receiver).
std::string g_tmp;

[[noreturn]] void die(const char* what) {
  const int err = errno;
  if (!g_tmp.empty()) ::unlink(g_tmp.c_str());
  std::fprintf(stderr, "hashpipe: %s: %s\n", what, std::strerror(err));
  std::exit(2);
}

rcp::Digest digest(const uint8_t* p, size_t n) { return rcp::digest_of(rcp::Checksum::xxh128, {p, n}); }

int send_file(const char* path, const char* host, const char* port) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) die(path);
  const int s = bench::connect_to(host, port);
  if (s < 0) die("connect");
  std::vector<uint8_t> buf(kChunk);
  for (off_t off = 0;;) {
    const ssize_t n = ::pread(fd, buf.data(), kChunk, off);
    if (n < 0) die("read");
    if (n == 0) break;
    Header h{static_cast<uint32_t>(n), {}};
    const rcp::Digest d = digest(buf.data(), static_cast<size_t>(n));
    std::memcpy(h.digest, d.bytes.data(), sizeof h.digest);
    iovec iov[2] = {{&h, sizeof h}, {buf.data(), static_cast<size_t>(n)}};
    size_t left = sizeof h + static_cast<size_t>(n);
    while (left > 0) {  // a blocking socket sends all, unless a signal cuts it short
      const ssize_t w = ::writev(s, iov, 2);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) die("send");
      left -= static_cast<size_t>(w);
      size_t sent = static_cast<size_t>(w);
      for (auto& v : iov) {
        const size_t k = std::min(v.iov_len, sent);
        v.iov_base = static_cast<uint8_t*>(v.iov_base) + k;
        v.iov_len -= k;
        sent -= k;
      }
    }
    off += n;
  }
  ::close(s);
  ::close(fd);
  return 0;
}

bool recv_all(int s, void* p, size_t n) {
  while (n > 0) {
    const ssize_t r = ::recv(s, p, n, MSG_WAITALL);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) die("receive");
    if (r == 0) return false;
    p = static_cast<uint8_t*>(p) + r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

int recv_file(const char* path, const char* port) {
  const int s = bench::accept_one(port);
  if (s < 0) die("listen or accept");
  std::string tmp = std::string(path) + ".hashpipe.XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) die("temp file");
  g_tmp = tmp;
  std::vector<uint8_t> buf(kChunk);
  for (;;) {
    Header h;
    if (!recv_all(s, &h, sizeof h)) break;
    if (h.len == 0 || h.len > kChunk) {
      ::unlink(g_tmp.c_str());
      std::fprintf(stderr, "hashpipe: chunk of %u bytes\n", h.len);
      return 1;
    }
    if (!recv_all(s, buf.data(), h.len)) die("short chunk");
    const rcp::Digest d = digest(buf.data(), h.len);
    if (std::memcmp(d.bytes.data(), h.digest, sizeof h.digest) != 0) {
      ::unlink(g_tmp.c_str());
      std::fprintf(stderr, "hashpipe: digest mismatch\n");
      return 1;
    }
    for (size_t done = 0; done < h.len;) {
      const ssize_t w = ::write(fd, buf.data() + done, h.len - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) die("write");
      done += static_cast<size_t>(w);
    }
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path) != 0) die("rename");
  g_tmp.clear();
  ::close(s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::strcmp(argv[1], "send") == 0) return send_file(argv[2], argv[3], argv[4]);
  if (argc == 4 && std::strcmp(argv[1], "recv") == 0) return recv_file(argv[2], argv[3]);
  std::fprintf(stderr, "usage: hashpipe send FILE HOST PORT | hashpipe recv FILE PORT\n");
  return 2;
}
