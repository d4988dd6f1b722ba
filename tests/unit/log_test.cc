// Log lines cannot be forged through the data they carry, and carry a
// syslog priority only when stderr is the journal (util/log.h).
#include <doctest/doctest.h>

#include "util/log.h"

using namespace rcp;

TEST_CASE("log_escape keeps printable text and UTF-8 as it is") {
  CHECK(log_escape("put data/a b.txt: 3 file(s) ok") == "put data/a b.txt: 3 file(s) ok");
  CHECK(log_escape("name with spaces é 日本") == "name with spaces é 日本");
  CHECK(log_escape("") == "");
}

TEST_CASE("log_escape turns a newline into \\n so no second line can be forged") {
  const std::string forged = "x\nrcpd: error: forged";
  CHECK(log_escape(forged) == "x\\nrcpd: error: forged");
  CHECK(log_escape(forged).find('\n') == std::string::npos);
}

TEST_CASE("log_escape writes other C0 bytes and DEL as \\xNN, and doubles a backslash") {
  CHECK(log_escape("a\rb") == "a\\x0db");
  CHECK(log_escape("\t") == "\\x09");
  CHECK(log_escape(std::string_view("\0", 1)) == "\\x00");
  CHECK(log_escape("\x1b[31m") == "\\x1b[31m");
  CHECK(log_escape("\x7f") == "\\x7f");
  CHECK(log_escape("\x1f") == "\\x1f");
  CHECK(log_escape(" ~") == " ~");
  // an escaped newline and a literal backslash-n in a name stay distinguishable
  CHECK(log_escape("a\\nb") == "a\\\\nb");
}

TEST_CASE("journal_stream_matches only an exact DEV:INO") {
  CHECK(journal_stream_matches("8:1234", 8, 1234));
  CHECK_FALSE(journal_stream_matches(nullptr, 8, 1234));
  CHECK_FALSE(journal_stream_matches("", 8, 1234));
  CHECK_FALSE(journal_stream_matches("8:1235", 8, 1234));
  CHECK_FALSE(journal_stream_matches("9:1234", 8, 1234));
  CHECK_FALSE(journal_stream_matches("8:", 8, 1234));
  CHECK_FALSE(journal_stream_matches(":1234", 8, 1234));
  CHECK_FALSE(journal_stream_matches("8:1234x", 8, 1234));
  CHECK_FALSE(journal_stream_matches("8;1234", 8, 1234));
  CHECK_FALSE(journal_stream_matches("x8:1234", 8, 1234));
}

TEST_CASE("format_log_line: a priority prefix only for the journal, escaped text, one newline") {
  CHECK(format_log_line(LogLevel::error, "rcpd", "boom", false) == "rcpd: error: boom\n");
  CHECK(format_log_line(LogLevel::info, "rcpd", "ok", false) == "rcpd: ok\n");
  CHECK(format_log_line(LogLevel::debug, "rcpd", "d", false) == "rcpd: debug: d\n");
  CHECK(format_log_line(LogLevel::error, "rcpd", "boom", true) == "<3>rcpd: error: boom\n");
  CHECK(format_log_line(LogLevel::info, "rcpd", "ok", true) == "<6>rcpd: ok\n");
  CHECK(format_log_line(LogLevel::debug, "rcpd", "d", true) == "<7>rcpd: debug: d\n");
  CHECK(format_log_line(LogLevel::notice, "rcpd", "ready", true) == "<5>rcpd: ready\n");
  CHECK(format_log_line(LogLevel::notice, "rcpd", "ready", false) == "rcpd: ready\n");
  CHECK(format_log_line(LogLevel::info, "rcpd", "put a\nrcpd: forged", false) == "rcpd: put a\\nrcpd: forged\n");
}
