#include "util/result.h"

#include <cerrno>
#include <cstring>

#include "util/nofile.h"

namespace rcp {

std::string Error::message() const {
  if (code == 0) return context;
  // Out of descriptors: how many this process may have, and what raises it
  // (the soft limit is already at the hard one: util/nofile.h).
  if (code == EMFILE) return context + ": " + std::strerror(code) + nofile_advice();
  return context + ": " + std::strerror(code);
}

Error sys_error(std::string context) { return Error{errno, std::move(context)}; }

Error make_error(int code, std::string context) { return Error{code < 0 ? -code : code, std::move(context)}; }

}  // namespace rcp
