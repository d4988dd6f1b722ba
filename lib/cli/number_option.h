/// A whole-number option's value checked against its range, in words: rcp's
/// and rcpd's numeric options share it (their CLI11 validators wrap it), so a
/// value outside a range reads the same from both programs.
#pragma once

#include <string>

namespace rcp::cli {

/// "" when `s` is a decimal integer from lo to hi (both included); else what
/// is wrong with it: "'4k' is not a number", "0 is out of range (1 to 64)".
std::string integer_problem(const std::string& s, long lo, long hi);

}  // namespace rcp::cli
