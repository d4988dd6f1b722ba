#include "cli/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace rcp::cli {

namespace {

constexpr std::string_view kEraseToEol = "\x1b[K";

std::string three_digits(double v, const char* unit) {
  char buf[32];
  if (v < 9.995)
    std::snprintf(buf, sizeof buf, "%.2f %s", v, unit);
  else if (v < 99.95)
    std::snprintf(buf, sizeof buf, "%.1f %s", v, unit);
  else
    std::snprintf(buf, sizeof buf, "%.0f %s", v, unit);
  return buf;
}

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

size_t columns_of(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += !is_continuation(c);
  return n;
}

/// Control characters (and DEL) become '?': a name is data, never a terminal command.
std::string printable(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = '?';
  }
  return out;
}

/// The last `cols` columns of s, prefixed with "..." when shortened.
std::string tail_columns(std::string_view s, size_t cols) {
  if (columns_of(s) <= cols) return std::string(s);
  if (cols <= 3) return std::string(cols, '.');
  size_t keep = cols - 3, i = s.size();
  while (i > 0 && keep > 0) {
    --i;
    if (!is_continuation(static_cast<unsigned char>(s[i]))) --keep;
  }
  return "..." + std::string(s.substr(i));
}

/// The first `cols` columns of s.
std::string head_columns(std::string_view s, size_t cols) {
  size_t i = 0, n = 0;
  while (i < s.size()) {
    if (!is_continuation(static_cast<unsigned char>(s[i]))) {
      if (n == cols) break;
      ++n;
    }
    ++i;
  }
  return std::string(s.substr(0, i));
}

std::string pad_left(std::string s, size_t w) {
  if (s.size() < w) s.insert(0, w - s.size(), ' ');
  return s;
}

}  // namespace

std::string human_bytes(uint64_t n) {
  if (n < 1024) return std::to_string(n) + " B";
  static const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(n) / 1024;
  int u = 0;
  // Switch unit before rounding would print "1024 KiB".
  while (v >= 999.5 && u < 5) {
    v /= 1024;
    ++u;
  }
  return three_digits(v, units[u]);
}

std::string human_rate(double bytes_per_s) {
  if (!(bytes_per_s > 0)) return "0 B/s";
  if (bytes_per_s >= 1.8e19) return human_bytes(UINT64_MAX) + "/s";
  return human_bytes(static_cast<uint64_t>(bytes_per_s)) + "/s";
}

