#include "util/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

namespace rcp {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::error)};
std::mutex g_mu;
std::string g_prefix = "rcp";
}  // namespace

void set_log_level(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }
void set_log_prefix(std::string_view prefix) {
  std::lock_guard lk(g_mu);
  g_prefix = prefix;
}
void log_line(LogLevel level, std::string_view text) {
  std::lock_guard lk(g_mu);
  const char* tag = level == LogLevel::error ? "error: " : level == LogLevel::debug ? "debug: " : "";
  std::fprintf(stderr, "%s: %s%.*s\n", g_prefix.c_str(), tag, static_cast<int>(text.size()), text.data());
}

}  // namespace rcp
