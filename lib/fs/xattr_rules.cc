#include "fs/xattr_rules.h"

#include <fmt/core.h>

#include <array>

namespace rcp {
namespace {

constexpr std::string_view kUser = "user.", kTrusted = "trusted.", kSecurity = "security.", kSystem = "system.";
constexpr std::array<std::string_view, 2> kAclNames = {"system.posix_acl_access", "system.posix_acl_default"};

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

std::string xattr_name_problem(std::string_view name) {
  if (name.empty()) return "empty xattr name";
  if (name.size() > kMaxXattrName) return fmt::format("xattr name of {} bytes (at most {})", name.size(), kMaxXattrName);
  if (name.find('\0') != std::string_view::npos) return "xattr name with a NUL byte";
  for (std::string_view ns : {kUser, kTrusted, kSecurity, kSystem})
    if (starts_with(name, ns)) return name.size() > ns.size() ? "" : "xattr name without a name after its namespace";
  return "xattr name without a namespace prefix";
}

bool xattr_wanted(std::string_view name, const XattrScope& scope) {
  if (!xattr_name_problem(name).empty()) return false;
  if (starts_with(name, kSystem)) {
    for (std::string_view acl : kAclNames)
      if (name == acl) return scope.acls;
    return false;
  }
  if (!scope.xattrs) return false;
  return starts_with(name, kUser) || scope.privileged;
}

Status XattrTally::admit(std::string_view name, size_t value_size) {
  if (std::string why = xattr_name_problem(name); !why.empty()) return make_error(EPROTO, why);
  if (!xattr_wanted(name, scope_)) return make_error(EPROTO, fmt::format("xattr '{}' not asked for", name));
  if (value_size > kMaxXattrValue)
    return make_error(EPROTO, fmt::format("xattr '{}' of {} bytes (at most {})", name, value_size, kMaxXattrValue));
  if (names_.count(name)) return make_error(EPROTO, fmt::format("xattr '{}' sent twice", name));
  if (names_.size() >= kMaxXattrsPerEntry)
    return make_error(EPROTO, fmt::format("more than {} xattrs on one entry", kMaxXattrsPerEntry));
  if (bytes_ + name.size() + value_size > kMaxXattrBytesPerEntry)
    return make_error(EPROTO, fmt::format("more than {} bytes of xattrs on one entry", kMaxXattrBytesPerEntry));
  names_.emplace(name);
  bytes_ += name.size() + value_size;
  return {};
}

}  // namespace rcp
