#include "util/token_bucket.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace rcp {

TokenBucket::TokenBucket(uint64_t rate, uint64_t burst, int64_t now_ns)
    : rate_(static_cast<double>(std::max<uint64_t>(rate, 1)) / 1e9),
      burst_(static_cast<double>(burst)),
      tokens_(static_cast<double>(burst)),
      last_ns_(now_ns) {}

double TokenBucket::balance(int64_t now_ns) const {
  const double dt = now_ns > last_ns_ ? static_cast<double>(now_ns - last_ns_) : 0.0;
  return std::min(burst_, tokens_ + dt * rate_);
}

bool TokenBucket::take(uint64_t n, int64_t now_ns) {
  tokens_ = balance(now_ns);
  last_ns_ = std::max(last_ns_, now_ns);
  if (tokens_ < 0) return false;
  tokens_ -= static_cast<double>(n);
  return true;
}

int64_t TokenBucket::wait_ns(int64_t now_ns) const {
  const double b = balance(now_ns);
  if (b >= 0) return 0;
  return static_cast<int64_t>(std::ceil(-b / rate_));
}

Result<uint64_t> parse_rate(std::string_view s) {
  const std::string text(s);
  const auto bad = [&] {
    return make_error(EINVAL, "--bwlimit '" + text + "': not a rate (a number of KiB/s, or with K, M, G, KB, MB, GB or B)");
  };
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.')) return bad();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || !std::isfinite(v) || v < 0) return bad();
  std::string suf(end);
  for (auto& c : suf) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double unit = 0;
  if (suf.empty() || suf == "k" || suf == "kib") unit = 1024.0;
  else if (suf == "m" || suf == "mib") unit = 1024.0 * 1024;
  else if (suf == "g" || suf == "gib") unit = 1024.0 * 1024 * 1024;
  else if (suf == "kb") unit = 1e3;
  else if (suf == "mb") unit = 1e6;
  else if (suf == "gb") unit = 1e9;
  else if (suf == "b") unit = 1;
  else return bad();
  const double bytes = v * unit;
  if (bytes == 0) return uint64_t{0};
  if (bytes < 1024) return make_error(EINVAL, "--bwlimit '" + text + "': below the minimum of 1 KiB/s");
  if (bytes > 1e18) return bad();
  return static_cast<uint64_t>(bytes);
}

}  // namespace rcp
