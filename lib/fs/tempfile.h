/// Atomic output: a file is written under a hidden temporary name beside its
/// target and renamed into place only after it is complete and verified. The
/// destructor unlinks a temp file that was never committed, so a failed or
/// aborted copy leaves nothing behind.
#pragma once

#include <string>

#include "util/fd.h"
#include "util/result.h"

namespace rcp {

class TempFile {
 public:
  /// Creates ".<target>.rcp-XXXXXX" in dir_fd (O_EXCL, mode 0600).
  static Result<TempFile> create(int dir_fd, const std::string& target, std::string shown);
  TempFile() = default;
  TempFile(TempFile&&) noexcept;
  TempFile& operator=(TempFile&&) noexcept;
  ~TempFile();

  int fd() const { return fd_.get(); }
  const std::string& temp_name() const { return temp_; }
  const std::string& shown() const { return shown_; }
  /// Truncates to size, applies mode, optionally fsyncs, renames onto target.
  Status commit(uint64_t size, unsigned mode, bool do_fsync);
  /// Removes the temp file now (also done by the destructor).
  void discard();

 private:
  int dir_fd_ = -1;  // borrowed: the Destination owns it and outlives this file
  Fd fd_;
  std::string temp_, target_, shown_;
  bool committed_ = false;
};

}  // namespace rcp
