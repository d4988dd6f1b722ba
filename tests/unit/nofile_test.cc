#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "util/nofile.h"
#include "util/result.h"

using namespace rcp;

TEST_CASE("nofile: the soft limit goes up to the hard one, at most the cap, never down") {
  CHECK(raised_nofile({1024, 524288}, 1 << 20) == 524288);
  CHECK(raised_nofile({1024, RLIM_INFINITY}, 1 << 20) == (1 << 20));  // never asks for infinity
  CHECK(raised_nofile({256, 256}, 1 << 20) == 256);                   // nothing to raise
  CHECK(raised_nofile({4096, 8192}, 2048) == 4096);                   // a soft limit above the cap stays
}

TEST_CASE("nofile: raise_nofile_limit raises this process's soft limit") {
  rlimit old{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &old) == 0);
  if (old.rlim_max < 200) {
    MESSAGE("SKIPPED: the hard RLIMIT_NOFILE is " << old.rlim_max << ", too low to lower the soft one under it");
    return;
  }
  rlimit low = old;
  low.rlim_cur = 100;
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  const rlim_t want = std::min<rlim_t>(old.rlim_max, 1 << 20);
  CHECK(raise_nofile_limit() == want);
  rlimit now{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &now) == 0);
  CHECK(now.rlim_cur == want);
  CHECK(now.rlim_max == old.rlim_max);
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &old) == 0);
}

TEST_CASE("nofile: an EMFILE error says what the limit is and how to raise it; other errors do not") {
  rlimit lim{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &lim) == 0);
  const std::string m = make_error(EMFILE, "open 'x'").message();
  CHECK(m.find("open 'x': Too many open files") == 0);
  CHECK(m.find("RLIMIT_NOFILE allows " + std::to_string(lim.rlim_cur)) != std::string::npos);
  CHECK(m.find("LimitNOFILE=") != std::string::npos);
  CHECK(make_error(ENFILE, "open 'x'").message().find("RLIMIT_NOFILE") == std::string::npos);
  CHECK(make_error(ENOENT, "open 'x'").message() == "open 'x': No such file or directory");
}
