// Proves the progress line shows bytes, percent, rate, ETA and file within the
// terminal width, that odd names cannot break it, that the rate is smoothed,
// and that the reporter redraws at most every interval and erases itself —
// all with an injected clock, so no test waits.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <string>

#include "cli/progress.h"

using namespace rcp::cli;

namespace {

size_t cols(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool contains(const std::string& hay, std::string_view needle) { return hay.find(needle) != std::string::npos; }

/// A pipe standing in for the terminal.
struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int p[2];
    REQUIRE(::pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0);
    r = p[0];
    w = p[1];
  }
  ~Pipe() {
    ::close(r);
    ::close(w);
  }
  std::string drain() {
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(r, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    return out;
  }
};

}  // namespace

TEST_CASE("human units") {
  CHECK(human_bytes(0) == "0 B");
  CHECK(human_bytes(1023) == "1023 B");
  CHECK(human_bytes(1024) == "1.00 KiB");
  CHECK(human_bytes(1536) == "1.50 KiB");
  CHECK(human_bytes(12900) == "12.6 KiB");
  CHECK(human_bytes(512ull << 20) == "512 MiB");
  CHECK(human_bytes((1ull << 20) - 1) == "1.00 MiB");  // never "1024 KiB"
  CHECK(human_bytes(3ull << 29) == "1.50 GiB");
  CHECK(human_bytes(2ull << 40) == "2.00 TiB");
  CHECK(human_bytes(UINT64_MAX) == "16.0 EiB");
  CHECK(human_rate(0) == "0 B/s");
  CHECK(human_rate(-5) == "0 B/s");
  CHECK(human_rate(512.0 * (1 << 20)) == "512 MiB/s");
  CHECK(human_rate(1e30) == "16.0 EiB/s");
}

TEST_CASE("ETA as H:MM:SS") {
  CHECK(format_eta(0) == "0:00:00");
  CHECK(format_eta(7.4) == "0:00:07");
  CHECK(format_eta(59.6) == "0:01:00");
  CHECK(format_eta(12 * 3600 + 34 * 60 + 56) == "12:34:56");
  CHECK(format_eta(-1) == "--:--:--");
  CHECK(format_eta(1e12) == "--:--:--");
}

TEST_CASE("the line: bytes, total, percent, rate, ETA, files, current file") {
  ProgressState st;
  st.bytes_done = 3ull << 29;  // 1.5 GiB
  st.bytes_total = 2ull << 30;
  st.files_done = 12;
  st.files_total = 100;
  st.rate = 512.0 * (1 << 20);
  st.current = "logs/2024/app.log.gz";
  const std::string line = format_progress(st, 100);
  CHECK(contains(line, "1.50 GiB / 2.00 GiB"));
  CHECK(contains(line, " 75%"));
  CHECK(contains(line, "512 MiB/s"));
  CHECK(contains(line, "0:00:01"));
  CHECK(contains(line, "[12/100]"));
  CHECK(line.size() >= std::string("logs/2024/app.log.gz").size());
  CHECK(line.substr(line.size() - 20) == "logs/2024/app.log.gz");
  CHECK(cols(line) <= 99);
  // A narrow terminal drops whole fields from the end, never half a unit.
  const std::string narrow = format_progress(st, 40);
  CHECK(contains(narrow, "512 MiB/s"));
  CHECK_FALSE(contains(narrow, "[12/100]"));
  CHECK(cols(narrow) <= 39);
}

TEST_CASE("unknown totals: no percent, no ETA; unknown rate: ETA unknown") {
  ProgressState st;
  st.bytes_done = 2048;
  st.files_done = 3;
  st.rate = 1024;
  std::string line = format_progress(st, 80);
  CHECK(contains(line, "2.00 KiB"));
  CHECK_FALSE(contains(line, "%"));
  CHECK_FALSE(contains(line, ":"));
  CHECK(contains(line, "[3]"));
  st.bytes_total = 4096;
  st.rate = 0;
  line = format_progress(st, 80);
  CHECK(contains(line, "50%"));
  CHECK(contains(line, "--:--:--"));
  st.bytes_done = 4096;  // done: ETA 0 even without a rate
  CHECK(contains(format_progress(st, 80), "0:00:00"));
  st.bytes_done = 5000;  // more than announced (a growing file): clamp at 100%
  CHECK(contains(format_progress(st, 80), "100%"));
}

