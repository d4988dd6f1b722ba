// treepipe: the least a verified, atomic copy of many small files over TCP must do, as a
// row beside tar | nc | tar x and rcp -r (bench/treefloor.sh). hashpipe's counterpart for
// trees: where hashpipe asks what verification costs one big file, treepipe asks what
// verification and atomic appearance cost a file when the files are small.
//
//   treepipe send DIR HOST PORT   every regular file of DIR (flat, ≤ 1 MiB each): open,
//   treepipe send DIR -           fstat, read, close, xxh128 (rcp's digest_of); a record
//                                 (mode, mtime, size, digest, name) and the bytes appended
//                                 to a 256 KiB buffer written when full: tar c's loop with
//                                 a digest. To the socket, or with "-" to stdout (| nc).
//   treepipe recv DIR PORT [MODE] accept one connection (or with "-" read stdin, nc | …);
//   treepipe recv DIR - [MODE]    for each record, by MODE:
//     atomic (default)  open O_TMPFILE, write, digest compared, futimens, linkat to its
//                       name, close: what rcp's sink does for a file, and nothing else
//     direct            open its name O_CREAT|O_EXCL, write, digest compared, futimens,
//                       close: tar x's calls plus the digest (a failed file is unlinked,
//                       but a reader could see it partly written: not atomic)
//
// What it leaves out of rcp's work: the sink pulling (READ requests and their replies), the
// pool, the protocol's messages per file (announcement, result), the walk's directories and
// options. So treepipe's files/s is what verified, atomic small files cost on this machine
// with one process a side (rcp's shape), and "nc -l | treepipe recv DIR -" is the same with
// the socket on a process of its own (tar | nc's shape). Same host only (host byte order).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

constexpr size_t kMaxFile = 1 << 20;
constexpr size_t kOutBuf = 256 << 10;  // what the sender writes at once (tar's 10 KiB, nc's 16 KiB; more costs no more)
constexpr size_t kInBuf = 2 * kMaxFile + 4096;

struct Record {  // followed by name_len bytes of name, then size bytes of data
  uint32_t mode;
  uint32_t name_len;  // 0 ends the stream
  uint64_t size;
  int64_t mtime_sec;
  int64_t mtime_nsec;
  uint8_t digest[16];
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "treepipe: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(2);
}

void digest_into(const uint8_t* p, size_t n, uint8_t out[16]) {
  const rcp::Digest d = rcp::digest_of(rcp::Checksum::xxh128, {p, n});
  std::memcpy(out, d.bytes.data(), 16);
}

void write_all(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) die("write");
    p += w;
    n -= static_cast<size_t>(w);
  }
}

int send_tree(const char* dir, int out) {
  const int dfd = ::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) die(dir);
  DIR* d = ::fdopendir(::dup(dfd));
  if (!d) die(dir);
  std::vector<uint8_t> buf(kOutBuf + sizeof(Record) + 256 + kMaxFile);
  size_t used = 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_type != DT_REG) continue;
    const int fd = ::openat(dfd, e->d_name, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || ::fstat(fd, &st) != 0) die(e->d_name);
    if (static_cast<size_t>(st.st_size) > kMaxFile) {
      errno = EFBIG;
      die(e->d_name);
    }
    const size_t name_len = std::strlen(e->d_name);
    Record r{st.st_mode & 07777, static_cast<uint32_t>(name_len), static_cast<uint64_t>(st.st_size),
             st.st_mtim.tv_sec, st.st_mtim.tv_nsec, {}};
    uint8_t* data = buf.data() + used + sizeof r + name_len;
    for (size_t got = 0; got < r.size;) {
      const ssize_t n = ::pread(fd, data + got, r.size - got, static_cast<off_t>(got));
      if (n <= 0) die(e->d_name);  // shorter than fstat said: the bench's tree changed under it
      got += static_cast<size_t>(n);
    }
    ::close(fd);
    digest_into(data, r.size, r.digest);
    std::memcpy(buf.data() + used, &r, sizeof r);
    std::memcpy(buf.data() + used + sizeof r, e->d_name, name_len);
    used += sizeof r + name_len + r.size;
    if (used >= kOutBuf) {
      write_all(out, buf.data(), used);
      used = 0;
    }
  }
  Record end{};
  std::memcpy(buf.data() + used, &end, sizeof end);
  write_all(out, buf.data(), used + sizeof end);
  ::closedir(d);
  ::close(dfd);
  return 0;
}

