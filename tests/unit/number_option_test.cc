#include <doctest/doctest.h>

#include "cli/number_option.h"

using rcp::cli::integer_problem;

TEST_CASE("integer_problem: a number within the range passes, both ends included") {
  CHECK(integer_problem("1", 1, 64) == "");
  CHECK(integer_problem("64", 1, 64) == "");
  CHECK(integer_problem("-3", -5, 5) == "");
}

TEST_CASE("integer_problem: outside the range, in words") {
  CHECK(integer_problem("0", 1, 64) == "0 is out of range (1 to 64)");
  CHECK(integer_problem("65", 1, 64) == "65 is out of range (1 to 64)");
  // Past what a long holds: out of range too, not "not a number" and not a wrapped value.
  CHECK(integer_problem("99999999999999999999", 1, 64) == "99999999999999999999 is out of range (1 to 64)");
}

TEST_CASE("integer_problem: what is not a whole number") {
  CHECK(integer_problem("abc", 1, 64) == "'abc' is not a number");
  CHECK(integer_problem("4k", 1, 64) == "'4k' is not a number");  // trailing junk is not ignored
  CHECK(integer_problem("", 1, 64) == "'' is not a number");
  CHECK(integer_problem("1.5", 1, 64) == "'1.5' is not a number");
}
