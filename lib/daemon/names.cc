// The name rules of daemon/config.h, in rcpcore: the authentication
// handshake (lib/auth, also in rcpcore) checks names with them, and rcpcore
// must not need the TOML parser.
#include <algorithm>
#include <string_view>

#include "daemon/config.h"

namespace rcp::daemon {
namespace {
bool portable(char c, std::string_view extra) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         extra.find(c) != std::string_view::npos;
}
}  // namespace

bool valid_module_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxModuleName || s[0] == '.' || s[0] == '-') return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return portable(c, "_.-"); });
}

bool valid_user_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxUserName || s[0] == '-') return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return portable(c, "_.@-"); });
}

}  // namespace rcp::daemon