std::string format_eta(double seconds) {
  if (!(seconds >= 0) || seconds > 999.0 * 3600) return "--:--:--";
  const auto s = static_cast<uint64_t>(std::llround(seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llu:%02llu:%02llu", static_cast<unsigned long long>(s / 3600),
                static_cast<unsigned long long>(s / 60 % 60), static_cast<unsigned long long>(s % 60));
  return buf;
}

std::string format_progress(const ProgressState& st, size_t width) {
  width = std::max<size_t>(width, 20);
  const size_t cols = width - 1;
  // Fields in order of importance; on a narrow terminal the last ones go first.
  std::vector<std::string> fields;
  std::string bytes = pad_left(human_bytes(st.bytes_done), 10);
  if (st.bytes_total > 0 && st.growing) {
    // Bytes known so far: a lower bound, never a percentage of it.
    std::string total = human_bytes(std::max(st.bytes_total, st.bytes_done));
    total.insert(total.find(' '), "+");
    bytes += " / " + total;
  } else if (st.bytes_total > 0) {
    const uint64_t done = std::min(st.bytes_done, st.bytes_total);
    const auto pct = static_cast<unsigned>(static_cast<long double>(done) * 100 / st.bytes_total);
    bytes += " / " + human_bytes(st.bytes_total) + pad_left(std::to_string(pct) + "%", 6);
  }
  fields.push_back(std::move(bytes));
  fields.push_back(pad_left(human_rate(st.rate), 10));
  if (st.bytes_total > 0 && !st.growing) {
    const double left = static_cast<double>(st.bytes_total - std::min(st.bytes_done, st.bytes_total));
    fields.push_back(format_eta(left == 0 ? 0 : st.rate > 0 ? left / st.rate : -1));
  }
  // Done never shows above the total: a final total clamps it (a source
  // that sent more than it announced is refused by the sink anyway), a
  // growing one is at least what is done.
  if (st.files_total > 0 && st.growing)
    fields.push_back("[" + std::to_string(st.files_done) + "/" + std::to_string(std::max(st.files_done, st.files_total)) +
                     "+]");
  else if (st.files_total > 0)
    fields.push_back("[" + std::to_string(std::min(st.files_done, st.files_total)) + "/" +
                     std::to_string(st.files_total) + "]");
  else if (st.files_done > 0)
    fields.push_back("[" + std::to_string(st.files_done) + "]");
  auto join = [&] {
    std::string line;
    for (const auto& f : fields) line += (line.empty() ? "" : "  ") + f;
    return line;
  };
  std::string line = join();
  while (columns_of(line) > cols && fields.size() > 1) {
    fields.pop_back();
    line = join();
  }
  if (columns_of(line) > cols) return head_columns(line, cols);
  if (!st.current.empty() && columns_of(line) + 1 < cols) {
    const size_t room = cols - columns_of(line) - 1;
    if (room >= 4) line += " " + tail_columns(printable(st.current), room);
  }
  return line;
}

void RateMeter::sample(double t, uint64_t bytes_done) {
  if (!started_) {
    started_ = true;
    last_t_ = t;
    last_bytes_ = bytes_done;
    return;
  }
  const double dt = t - last_t_;
  // Same instant, or too soon after the start for a meaningful first rate:
  // keep the origin and wait for time to pass.
  if (dt <= 0 || (!have_rate_ && dt < 0.1)) return;
  const double inst = static_cast<double>(bytes_done >= last_bytes_ ? bytes_done - last_bytes_ : 0) / dt;
  if (!have_rate_) {
    rate_ = inst;
    have_rate_ = true;
  } else {
    const double alpha = 1 - std::exp(-dt / tau_);
    rate_ += alpha * (inst - rate_);
  }
  last_t_ = t;
  last_bytes_ = bytes_done;
}

ProgressReporter::ProgressReporter(int fd, Mode mode, Clock clock, size_t width, double interval_s)
    : fd_(fd), clock_(std::move(clock)), width_(width), interval_(interval_s) {
  if (mode == Mode::always) {
    enabled_ = true;
  } else if (mode == Mode::never) {
    enabled_ = false;
  } else {
    const char* term = std::getenv("TERM");
    enabled_ = ::isatty(fd) == 1 && !(term && std::strcmp(term, "dumb") == 0);
  }
  if (!clock_) {
    clock_ = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
  }
  if (enabled_) meter_.sample(clock_(), 0);
}

ProgressReporter::~ProgressReporter() { finish(); }

void ProgressReporter::set_totals(uint64_t bytes, uint64_t files, bool final) {
  state_.bytes_total = bytes;
  state_.files_total = files;
  state_.growing = !final;
}

void ProgressReporter::update(uint64_t bytes_done, uint64_t files_done, std::string_view current) {
  if (!enabled_) return;
  state_.bytes_done = bytes_done;
  state_.files_done = files_done;
  if (current != current_) current_ = current;
  const double now = clock_();
  if (ever_drawn_ && drawn_ && now - last_draw_ < interval_) return;
  draw(now);
}

void ProgressReporter::draw(double now) {
  meter_.sample(now, state_.bytes_done);
  state_.rate = meter_.rate();
  state_.current = current_;
  std::string out = "\r" + format_progress(state_, columns());
  out += kEraseToEol;
  write_all(out);
  drawn_ = ever_drawn_ = true;
  last_draw_ = now;
}

void ProgressReporter::clear() {
  if (!enabled_ || !drawn_) return;
  write_all(std::string("\r") + std::string(kEraseToEol));
  drawn_ = false;
}

void ProgressReporter::finish() {
  clear();
  enabled_ = false;
}

size_t ProgressReporter::columns() const {
  if (width_ > 0) return width_;
  struct winsize ws{};
  if (::ioctl(fd_, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* c = std::getenv("COLUMNS")) {
    const long v = std::strtol(c, nullptr, 10);
    if (v > 0 && v < 10000) return static_cast<size_t>(v);
  }
  return 80;
}

void ProgressReporter::write_all(std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::write(fd_, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // a closed terminal: stop drawing rather than fail the copy
      enabled_ = false;
      return;
    }
    s.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace rcp::cli