TEST_CASE("growing totals (the source still walks): '+', no percent, no ETA, as rsync's ir-chk") {
  ProgressState st;
  st.bytes_done = 3ull << 29;  // 1.5 GiB
  st.bytes_total = 2ull << 30;
  st.files_done = 12;
  st.files_total = 100;
  st.rate = 512.0 * (1 << 20);
  st.growing = true;
  std::string line = format_progress(st, 100);
  CHECK_MESSAGE(contains(line, "1.50 GiB / 2.00+ GiB"), line);
  CHECK_MESSAGE(contains(line, "[12/100+]"), line);
  CHECK(contains(line, "512 MiB/s"));
  CHECK_FALSE(contains(line, "%"));
  CHECK_FALSE(contains(line, ":"));  // no ETA, not even "--:--:--"
  // Done beyond the count so far (files begun after it was sent): the count
  // shown is at least what is done, never "[150/100+]".
  st.files_done = 150;
  st.bytes_done = 3ull << 30;
  line = format_progress(st, 100);
  CHECK_MESSAGE(contains(line, "[150/150+]"), line);
  CHECK_MESSAGE(contains(line, "3.00 GiB / 3.00+ GiB"), line);
  // Final: percent and ETA over the totals.
  st.growing = false;
  st.files_done = 12;
  st.bytes_done = 3ull << 29;
  line = format_progress(st, 100);
  CHECK(contains(line, " 75%"));
  CHECK(contains(line, "0:00:01"));
  CHECK(contains(line, "[12/100]"));
}

TEST_CASE("final totals a peer lied about: clamped, never a negative or absurd ETA") {
  ProgressState st;
  st.bytes_total = 1000;
  st.files_total = 2;
  st.bytes_done = 5000;  // more than announced
  st.files_done = 7;
  st.rate = 100;
  std::string line = format_progress(st, 100);
  CHECK_MESSAGE(contains(line, "100%"), line);
  CHECK(contains(line, "0:00:00"));
  CHECK(contains(line, "[2/2]"));
  CHECK_FALSE(contains(line, "-"));
  st.bytes_total = UINT64_MAX;  // absurd: the ETA is unknown, not a huge number
  st.bytes_done = 1;
  st.rate = 1;
  line = format_progress(st, 100);
  CHECK_MESSAGE(contains(line, "16.0 EiB"), line);
  CHECK(contains(line, "  0%"));
  CHECK(contains(line, "--:--:--"));
  st.rate = 0;
  CHECK(contains(format_progress(st, 100), "--:--:--"));
}

TEST_CASE("the line never reaches the last column; long names keep their tail") {
  ProgressState st;
  st.bytes_done = 1;
  st.bytes_total = 10;
  st.rate = 1;
  std::string name(300, 'a');
  name += "/the-end.bin";
  st.current = name;
  for (size_t w : {20, 40, 60, 80, 132, 300}) {
    const std::string line = format_progress(st, w);
    CHECK_MESSAGE(cols(line) <= w - 1, w);
    if (w >= 80) {
      CHECK(contains(line, "..."));
      CHECK(line.substr(line.size() - 11) == "the-end.bin");
    }
  }
  CHECK(cols(format_progress(st, 5)) <= 19);  // too narrow: treated as 20
}

TEST_CASE("names cannot break the line: control characters become '?', UTF-8 is cut on code points") {
  ProgressState st;
  st.current = "evil\nname\r\x1b[2Jx";
  std::string line = format_progress(st, 80);
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.find('\r') == std::string::npos);
  CHECK(line.find('\x1b') == std::string::npos);
  CHECK(contains(line, "evil?name??[2Jx"));
  std::string utf8;
  for (int i = 0; i < 100; ++i) utf8 += "\xE6\x97\xA5";  // 日 × 100
  st.current = utf8;
  line = format_progress(st, 60);
  CHECK(cols(line) <= 59);
  // Ends on a whole code point.
  CHECK(line.substr(line.size() - 3) == "\xE6\x97\xA5");
  CHECK(contains(line, "...\xE6\x97\xA5"));
}

TEST_CASE("RateMeter: first rate from the start, then smoothed") {
  RateMeter m(2.0);
  m.sample(0, 0);
  CHECK(m.rate() == 0);
  m.sample(0.05, 1000);  // too soon for a first rate
  CHECK(m.rate() == 0);
  m.sample(1, 100 << 20);
  CHECK(m.rate() == doctest::Approx(100 << 20));
  // A one-second stall moves the rate part of the way down, not to zero.
  m.sample(2, 100 << 20);
  CHECK(m.rate() > 50.0 * (1 << 20));
  CHECK(m.rate() < 70.0 * (1 << 20));
  // Sustained new rate converges.
  uint64_t b = 100 << 20;
  for (int t = 3; t < 40; ++t) m.sample(t, b += 10 << 20);
  CHECK(m.rate() == doctest::Approx(10 << 20).epsilon(0.01));
  // The same instant twice does not divide by zero.
  m.sample(39, b + 5);
  CHECK(m.rate() == doctest::Approx(10 << 20).epsilon(0.01));
}

