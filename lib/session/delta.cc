#include "session/delta.h"

#include <unistd.h>

#include <span>

#include "session/loop.h"

namespace rcp {

bool can_reuse_chunks(const SessionOptions& opt) { return chunk_digest_len(opt) > 0; }

Result<bool> ChunkReuse::try_reuse(const SessionOptions& opt, int basis_fd, uint64_t basis_size, int out_fd,
                                   uint32_t file_id, uint64_t offset, uint32_t length, const wire::Digest& want) {
  if (basis_fd < 0 || length == 0 || offset > basis_size || basis_size - offset < length) return false;
  if (buf_.size() < length) buf_.resize(length);
  uint32_t got = 0;
  while (got < length) {
    const ssize_t n = ::pread(basis_fd, buf_.data() + got, length - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // unreadable or shrunk since: pull it instead
    got += static_cast<uint32_t>(n);
  }
  const std::span<const uint8_t> piece{buf_.data(), length};
  if (!chunk_digest_equal(opt, chunk_digest(opt, file_id, offset, {&piece, 1}), want)) return false;
  uint32_t put = 0;
  while (out_fd >= 0 && put < length) {
    const ssize_t n = ::pwrite(out_fd, buf_.data() + put, length - put, static_cast<off_t>(offset + put));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("write");
    if (n == 0) return make_error(EIO, "write: no progress");
    put += static_cast<uint32_t>(n);
  }
  return true;
}

}  // namespace rcp
