// fs/sparse.h on a real file: find_data reports the extents a sparse file has, and every
// fill_hole mode leaves the range reading as zeros (allocated or not, as asked).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "fs/sparse.h"

using namespace rcp;

namespace {

constexpr uint64_t M = 1u << 20;

struct SparseFile {
  std::string path;
  int fd = -1;
  explicit SparseFile(uint64_t size) {
    char t[] = "/tmp/rcp-sparse-test.XXXXXX";
    fd = ::mkstemp(t);
    REQUIRE(fd >= 0);
    path = t;
    REQUIRE(::ftruncate(fd, static_cast<off_t>(size)) == 0);
  }
  ~SparseFile() {
    ::close(fd);
    ::unlink(path.c_str());
  }
  void data(uint64_t off, uint64_t len, uint8_t byte = 0x5a) {
    std::vector<uint8_t> b(len, byte);
    REQUIRE(::pwrite(fd, b.data(), len, static_cast<off_t>(off)) == static_cast<ssize_t>(len));
  }
  uint64_t allocated() const {
    struct stat st {};
    REQUIRE(::fstat(fd, &st) == 0);
    return static_cast<uint64_t>(st.st_blocks) * 512;
  }
  bool zeros(uint64_t off, uint64_t len) const {
    std::vector<uint8_t> b(len, 1);
    REQUIRE(::pread(fd, b.data(), len, static_cast<off_t>(off)) == static_cast<ssize_t>(len));
    for (uint8_t x : b)
      if (x != 0) return false;
    return true;
  }
};

}  // namespace

TEST_CASE("find_data: the extents of a sparse file, none past its data, clipped to the size") {
  SparseFile f(8 * M);
  f.data(2 * M, M);
  auto e = find_data(f.fd, 0, 8 * M);
  REQUIRE(e.ok());
  // (a file system may round extents to its blocks; tmpfs and ext4 keep 1 MiB here)
  CHECK(e->begin == 2 * M);
  CHECK(e->end == 3 * M);
  auto none = find_data(f.fd, 3 * M, 8 * M);
  REQUIRE(none.ok());
  CHECK(none->begin == 8 * M);
  auto past = find_data(f.fd, 9 * M, 8 * M);
  REQUIRE(past.ok());
  CHECK(past->begin == 8 * M);
  auto clipped = find_data(f.fd, 0, 2 * M + 10);  // a size smaller than the file's: clipped
  REQUIRE(clipped.ok());
  CHECK(clipped->end == 2 * M + 10);
}

TEST_CASE("fill_hole: every mode reads back zeros; leave and punch deallocate, allocate allocates") {
  SUBCASE("leave on a fresh range: nothing written") {
    SparseFile f(4 * M);
    REQUIRE(fill_hole(f.fd, 0, 4 * M, HoleFill::leave, false).ok());
    CHECK(f.allocated() == 0);
    CHECK(f.zeros(0, 4 * M));
  }
  SUBCASE("leave over old data (a --partial file): punched") {
    SparseFile f(4 * M);
    f.data(0, 4 * M);
    REQUIRE(fill_hole(f.fd, M, 2 * M, HoleFill::leave, true).ok());
    CHECK(f.zeros(M, 2 * M));
    CHECK_FALSE(f.zeros(0, M));
    CHECK(f.allocated() <= 2 * M + 64 * 1024);
  }
  SUBCASE("allocate: the blocks exist and read as zeros, old data gone") {
    SparseFile f(4 * M);
    f.data(0, M);
    REQUIRE(fill_hole(f.fd, 0, 4 * M, HoleFill::allocate, true).ok());
    CHECK(f.zeros(0, 4 * M));
    CHECK(f.allocated() >= 4 * M);
  }
  SUBCASE("zero (the device mode) on a regular file: zeros") {
    SparseFile f(4 * M);
    f.data(0, 4 * M);
    REQUIRE(fill_hole(f.fd, M, M + 7, HoleFill::zero, true).ok());
    CHECK(f.zeros(M, M + 7));
    CHECK_FALSE(f.zeros(2 * M + 7, 1));
  }
  SUBCASE("discard on a regular file: punched, zeros") {
    SparseFile f(4 * M);
    f.data(0, 4 * M);
    REQUIRE(fill_hole(f.fd, 0, 4 * M, HoleFill::discard, true).ok());
    CHECK(f.zeros(0, 4 * M));
    CHECK(f.allocated() == 0);
  }
}

TEST_CASE("fill_hole: zeros that cannot be written are an error naming them, not a loop") {
  // A descriptor open for reading only: fallocate and pwrite both fail
  // (EBADF). A failed pwrite counted as bytes written would walk the
  // offset backwards forever.
  SparseFile f(4 * M);
  const int ro = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(ro >= 0);
  for (HoleFill how : {HoleFill::leave, HoleFill::allocate, HoleFill::zero, HoleFill::discard}) {
    const Status st = fill_hole(ro, 0, M, how, true);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == EBADF);
    CHECK(st.error().context.find("write zeros for a hole") != std::string::npos);
  }
  ::close(ro);
}

TEST_CASE("nonzero_spans: whole aligned zero blocks are left out, nothing else") {
  constexpr uint32_t G = 4096;
  std::vector<uint8_t> buf(8 * G, 0);
  auto spans = [&](uint64_t file_off, uint32_t off, uint32_t len) {
    return nonzero_spans(buf.data() + off, file_off, len, G);
  };
  SUBCASE("all zeros, aligned: nothing to write") { CHECK(spans(0, 0, 8 * G).empty()); }
  SUBCASE("one byte of data keeps exactly its block") {
    buf[3 * G + 17] = 1;
    auto s = spans(0, 0, 8 * G);
    REQUIRE(s.size() == 1);
    CHECK(s[0].offset == 3 * G);
    CHECK(s[0].length == G);
  }
  SUBCASE("the last byte of a block counts (memcmp over the whole block)") {
    buf[G - 1] = 9;
    buf[5 * G] = 9;
    buf[6 * G] = 9;  // adjacent kept blocks merge into one write
    auto s = spans(0, 0, 8 * G);
    REQUIRE(s.size() == 2);
    CHECK(s[0].offset == 0);
    CHECK(s[0].length == G);
    CHECK(s[1].offset == 5 * G);
    CHECK(s[1].length == 2 * G);
  }
  SUBCASE("unaligned head and tail are written even when zero (not whole blocks)") {
    // file offset 100: [100, 4096) head, blocks 1..6 whole, [7*4096, 7*4096+50) tail
    auto s = spans(100, 0, 7 * G - 100 + 50);
    REQUIRE(s.size() == 2);
    CHECK(s[0].offset == 100);
    CHECK(s[0].length == G - 100);
    CHECK(s[1].offset == 7 * G);
    CHECK(s[1].length == 50);
  }
  SUBCASE("a short range inside one block is written as is") {
    auto s = spans(G + 1, 0, 10);
    REQUIRE(s.size() == 1);
    CHECK(s[0].offset == G + 1);
    CHECK(s[0].length == 10);
  }
  SUBCASE("data everywhere: one span, the whole write") {
    for (size_t i = 0; i < buf.size(); i += G) buf[i + 5] = 1;
    auto s = spans(0, 0, 8 * G);
    REQUIRE(s.size() == 1);
    CHECK(s[0].length == 8 * G);
  }
  SUBCASE("granule 0: the whole write") {
    auto s = nonzero_spans(buf.data(), 0, 8 * G, 0);
    REQUIRE(s.size() == 1);
    CHECK(s[0].length == 8 * G);
  }
}
