#include "fs/tempfile.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <random>

#include "util/log.h"

namespace rcp {

namespace {

/// The process umask, read from /proc/self/status ("Umask:", Linux >= 4.7)
/// rather than with umask(2), which can only be read by changing it and would
/// race with files other session threads are creating. Read once: rcp and
/// rcpd never change their umask while running. ~0u if unknown.
unsigned process_umask() {
  static const unsigned mask = [] {
    unsigned m = ~0u;
    if (FILE* f = std::fopen("/proc/self/status", "re")) {
      char line[256];
      while (std::fgets(line, sizeof line, f))
        if (std::strncmp(line, "Umask:", 6) == 0 && std::sscanf(line + 6, "%o", &m) != 1) m = ~0u;
      std::fclose(f);
    }
    return m;
  }();
  return mask;
}

/// How an O_TMPFILE file can be given a name: linkat(fd, "", AT_EMPTY_PATH)
/// needs CAP_DAC_READ_SEARCH; without it, linkat of /proc/self/fd/N with
/// AT_SYMLINK_FOLLOW works where /proc is mounted. Decided once.
enum class LinkWay { empty_path, proc, none };

bool force_proc_link = false;  // TempFile::link_via_proc_for_test

LinkWay link_way() {
  if (force_proc_link) return LinkWay::proc;
  static const LinkWay way = [] {
    unsigned long long cap = 0;
    if (FILE* f = std::fopen("/proc/self/status", "re")) {
      char line[256];
      while (std::fgets(line, sizeof line, f))
        if (std::strncmp(line, "CapEff:", 7) == 0 && std::sscanf(line + 7, "%llx", &cap) != 1) cap = 0;
      std::fclose(f);
    }
    constexpr unsigned long long kDacReadSearch = 1ull << 2;  // CAP_DAC_READ_SEARCH
    if (cap & kDacReadSearch) return LinkWay::empty_path;
    return ::access("/proc/self/fd", X_OK) == 0 ? LinkWay::proc : LinkWay::none;
  }();
  return way;
}

std::string random_temp_name(const std::string& target) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  // Keep the temp name inside NAME_MAX (255) however long the target is.
  std::string name = "." + target.substr(0, 200) + ".rcp-";
  for (int i = 0; i < 8; ++i) name += alphabet[rng() % 36];
  return name;
}

}  // namespace

unsigned umasked(unsigned mode) {
  const unsigned um = process_umask();
  return mode & 0777 & ~(um == ~0u ? 022u : um);
}

Result<TempFile> TempFile::create(int dir_fd, const std::string& target, std::string shown, unsigned mode) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string name = random_temp_name(target);
    int fd = ::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode & 0777);
    if (fd >= 0) {
      TempFile t;
      const unsigned um = process_umask();
      t.created_mode_ = um == ~0u ? ~0u : (mode & 0777 & ~um);
      t.dir_fd_ = dir_fd;
      t.fd_.reset(fd);
      t.temp_ = std::move(name);
      t.target_ = target;
      t.shown_ = std::move(shown);
      return t;
    }
    if (errno != EEXIST) return sys_error("cannot create temporary file for '" + shown + "'");
  }
  return make_error(EEXIST, "cannot create temporary file for '" + shown + "'");
}

void TempFile::link_via_proc_for_test(bool on) { force_proc_link = on; }

Result<TempFile> TempFile::create_unnamed(int dir_fd, const std::string& target, std::string shown, unsigned mode) {
  if (link_way() == LinkWay::none) return make_error(ENOTSUP, "no way to link an O_TMPFILE file");
  const int fd = ::openat(dir_fd, ".", O_WRONLY | O_TMPFILE | O_CLOEXEC, mode & 0777);
  if (fd < 0) return make_error(ENOTSUP, "O_TMPFILE for '" + shown + "'");
  TempFile t;
  const unsigned um = process_umask();
  t.created_mode_ = um == ~0u ? ~0u : (mode & 0777 & ~um);
  t.dir_fd_ = dir_fd;
  t.fd_.reset(fd);
  t.target_ = target;
  t.shown_ = std::move(shown);
  t.unnamed_ = true;
  return t;
}

