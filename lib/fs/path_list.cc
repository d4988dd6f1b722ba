#include "fs/path_list.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fmt/core.h>

#include "fs/path.h"

namespace rcp {

Result<PathList> PathList::open(const std::string& file, bool from0) {
  const int fd = file == "-" ? ::dup(STDIN_FILENO) : ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return sys_error("--files-from '" + file + "'");
  return PathList(Fd(fd), file, from0);
}

Result<std::optional<std::string>> PathList::next() {
  const char sep = from0_ ? '\0' : '\n';
  for (;;) {
    const size_t end = buf_.find(sep, pos_);
    if (end == std::string::npos && !eof_) {
      buf_.erase(0, pos_);
      pos_ = 0;
      if (buf_.size() > 8192)
        return make_error(ENAMETOOLONG, fmt::format("'{}' line {}: path too long", shown_, line_ + 1));
      char chunk[65536];
      ssize_t n;
      do n = ::read(fd_.get(), chunk, sizeof chunk);
      while (n < 0 && errno == EINTR);
      if (n < 0) return sys_error("read '" + shown_ + "'");
      if (n == 0) eof_ = true;
      buf_.append(chunk, static_cast<size_t>(n));
      continue;
    }
    if (end == std::string::npos && pos_ == buf_.size()) return std::optional<std::string>{};
    const size_t stop = end == std::string::npos ? buf_.size() : end;
    std::string line = buf_.substr(pos_, stop - pos_);
    pos_ = stop == buf_.size() ? stop : stop + 1;
    ++line_;
    if (!from0_ && !line.empty() && line.back() == '\r') line.pop_back();
    size_t lead = 0;
    while (lead < line.size() && line[lead] == '/') ++lead;
    if (lead == line.size()) continue;  // blank (or only "/")
    auto clean = clean_relative(std::string_view(line).substr(lead));
    if (!clean.ok())
      return make_error(EINVAL, fmt::format("'{}' line {}: '{}': {}", shown_, line_, line, clean.error().context));
    if (clean->empty()) continue;
    return std::optional<std::string>{std::move(clean.value())};
  }
}

}  // namespace rcp
