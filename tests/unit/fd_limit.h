/// For tests of what a setup step does when the process has no descriptor
/// left (EMFILE): the soft RLIMIT_NOFILE lowered to 64 and every descriptor
/// below it taken but `spare`, all given back when the test ends.
#pragma once

#include <doctest/doctest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace rcp::test {

class FdsTaken {
 public:
  explicit FdsTaken(size_t spare) {
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &old_) == 0);
    rlimit low = old_;
    low.rlim_cur = 64;
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
    for (int fd; (fd = ::dup(0)) >= 0;) taken_.push_back(fd);
    REQUIRE(errno == EMFILE);
    REQUIRE(taken_.size() >= spare);
    for (size_t i = 0; i < spare; ++i) {
      ::close(taken_.back());
      taken_.pop_back();
    }
  }
  ~FdsTaken() {
    for (int fd : taken_) ::close(fd);
    ::setrlimit(RLIMIT_NOFILE, &old_);
  }
  FdsTaken(const FdsTaken&) = delete;
  FdsTaken& operator=(const FdsTaken&) = delete;

 private:
  rlimit old_{};
  std::vector<int> taken_;
};

}  // namespace rcp::test
