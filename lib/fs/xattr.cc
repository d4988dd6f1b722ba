#include "fs/xattr.h"

#include <sys/xattr.h>

#include <algorithm>
#include <cerrno>
#include <fmt/core.h>
#include <string_view>

namespace rcp {
namespace {

/// flistxattr's NUL-separated names. The list may grow between the size
/// query and the read (ERANGE): asked again, at most 4 times.
Result<std::string> list_names(int fd) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    const ssize_t need = ::flistxattr(fd, nullptr, 0);
    if (need < 0) return sys_error("listxattr");
    std::string buf(static_cast<size_t>(need), '\0');
    if (need == 0) return buf;
    const ssize_t got = ::flistxattr(fd, buf.data(), buf.size());
    if (got >= 0) {
      buf.resize(static_cast<size_t>(got));
      return buf;
    }
    if (errno != ERANGE) return sys_error("listxattr");
  }
  return make_error(ERANGE, "listxattr: the list keeps growing");
}

/// One value; the error says ENODATA when the xattr went away meanwhile.
Result<std::string> get_value(int fd, const std::string& name) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    const ssize_t need = ::fgetxattr(fd, name.c_str(), nullptr, 0);
    if (need < 0) return sys_error(fmt::format("getxattr '{}'", name));
    std::string v(static_cast<size_t>(need), '\0');
    if (need == 0) return v;
    const ssize_t got = ::fgetxattr(fd, name.c_str(), v.data(), v.size());
    if (got >= 0) {
      v.resize(static_cast<size_t>(got));
      return v;
    }
    if (errno != ERANGE) return sys_error(fmt::format("getxattr '{}'", name));
  }
  return make_error(ERANGE, fmt::format("getxattr '{}': the value keeps growing", name));
}

/// Each name of a NUL-separated list.
template <typename F>
void for_each_name(const std::string& list, F&& f) {
  size_t at = 0;
  while (at < list.size()) {
    size_t end = list.find('\0', at);
    if (end == std::string::npos) end = list.size();
    if (end > at) f(std::string_view(list).substr(at, end - at));
    at = end + 1;
  }
}

}  // namespace

bool xattrs_unsupported(int code) { return code == ENOTSUP || code == EOPNOTSUPP; }

Result<std::vector<Xattr>> read_xattrs(int fd, const XattrScope& scope) {
  std::vector<Xattr> out;
  auto list = list_names(fd);
  if (!list.ok()) {
    if (xattrs_unsupported(list.error().code)) return out;
    return list.error();
  }
  XattrTally tally(scope);
  Status bad;
  for_each_name(*list, [&](std::string_view name) {
    if (!bad.ok() || !xattr_wanted(name, scope)) return;
    auto v = get_value(fd, std::string(name));
    if (!v.ok()) {
      if (v.error().code != ENODATA) bad = v.error();
      return;
    }
    if (Status st = tally.admit(name, v->size()); !st.ok()) {
      bad = make_error(E2BIG, st.error().context);
      return;
    }
    out.push_back(Xattr{std::string(name), std::move(v.value())});
  });
  if (!bad.ok()) return bad.error();
  return out;
}

Status set_xattr(int fd, const Xattr& x) {
  if (::fsetxattr(fd, x.name.c_str(), x.value.data(), x.value.size(), 0) != 0)
    return sys_error(fmt::format("setxattr '{}'", x.name));
  return {};
}

Status apply_xattrs(int fd, const std::vector<Xattr>& want, const XattrScope& scope) {
  Status first;
  for (const Xattr& x : want) {
    if (!xattr_wanted(x.name, scope)) continue;
    if (Status st = set_xattr(fd, x); !st.ok() && first.ok()) first = st;
  }
  Status rest = remove_other_xattrs(fd, want, scope);
  return first.ok() ? rest : first;
}

Status remove_other_xattrs(int fd, const std::vector<Xattr>& keep, const XattrScope& scope) {
  auto list = list_names(fd);
  if (!list.ok()) {
    if (xattrs_unsupported(list.error().code)) return {};
    return list.error();
  }
  Status bad;
  for_each_name(*list, [&](std::string_view name) {
    if (!bad.ok() || !xattr_wanted(name, scope)) return;
    if (std::any_of(keep.begin(), keep.end(), [&](const Xattr& x) { return x.name == name; })) return;
    const std::string n(name);
    if (::fremovexattr(fd, n.c_str()) != 0 && errno != ENODATA) bad = sys_error(fmt::format("removexattr '{}'", n));
  });
  return bad;
}

}  // namespace rcp