/// Gives the unnamed file its name. A file that appeared under it since the
/// sink looked is replaced as rename() would: linked to a temp name first.
Status TempFile::link_into_place() {
  auto link_as = [&](const std::string& name) -> int {
    if (link_way() == LinkWay::empty_path) {
      if (::linkat(fd_.get(), "", dir_fd_, name.c_str(), AT_EMPTY_PATH) == 0) return 0;
      // Without CAP_DAC_READ_SEARCH (dropped since link_way() looked) the
      // kernel answers ENOENT: /proc then. Any other errno says why.
      if (errno != ENOENT) return -1;
    }
    const std::string proc = "/proc/self/fd/" + std::to_string(fd_.get());
    return ::linkat(AT_FDCWD, proc.c_str(), dir_fd_, name.c_str(), AT_SYMLINK_FOLLOW);
  };
  if (link_as(target_) == 0) return {};
  if (errno != EEXIST) return sys_error("link into '" + shown_ + "'");
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::string name = random_temp_name(target_);
    if (link_as(name) != 0) {
      if (errno == EEXIST) continue;
      return sys_error("link into '" + shown_ + "'");
    }
    if (::renameat(dir_fd_, name.c_str(), dir_fd_, target_.c_str()) != 0) {
      const int e = errno;
      ::unlinkat(dir_fd_, name.c_str(), 0);
      errno = e;
      return sys_error("rename into '" + shown_ + "'");
    }
    return {};
  }
  return make_error(EEXIST, "link into '" + shown_ + "'");
}

TempFile TempFile::on_device(Fd fd, std::string shown) {
  TempFile t;
  t.fd_ = std::move(fd);
  t.shown_ = std::move(shown);
  t.device_ = true;
  return t;
}

std::string TempFile::partial_name(const std::string& target) { return "." + target.substr(0, 200) + ".rcp-partial"; }

Result<TempFile> TempFile::open_partial(int dir_fd, const std::string& target, std::string shown, unsigned mode) {
  const std::string name = partial_name(target);
  // O_NOFOLLOW: a symlink planted under that name is refused; O_NONBLOCK: a
  // FIFO is never waited on, and is refused below as not a regular file.
  Fd fd(::openat(dir_fd, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, umasked(mode) & 0777));
  if (!fd.valid()) return sys_error("cannot open partial file for '" + shown + "'");
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return sys_error("cannot stat partial file for '" + shown + "'");
  if (!S_ISREG(st.st_mode) || st.st_nlink != 1)
    return make_error(EINVAL, "'" + name + "' is not a plain file; not used as the partial file for '" + shown + "'");
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return sys_error("partial file for '" + shown + "' is in use");
  TempFile t;
  t.created_mode_ = ~0u;  // an old partial file's mode is whatever it was: commit() sets it
  t.dir_fd_ = dir_fd;
  t.fd_ = std::move(fd);
  t.temp_ = name;
  t.target_ = target;
  t.shown_ = std::move(shown);
  t.keep_ = true;
  return t;
}

TempFile::TempFile(TempFile&& o) noexcept { *this = std::move(o); }

TempFile& TempFile::operator=(TempFile&& o) noexcept {
  if (this != &o) {
    discard();
    dir_fd_ = o.dir_fd_;
    fd_ = std::move(o.fd_);
    temp_ = std::move(o.temp_);
    target_ = std::move(o.target_);
    shown_ = std::move(o.shown_);
    keep_ = o.keep_;
    created_mode_ = o.created_mode_;
    committed_ = o.committed_;
    device_ = o.device_;
    unnamed_ = o.unnamed_;
    o.temp_.clear();
  }
  return *this;
}

TempFile::~TempFile() { discard(); }

void TempFile::discard() {
  fd_.reset();
  if (!committed_ && !temp_.empty() && !keep_) {
    if (::unlinkat(dir_fd_, temp_.c_str(), 0) != 0 && errno != ENOENT)
      log_error("cannot remove temporary file '{}': {}", temp_, std::strerror(errno));
  }
  temp_.clear();
}

Status TempFile::set_size(uint64_t size) {
  if (::ftruncate(fd_.get(), static_cast<off_t>(size)) != 0) return sys_error("truncate '" + shown_ + "'");
  return {};
}

Status TempFile::commit(unsigned mode, bool do_fsync, bool exact) {
  if (device_) {
    if (::fsync(fd_.get()) != 0) return sys_error("fsync '" + shown_ + "'");
    committed_ = true;
    fd_.reset();
    return {};
  }
  RCP_TRY(set_bits(mode, exact));
  if (do_fsync && ::fsync(fd_.get()) != 0) return sys_error("fsync '" + shown_ + "'");
  return publish();
}

Status TempFile::set_bits(unsigned mode, bool exact) {
  mode &= exact ? 07777u : 0777u;
  if (mode != created_mode_ && ::fchmod(fd_.get(), mode) != 0) return sys_error("chmod '" + shown_ + "'");
  return {};
}

Status TempFile::publish() {
  if (device_) return make_error(EINVAL, "internal: publish() of device '" + shown_ + "'");
  if (unnamed_) {
    RCP_TRY(link_into_place());
  } else if (::renameat(dir_fd_, temp_.c_str(), dir_fd_, target_.c_str()) != 0) {
    return sys_error("rename into '" + shown_ + "'");
  }
  committed_ = true;
  fd_.reset();
  return {};
}

}  // namespace rcp
