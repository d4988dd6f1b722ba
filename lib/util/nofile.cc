#include "util/nofile.h"

#include <algorithm>

namespace rcp {

rlim_t raised_nofile(const rlimit& lim, rlim_t cap) {
  const rlim_t want = std::min(lim.rlim_max, cap);
  return std::max(lim.rlim_cur, want);  // never lowers a soft limit set higher on purpose
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
