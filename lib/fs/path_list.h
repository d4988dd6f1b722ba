/// --files-from FILE (and --from0): the list of paths a copy sends, read as
/// the copy goes (a list of millions of names is never held whole). As
/// rsync: one path per line (NUL-separated with from0), blank lines skipped,
/// leading '/' dropped, each relative to the source directory; a path with
/// ".." is refused naming its line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "util/fd.h"
#include "util/result.h"

namespace rcp {

class PathList {
 public:
  /// "-" reads standard input.
  static Result<PathList> open(const std::string& file, bool from0);
  /// The next path, cleaned (fs/path.h clean_relative); nullopt at the end.
  Result<std::optional<std::string>> next();

 private:
  PathList(Fd fd, std::string shown, bool from0) : fd_(std::move(fd)), shown_(std::move(shown)), from0_(from0) {}
  Fd fd_;
  std::string shown_;
  bool from0_ = false;
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
  uint64_t line_ = 0;
};

}  // namespace rcp
