#include "fs/sparse.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace rcp {

Result<DataExtent> find_data(int fd, uint64_t from, uint64_t size) {
  if (from >= size) return DataExtent{size, size};
  const off_t d = ::lseek(fd, static_cast<off_t>(from), SEEK_DATA);
  if (d < 0) {
    if (errno == ENXIO) return DataExtent{size, size};  // a hole to the end
    return DataExtent{from, size};
  }
  const uint64_t begin = std::min<uint64_t>(static_cast<uint64_t>(d), size);
  if (begin >= size) return DataExtent{size, size};
  const off_t h = ::lseek(fd, d, SEEK_HOLE);
  const uint64_t end = h < 0 ? size : std::clamp<uint64_t>(static_cast<uint64_t>(h), begin + 1, size);
  return DataExtent{begin, end};
}

namespace {

bool all_zero(const uint8_t* p, uint32_t n) {
  // p[0] == 0 and every byte equals the next: memcmp runs at memory speed.
  return n == 0 || (p[0] == 0 && std::memcmp(p, p + 1, n - 1) == 0);
}

}  // namespace

std::vector<Span> nonzero_spans(const uint8_t* data, uint64_t file_off, uint32_t len, uint32_t granule) {
  std::vector<Span> out;
  auto keep = [&](uint64_t off, uint32_t n) {
    if (n == 0) return;
    if (!out.empty() && out.back().offset + out.back().length == off)
      out.back().length += n;
    else
      out.push_back(Span{off, n});
  };
  if (granule == 0) {
    keep(file_off, len);
    return out;
  }
  const uint64_t end = file_off + len;
  uint64_t pos = file_off;
  while (pos < end) {
    const uint64_t block_end = std::min<uint64_t>((pos / granule + 1) * granule, end);
    const auto n = static_cast<uint32_t>(block_end - pos);
    const bool whole = pos % granule == 0 && n == granule;
    if (!whole || !all_zero(data + (pos - file_off), n)) keep(pos, n);
    pos = block_end;
  }
  return out;
}

namespace {

Status write_zeros(int fd, uint64_t offset, uint64_t length) {
  static const std::vector<uint8_t> zeros(1u << 20);
  while (length > 0) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(length, zeros.size()));
    const ssize_t w = ::pwrite(fd, zeros.data(), n, static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return sys_error("write zeros for a hole");
    if (w == 0) return make_error(EIO, "write zeros for a hole: no progress");
    offset += static_cast<uint64_t>(w);
    length -= static_cast<uint64_t>(w);
  }
  return {};
}

bool falloc(int fd, int mode, uint64_t offset, uint64_t length) {
  return ::fallocate(fd, mode, static_cast<off_t>(offset), static_cast<off_t>(length)) == 0;
}

}  // namespace

Status fill_hole(int fd, uint64_t offset, uint64_t length, HoleFill how, bool may_hold_data) {
  if (length == 0) return {};
  const int punch = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
  switch (how) {
    case HoleFill::leave:
      if (!may_hold_data || falloc(fd, punch, offset, length)) return {};
      return write_zeros(fd, offset, length);
    case HoleFill::allocate:
      if (may_hold_data && !falloc(fd, punch, offset, length)) return write_zeros(fd, offset, length);
      if (falloc(fd, 0, offset, length)) return {};
      return write_zeros(fd, offset, length);
    case HoleFill::zero:
      if (falloc(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, offset, length)) return {};
      return write_zeros(fd, offset, length);
    case HoleFill::discard: {
      if (falloc(fd, punch, offset, length)) return {};
      uint64_t range[2] = {offset, length};
      if (::ioctl(fd, BLKDISCARD, range) == 0) return {};
      return write_zeros(fd, offset, length);
    }
  }
  return make_error(EINVAL, "unknown hole fill");
}

}  // namespace rcp
