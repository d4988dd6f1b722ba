/// Helpers the unit tests of file-system code share: a scratch directory and
/// a check on an error's message.
#pragma once

#include <doctest/doctest.h>

#include <fcntl.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "util/fd.h"
#include "util/result.h"

namespace rcp::test {

/// A fresh directory under /tmp, opened (O_DIRECTORY); removed with all it
/// holds when the test ends, a failed REQUIRE included.
struct ScratchDir {
  std::string dir;
  Fd fd;
  ScratchDir() {
    char tmpl[] = "/tmp/rcp-unit-test.XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    fd.reset(::open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd.valid());
  }
  ~ScratchDir() { std::filesystem::remove_all(dir); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string at(const std::string& name) const { return dir + "/" + name; }
};

/// The error's message holds `words`.
inline bool says(const Error& e, const std::string& words) { return e.message().find(words) != std::string::npos; }

}  // namespace rcp::test
