// session/delta: a chunk is taken from the destination's old file only when
// its bytes hash to the announced digest, the bytes written are the bytes
// hashed, and a write that fails is an error, never "reused".
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <span>
#include <vector>

#include "scratch_dir.h"
#include "session/delta.h"
#include "session/loop.h"

using namespace rcp;

namespace {

struct Files : test::ScratchDir {
  std::vector<uint8_t> old_bytes = std::vector<uint8_t>(64 * 1024);
  Fd basis, out;
  Files() {
    uint32_t x = 12345;  // no period shorter than the file: each chunk's bytes differ
    for (auto& b : old_bytes) b = static_cast<uint8_t>((x = x * 1103515245u + 12345u) >> 24);
    Fd w(::open(at("old").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    REQUIRE(::pwrite(w.get(), old_bytes.data(), old_bytes.size(), 0) == static_cast<ssize_t>(old_bytes.size()));
    basis.reset(::open(at("old").c_str(), O_RDONLY | O_CLOEXEC));
    out.reset(::open(at("new").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    REQUIRE(basis.valid());
    REQUIRE(out.valid());
  }
  wire::Digest digest_of_old(const SessionOptions& o, uint32_t id, uint64_t off, uint32_t len) const {
    const std::span<const uint8_t> piece{old_bytes.data() + off, len};
    return chunk_digest(o, id, off, {&piece, 1});
  }
  std::vector<uint8_t> written(uint64_t off, uint32_t len) const {
    std::vector<uint8_t> b(len);
    REQUIRE(::pread(out.get(), b.data(), len, static_cast<off_t>(off)) == static_cast<ssize_t>(len));
    return b;
  }
};

/// try_reuse's answer, which must not be an error here.
bool reused(Result<bool> r) {
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message()));
  return r.value();
}

}  // namespace

TEST_CASE("chunk reuse: a matching chunk is copied to the same offset; a different one is pulled") {
  Files f;
  const SessionOptions opt;  // xxh128
  ChunkReuse r;
  const auto want = f.digest_of_old(opt, 1, 4096, 8192);
  auto got = r.try_reuse(opt, f.basis.get(), f.old_bytes.size(), f.out.get(), 1, 4096, 8192, want);
  REQUIRE(got.ok());
  CHECK(*got);
  CHECK(f.written(4096, 8192) == std::vector<uint8_t>(f.old_bytes.begin() + 4096, f.old_bytes.begin() + 12288));

  // other bytes announced at that place: not reused, nothing written there
  auto other = f.digest_of_old(opt, 1, 0, 8192);
  auto no = r.try_reuse(opt, f.basis.get(), f.old_bytes.size(), f.out.get(), 1, 20480, 8192, other);
  REQUIRE(no.ok());
  CHECK_FALSE(*no);
  struct stat st{};
  REQUIRE(::fstat(f.out.get(), &st) == 0);
  CHECK(st.st_size == 12288);

  // a range the old file does not have (past its end, or no old file)
  CHECK_FALSE(reused(r.try_reuse(opt, f.basis.get(), f.old_bytes.size(), f.out.get(), 1, 60 * 1024, 8192, want)));
  CHECK_FALSE(reused(r.try_reuse(opt, -1, 0, f.out.get(), 1, 0, 8192, want)));
  // past the size the old file had when it was opened, though it grew since
  const auto grown = f.digest_of_old(opt, 1, 32768, 8192);
  CHECK_FALSE(reused(r.try_reuse(opt, f.basis.get(), 32768, f.out.get(), 1, 32768, 8192, grown)));
  // within that size, but the file shrank since: the read comes up short
  REQUIRE(::ftruncate(f.out.get(), 0) == 0);
  const Fd shrunk(::open(f.at("old").c_str(), O_RDWR | O_CLOEXEC));
  REQUIRE(::ftruncate(shrunk.get(), 36864) == 0);
  CHECK_FALSE(reused(r.try_reuse(opt, f.basis.get(), f.old_bytes.size(), f.out.get(), 1, 32768, 8192, grown)));
  REQUIRE(::ftruncate(shrunk.get(), 0) == 0);
  REQUIRE(::pwrite(shrunk.get(), f.old_bytes.data(), f.old_bytes.size(), 0) == static_cast<ssize_t>(f.old_bytes.size()));
  // out_fd < 0: a partial file completed in place, nothing to write
  CHECK(reused(r.try_reuse(opt, f.basis.get(), f.old_bytes.size(), -1, 1, 4096, 8192, want)));
}

TEST_CASE("chunk reuse: an authenticated session's chunk MAC binds the file and offset") {
  Files f;
  SessionOptions opt;
  opt.chunk_key = std::array<uint8_t, 32>{1, 2, 3};
  ChunkReuse r;
  const auto want = f.digest_of_old(opt, 7, 0, 4096);
  CHECK(reused(r.try_reuse(opt, f.basis.get(), f.old_bytes.size(), f.out.get(), 7, 0, 4096, want)));
  CHECK_FALSE(reused(r.try_reuse(opt, f.basis.get(), f.old_bytes.size(), f.out.get(), 8, 0, 4096, want)));  // another file
}

TEST_CASE("chunk reuse: a temp file that cannot be written is an error, not a chunk reused") {
  Files f;
  const SessionOptions opt;
  ChunkReuse r;
  const Fd ro(::open(f.at("new").c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(ro.valid());
  auto got = r.try_reuse(opt, f.basis.get(), f.old_bytes.size(), ro.get(), 1, 0, 4096, f.digest_of_old(opt, 1, 0, 4096));
  REQUIRE_FALSE(got.ok());
  CHECK(got.error().code == EBADF);
  CHECK(got.error().context == "write");
}
