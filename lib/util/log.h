/// Minimal leveled logging to stderr. Destructors and background paths log
/// here instead of throwing; the programs set the level from -v / -q.
///
/// Every line is one line: control characters in the text (a path or a
/// peer's bytes inside a message) are escaped — "\n" as the two characters
/// \n, a backslash as \\, any other C0 byte or DEL as \xNN — so a file
/// named "x\nrcpd: error: forged" cannot forge a second line. When stderr is
/// the systemd journal (JOURNAL_STREAM names stderr's device and inode), each
/// line starts with its syslog priority, "<3>" error, "<6>" info, "<7>"
/// debug, which journald strips and files as the entry's priority.
#pragma once

#include <fmt/core.h>

#include <string>
#include <string_view>
#include <sys/types.h>

namespace rcp {

/// Verbosity, in order; `notice` is not a verbosity but the priority of the
/// lines every non-quiet run prints ("ready", warnings that are not errors).
enum class LogLevel { quiet = 0, error = 1, info = 2, debug = 3, notice = 4 };

void set_log_level(LogLevel level);
LogLevel log_level();
/// Prefix printed before every line, e.g. "rcpd" or "rcp".
void set_log_prefix(std::string_view prefix);
void log_line(LogLevel level, std::string_view text);

/// `text` with control characters escaped as described above (printable
/// bytes and UTF-8 sequences are kept as they are).
std::string log_escape(std::string_view text);
/// Whether JOURNAL_STREAM's value ("DEV:INO", decimal) names the file
/// (dev, ino) — i.e. whether stderr is connected to the journal.
bool journal_stream_matches(const char* env, dev_t dev, ino_t ino);
/// One finished line, newline included: "<N>" when `journal`, the prefix,
/// the level's tag, the escaped text.
std::string format_log_line(LogLevel level, std::string_view prefix, std::string_view text, bool journal);

template <typename... Args>
void log_error(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() >= LogLevel::error) log_line(LogLevel::error, fmt::format(f, std::forward<Args>(args)...));
}
/// A line printed unless quiet, with no tag (journal priority 5, notice).
template <typename... Args>
void log_notice(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() >= LogLevel::error) log_line(LogLevel::notice, fmt::format(f, std::forward<Args>(args)...));
}
/// A warning: shown unless -q (the error threshold), tagged "warning: " and
/// not "error: " — something skipped by design does not read as a failure.
template <typename... Args>
void log_warning(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() >= LogLevel::error) log_line(LogLevel::info, "warning: " + fmt::format(f, std::forward<Args>(args)...));
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