// Writes one received file; false (the partial file gone) on a digest mismatch.
bool place(int dfd, const Record& r, const std::string& name, const uint8_t* data, bool atomic) {
  const int fd = atomic ? ::openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, r.mode)
                        : ::openat(dfd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, r.mode);
  if (fd < 0) die("create " + name);
  if (r.size > 0) write_all(fd, data, r.size);
  uint8_t got[16];
  digest_into(data, r.size, got);
  if (std::memcmp(got, r.digest, sizeof got) != 0) {
    if (!atomic) ::unlinkat(dfd, name.c_str(), 0);
    ::close(fd);
    return false;
  }
  const timespec times[2] = {{r.mtime_sec, r.mtime_nsec}, {r.mtime_sec, r.mtime_nsec}};
  if (::futimens(fd, times) != 0) die("futimens " + name);
  if (atomic && ::linkat(fd, "", dfd, name.c_str(), AT_EMPTY_PATH) != 0) die("linkat " + name);
  if (::close(fd) != 0) die("close " + name);
  return true;
}

int recv_tree(const char* dir, int in, bool atomic) {
  const int dfd = ::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) die(dir);
  std::vector<uint8_t> buf(kInBuf);
  size_t have = 0, at = 0;
  auto fill = [&](size_t need) {  // at least `need` bytes from `at`, or the stream ended early
    if (have - at >= need) return;
    std::memmove(buf.data(), buf.data() + at, have - at);
    have -= at;
    at = 0;
    while (have < need) {
      const ssize_t n = ::read(in, buf.data() + have, buf.size() - have);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) die("read");
      if (n == 0) {
        std::fprintf(stderr, "treepipe: the stream ended inside a record\n");
        std::exit(1);
      }
      have += static_cast<size_t>(n);
    }
  };
  for (size_t files = 0;; ++files) {
    fill(sizeof(Record));
    Record r;
    std::memcpy(&r, buf.data() + at, sizeof r);
    if (r.name_len == 0) break;
    if (r.name_len > 255 || r.size > kMaxFile || (r.mode & ~07777u) != 0) {
      std::fprintf(stderr, "treepipe: record %zu out of bounds\n", files);
      return 1;
    }
    fill(sizeof r + r.name_len + r.size);
    const std::string name(reinterpret_cast<const char*>(buf.data() + at + sizeof r), r.name_len);
    if (name == "." || name == ".." || name.find_first_of(std::string("/\0", 2)) != std::string::npos) {
      std::fprintf(stderr, "treepipe: record %zu names no file of DIR\n", files);
      return 1;
    }
    if (!place(dfd, r, name, buf.data() + at + sizeof r + r.name_len, atomic)) {
      std::fprintf(stderr, "treepipe: %s: digest mismatch\n", name.c_str());
      return 1;
    }
    at += sizeof r + r.name_len + r.size;
  }
  ::close(dfd);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string verb = argc > 1 ? argv[1] : "";
  if (verb == "send" && (argc == 4 || argc == 5) && (argc == 5) != (std::strcmp(argv[3], "-") == 0)) {
    const int out = argc == 5 ? bench::connect_to(argv[3], argv[4]) : 1;
    if (out < 0) die("connect");
    return send_tree(argv[2], out);
  }
  const std::string mode = argc == 5 ? argv[4] : "atomic";
  if (verb == "recv" && (argc == 4 || argc == 5) && (mode == "atomic" || mode == "direct")) {
    const int in = std::strcmp(argv[3], "-") == 0 ? 0 : bench::accept_one(argv[3]);
    if (in < 0) die("listen or accept");
    return recv_tree(argv[2], in, mode == "atomic");
  }
  std::fprintf(stderr,
               "usage: treepipe send DIR HOST PORT | treepipe send DIR -\n"
               "       treepipe recv DIR PORT|- [atomic|direct]\n");
  return 2;
}
