#include "util/log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace rcp {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::error)};
std::mutex g_mu;
std::string g_prefix = "rcp";

/// Whether stderr is the journal, decided once (stderr is not re-pointed
/// after start).
bool stderr_is_journal() {
  static const bool yes = [] {
    struct stat st{};
    return ::fstat(STDERR_FILENO, &st) == 0 && journal_stream_matches(std::getenv("JOURNAL_STREAM"), st.st_dev, st.st_ino);
  }();
  return yes;
}
}  // namespace

void set_log_level(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }
void set_log_prefix(std::string_view prefix) {
  std::lock_guard lk(g_mu);
  g_prefix = prefix;
}

std::string log_escape(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

bool journal_stream_matches(const char* env, dev_t dev, ino_t ino) {
  if (!env) return false;
  std::string_view v(env);
  auto colon = v.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == v.size()) return false;
  unsigned long long d = 0, i = 0;
  auto r1 = std::from_chars(v.data(), v.data() + colon, d);
  if (r1.ec != std::errc{} || r1.ptr != v.data() + colon) return false;
  auto r2 = std::from_chars(v.data() + colon + 1, v.data() + v.size(), i);
  if (r2.ec != std::errc{} || r2.ptr != v.data() + v.size()) return false;
  return d == static_cast<unsigned long long>(dev) && i == static_cast<unsigned long long>(ino);
}

std::string format_log_line(LogLevel level, std::string_view prefix, std::string_view text, bool journal) {
  std::string line;
  if (journal)
    line += level == LogLevel::error ? "<3>" : level == LogLevel::notice ? "<5>" : level == LogLevel::debug ? "<7>" : "<6>";
  line += log_escape(prefix);
  line += ": ";
  line += level == LogLevel::error ? "error: " : level == LogLevel::debug ? "debug: " : "";
  line += log_escape(text);
  line += '\n';
  return line;
}

void log_line(LogLevel level, std::string_view text) {
  const bool journal = stderr_is_journal();
  std::lock_guard lk(g_mu);
  const std::string line = format_log_line(level, g_prefix, text, journal);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace rcp
