/// WALK_TOTALS, both ends (wire/messages.h): the source tallies what its
/// walk has begun and says when to announce it; the sink checks every
/// announcement against what it is then sent. A session's source walks its
/// tree as the copy goes (fs/sources.h), so its totals are final only once
/// the walk is over — as rsync's incremental recursion, whose progress shows
/// "ir-chk" until the file list is complete and "to-chk" after.
#pragma once

#include <cstdint>
#include <optional>

#include "util/result.h"
#include "wire/messages.h"

namespace rcp {

/// Source: entries of the walk — begun (FILE_BEGIN sent) or failed
/// (FILE_SKIPPED with an error; a notice is no entry) — and the sum of the
/// sizes begun.
class WalkTally {
 public:
  /// A non-final count is sent at most this often (a long walk of small
  /// files: about one message a second, never one per file).
  static constexpr double kInterval = 1.0;

  /// The walk starts (monotonic seconds): the first growing count is due an
  /// interval later. Without it the first due() starts the clock.
  void start(double now);
  void begun(uint64_t size);
  /// What to announce now, if anything: once the walk is over (walk_over)
  /// the final totals, exactly once; before, the count when it grew and the
  /// last announcement is kInterval old (now: monotonic seconds).
  std::optional<wire::WalkTotals> due(bool walk_over, double now);
  bool final_sent() const { return final_sent_; }

 private:
  uint64_t files_ = 0, bytes_ = 0;
  uint64_t sent_files_ = 0, sent_bytes_ = 0;
  bool final_sent_ = false;
  bool started_ = false;
  double last_ = 0;
};

/// Sink: a source's WALK_TOTALS may only be true. Refused (the message says
/// why, for proto_error): an announcement below what was already begun or
/// below an earlier one, one after the final one, and a FILE_BEGIN that
/// would exceed final totals. Sums saturate: a peer's sizes cannot wrap them.
class WalkTotalsCheck {
 public:
  /// A FILE_BEGIN of `size` bytes, or (size 0) a failed FILE_SKIPPED.
  Status begin(uint64_t size);
  Status announce(const wire::WalkTotals& t);
  bool final() const { return final_; }

 private:
  uint64_t files_ = 0, bytes_ = 0;  // begun
  uint64_t said_files_ = 0, said_bytes_ = 0;
  bool final_ = false;
};

}  // namespace rcp
