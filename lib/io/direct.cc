#include "io/direct.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "util/log.h"

namespace rcp {

namespace {

/// The alignments the kernel asks of O_DIRECT on fd, or a safe guess.
void alignment(int fd, uint32_t& offset_align, uint32_t& mem_align) {
  offset_align = mem_align = 0;
#ifdef STATX_DIOALIGN
  struct statx stx {};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN | STATX_TYPE, &stx) == 0 && (stx.stx_mask & STATX_DIOALIGN) &&
      stx.stx_dio_offset_align != 0) {
    offset_align = stx.stx_dio_offset_align;
    mem_align = stx.stx_dio_mem_align;
  }
#endif
  struct stat st;
  if (offset_align == 0 && ::fstat(fd, &st) == 0 && S_ISBLK(st.st_mode)) {
    int lbs = 0;
    if (::ioctl(fd, BLKSSZGET, &lbs) == 0 && lbs > 0) offset_align = mem_align = static_cast<uint32_t>(lbs);
  }
  if (offset_align == 0) offset_align = 4096;  // no answer: the usual largest logical block
  if (mem_align == 0) mem_align = offset_align;
}

}  // namespace

uint32_t DirectFile::direct_part(uint64_t offset, const void* buf, uint32_t len) const {
  if (!fd.valid() || offset % granule != 0 || reinterpret_cast<uintptr_t>(buf) % mem_align != 0) return 0;
  return len - len % granule;
}

Result<DirectFile> open_direct(int fd, int flags, const std::string& shown) {
  DirectFile d;
  uint32_t off = 0, mem = 0;
  alignment(fd, off, mem);
  const long page = ::sysconf(_SC_PAGESIZE);
  d.granule = std::max<uint32_t>(off, page > 0 ? static_cast<uint32_t>(page) : 4096u);
  d.mem_align = std::max<uint32_t>(mem, 1);
  if ((d.granule & (d.granule - 1)) != 0 || d.granule > (1u << 20))
    return make_error(EINVAL, "'" + shown + "': unusual O_DIRECT alignment " + std::to_string(d.granule) +
                                  "; buffered I/O");
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const int dfd = ::open(link.c_str(), flags | O_DIRECT | O_CLOEXEC);
  if (dfd < 0) {
    const int e = errno;
    return make_error(e, "'" + shown + "': " +
                             (e == EINVAL ? "the file system refuses O_DIRECT (ramfs, tmpfs before Linux 6.6); buffered I/O instead"
                                          : "cannot reopen with O_DIRECT; buffered I/O instead"));
  }
  d.fd.reset(dfd);
  return d;
}

DirectFile direct_or_buffered(int fd, int flags, const std::string& shown, bool& noted) {
  auto d = open_direct(fd, flags, shown);
  if (d.ok()) return std::move(d.value());
  if (!noted) log_info("{}", d.error().context);
  noted = true;
  return {};
}

}  // namespace rcp
