#include "util/result.h"

#include <cstring>

namespace rcp {

std::string Error::message() const {
  if (code == 0) return context;
  return context + ": " + std::strerror(code);
}

Error sys_error(std::string context) { return Error{errno, std::move(context)}; }

Error make_error(int code, std::string context) { return Error{code < 0 ? -code : code, std::move(context)}; }

}  // namespace rcp
