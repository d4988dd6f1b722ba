#include "cli/number_option.h"

#include <charconv>
#include <system_error>

#include <fmt/core.h>

namespace rcp::cli {

std::string integer_problem(const std::string& s, long lo, long hi) {
  long v = 0;
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (ec == std::errc::result_out_of_range) return fmt::format("{} is out of range ({} to {})", s, lo, hi);
  if (ec != std::errc{} || ptr != end) return "'" + s + "' is not a number";
  if (v < lo || v > hi) return fmt::format("{} is out of range ({} to {})", s, lo, hi);
  return {};
}

}  // namespace rcp::cli
