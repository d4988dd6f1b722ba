#include "daemon/glob.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>

#include <algorithm>

#include "fs/path.h"

namespace rcp {

namespace {
bool wild(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }
}  // namespace

bool has_wildcard(const std::string& rel) { return wild(base_name(rel)); }

Result<std::vector<std::string>> expand_wildcard(int root_fd, const std::string& rel, const std::string& shown) {
  const size_t slash = rel.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : rel.substr(0, slash);
  const std::string pattern = slash == std::string::npos ? rel : rel.substr(slash + 1);
  if (wild(dir))
    return make_error(0, "'" + shown + "': wildcards are expanded in the last path component only");
  RCP_ASSIGN(Fd d, open_beneath(root_fd, dir, O_RDONLY | O_DIRECTORY));
  DIR* dp = ::fdopendir(d.get());
  if (!dp) return sys_error("'" + shown + "': cannot read its directory");
  d.release();
  std::vector<std::string> out;
  while (dirent* e = ::readdir(dp)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (::fnmatch(pattern.c_str(), name.c_str(), FNM_PERIOD) != 0) continue;
    out.push_back(dir.empty() ? name : dir + "/" + name);
    if (out.size() > kMaxGlobMatches) {
      ::closedir(dp);
      return make_error(E2BIG, "'" + shown + "' matches more than " + std::to_string(kMaxGlobMatches) + " entries");
    }
  }
  ::closedir(dp);
  if (out.empty()) return make_error(ENOENT, "'" + shown + "': no match");
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace rcp