TEST_CASE("ProgressReporter: redraws at most every interval, \\r + line + erase, erased at the end") {
  Pipe p;
  double now = 100;
  {
    ProgressReporter r(p.w, ProgressReporter::Mode::always, [&] { return now; }, 80);
    CHECK(r.enabled());
    r.set_totals(1000, 2);
    r.update(0, 0, "a.bin");
    std::string out = p.drain();
    CHECK(out.substr(0, 1) == "\r");
    CHECK(out.substr(out.size() - 3) == "\x1b[K");
    CHECK(contains(out, "a.bin"));
    now += 0.1;
    r.update(100, 0, "a.bin");
    CHECK(p.drain().empty());  // within 200 ms: no redraw
    now += 0.15;
    r.update(500, 1, "b.bin");
    out = p.drain();
    CHECK(contains(out, "b.bin"));
    CHECK(contains(out, "50%"));
    CHECK(contains(out, "[1/2]"));
    CHECK(contains(out, "B/s"));
    // clear() erases at once, and the next update redraws without waiting.
    r.clear();
    CHECK(p.drain() == "\r\x1b[K");
    r.clear();
    CHECK(p.drain().empty());  // nothing on screen: nothing to erase
    now += 0.01;
    r.update(600, 1, "b.bin");
    CHECK(contains(p.drain(), "60%"));
    r.finish();
    CHECK(p.drain() == "\r\x1b[K");
    now += 1;
    r.update(1000, 2, "c.bin");  // after finish: silent
    CHECK(p.drain().empty());
  }
  CHECK(p.drain().empty());  // destructor: already finished
}

TEST_CASE("ProgressReporter: totals grow while the walk goes on, then become final") {
  Pipe p;
  double now = 100;
  ProgressReporter r(p.w, ProgressReporter::Mode::always, [&] { return now; }, 100);
  r.set_totals(4000, 4, false);
  r.update(1000, 1, "a");
  std::string out = p.drain();
  CHECK_MESSAGE(contains(out, "[1/4+]"), out);
  CHECK_FALSE(contains(out, "%"));
  now += 1;
  r.set_totals(8000, 8, true);
  r.update(2000, 2, "b");
  out = p.drain();
  CHECK_MESSAGE(contains(out, "25%"), out);
  CHECK(contains(out, "[2/8]"));
  CHECK(contains(out, "0:00:0"));  // an ETA from the rate
  now += 1;
  r.set_totals(8000, 8);  // the default is final (a push of named files)
  r.update(4000, 4, "c");
  CHECK(contains(p.drain(), "50%"));
}

TEST_CASE("ProgressReporter: off when not a tty (auto) or never; the destructor erases") {
  Pipe p;
  {
    ProgressReporter r(p.w, ProgressReporter::Mode::auto_tty, [] { return 0.0; }, 80);
    CHECK_FALSE(r.enabled());
    r.update(1, 1, "x");
  }
  {
    ProgressReporter r(p.w, ProgressReporter::Mode::never, [] { return 0.0; }, 80);
    CHECK_FALSE(r.enabled());
    r.update(1, 1, "x");
  }
  CHECK(p.drain().empty());
  {
    ProgressReporter r(p.w, ProgressReporter::Mode::always, [] { return 0.0; }, 80);
    r.update(1, 1, "x");
    CHECK_FALSE(p.drain().empty());
  }
  CHECK(p.drain() == "\r\x1b[K");
}

TEST_CASE("ProgressReporter: a closed terminal stops drawing instead of failing") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  ::close(fds[0]);
  // Writing to a pipe without a reader raises SIGPIPE unless ignored; rcp ignores it.
  auto old = ::signal(SIGPIPE, SIG_IGN);
  ProgressReporter r(fds[1], ProgressReporter::Mode::always, [] { return 0.0; }, 80);
  r.update(1, 1, "x");
  CHECK_FALSE(r.enabled());
  ::signal(SIGPIPE, old);
  ::close(fds[1]);
}
