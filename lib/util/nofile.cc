#include "util/nofile.h"

#include <algorithm>
#include <string>

namespace rcp {

rlim_t raised_nofile(const rlimit& lim, rlim_t cap) {
  const rlim_t want = std::min(lim.rlim_max, cap);
  return std::max(lim.rlim_cur, want);  // never lowers a soft limit set higher on purpose
}

std::string nofile_advice() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return {};
  return " (RLIMIT_NOFILE allows " + std::to_string(lim.rlim_cur) +
         "; raise its hard limit: ulimit -Hn as root, LimitNOFILE= for a service)";
}

rlim_t raise_nofile_limit(rlim_t cap) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
  const rlim_t want = raised_nofile(lim, cap);
  if (want == lim.rlim_cur) return lim.rlim_cur;
  rlimit raised = lim;
  raised.rlim_cur = want;
  return ::setrlimit(RLIMIT_NOFILE, &raised) == 0 ? want : lim.rlim_cur;
}

}  // namespace rcp
