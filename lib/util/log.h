/// Minimal leveled logging to stderr. Destructors and background paths log
/// here instead of throwing; the programs set the level from -v / -q.
#pragma once

#include <fmt/core.h>

#include <string_view>

namespace rcp {

enum class LogLevel { quiet = 0, error = 1, info = 2, debug = 3 };

void set_log_level(LogLevel level);
LogLevel log_level();
/// Prefix printed before every line, e.g. "rcpd" or "rcp".
void set_log_prefix(std::string_view prefix);
void log_line(LogLevel level, std::string_view text);

template <typename... Args>
void log_error(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() >= LogLevel::error) log_line(LogLevel::error, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void log_info(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() >= LogLevel::info) log_line(LogLevel::info, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void log_debug(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() >= LogLevel::debug) log_line(LogLevel::debug, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace rcp
