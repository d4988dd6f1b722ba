/// The progress line rcp draws on a terminal during a copy, modelled on
/// rsync's --info=progress2: one line for the whole transfer, redrawn in
/// place, gone when the copy ends:
///
///     1.50 GiB / 2.00 GiB   75%  512 MiB/s  0:00:01  [12/100] logs/2024/app.log.gz
///
/// While the source is still walking its tree the totals are only a count
/// that may grow (rsync's "ir-chk"): the line says so with a '+' and shows no
/// percent and no ETA, which would be fiction:
///
///     1.50 GiB / 2.00+ GiB  512 MiB/s  [12/100+] logs/2024/app.log.gz
///
/// The formatter is pure (numbers + width -> string) so tests pin every
/// field; ProgressReporter adds the terminal policy: only on a tty unless
/// forced, at most one redraw every 200 ms (a 2 GiB push at 1 GiB/s is ~10
/// redraws, never a syscall per chunk), "\r" + line + erase-to-end-of-line,
/// and an erased line before any message and at the end.
/// Not thread-safe: call it from the thread that runs the transfer loop.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace rcp::cli {

/// 0 B, 1023 B, 1.00 KiB, 12.3 MiB, 512 MiB, 1.50 GiB, 2.00 TiB (3 significant digits).
std::string human_bytes(uint64_t n);
/// human_bytes + "/s"; "0 B/s" for a rate <= 0.
std::string human_rate(double bytes_per_s);
/// H:MM:SS ("0:00:07", "12:34:56"); "--:--:--" when unknown (negative, NaN, or > 999 h).
std::string format_eta(double seconds);

/// Everything one progress line shows.
struct ProgressState {
  uint64_t bytes_done = 0;
  uint64_t bytes_total = 0;  ///< 0: not known (yet); the line then shows no percent or ETA
  uint64_t files_done = 0;
  uint64_t files_total = 0;  ///< 0: not known
  /// The totals are what is known so far, not final (the walk goes on):
  /// shown with '+', and no percent or ETA.
  bool growing = false;
  double rate = 0;           ///< bytes per second, already smoothed (RateMeter)
  std::string_view current;  ///< the file being copied, "" for none
};

/// The line for `state`, at most width - 1 columns (the last column would
/// make some terminals wrap). The file name is shortened from the left
/// ("...2024/app.log.gz") and its control characters shown as '?', so a name
/// with a newline cannot break the line; columns are counted per UTF-8
/// code point. width < 20 is treated as 20.
std::string format_progress(const ProgressState& state, size_t width);

/// Exponentially weighted rate, time constant tau: a one-second stall moves
/// the shown rate by about 1 - e^(-1/tau) of the way, not to zero.
class RateMeter {
 public:
  explicit RateMeter(double tau_s = 2.0) : tau_(tau_s) {}
  /// Records that `bytes_done` bytes were done at time t (seconds, monotonic).
  /// The first call only sets the origin.
  void sample(double t, uint64_t bytes_done);
  double rate() const { return rate_; }

 private:
  double tau_;
  bool started_ = false;
  bool have_rate_ = false;
  double last_t_ = 0;
  uint64_t last_bytes_ = 0;
  double rate_ = 0;
};

class ProgressReporter {
 public:
  enum class Mode { auto_tty, always, never };
  /// Monotonic seconds; tests pass a fake.
  using Clock = std::function<double()>;

  /// auto_tty: draw only when isatty(fd) and TERM is not "dumb"
  /// (--progress forces `always`, --no-progress and -q give `never`).
  /// width 0: ask the terminal (TIOCGWINSZ) on each redraw, else $COLUMNS, else 80.
  ProgressReporter(int fd, Mode mode, Clock clock = {}, size_t width = 0, double interval_s = 0.2);
  ~ProgressReporter();
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  bool enabled() const { return enabled_; }
  /// Totals as far as known. final = false: a count that may still grow
  /// (the line shows it with '+', without percent or ETA); final: the
  /// totals of the whole copy.
  void set_totals(uint64_t bytes, uint64_t files, bool final = true);
  /// Reports progress; redraws when the last redraw is at least interval old
  /// (the first update draws at once).
  void update(uint64_t bytes_done, uint64_t files_done, std::string_view current);
  /// Erases the line now, e.g. before printing an error; the next update redraws.
  void clear();
  /// Erases the line for good; later calls do nothing. The destructor calls it.
  void finish();

 private:
  void draw(double now);
  void write_all(std::string_view s);
  size_t columns() const;

  int fd_;
  bool enabled_;
  Clock clock_;
  size_t width_;
  double interval_;
  RateMeter meter_;
  ProgressState state_;
  std::string current_;
  bool drawn_ = false;  ///< a line is on the screen
  bool ever_drawn_ = false;
  double last_draw_ = 0;
};

}  // namespace rcp::cli
