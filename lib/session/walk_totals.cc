#include "session/walk_totals.h"

#include <fmt/core.h>

namespace rcp {
namespace {

uint64_t add_sat(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

}  // namespace

void WalkTally::start(double now) {
  started_ = true;
  last_ = now;
}

void WalkTally::begun(uint64_t size) {
  ++files_;
  bytes_ = add_sat(bytes_, size);
}

std::optional<wire::WalkTotals> WalkTally::due(bool walk_over, double now) {
  if (final_sent_) return std::nullopt;
  if (!started_) {  // the first count waits an interval: a short walk sends only its final one
    started_ = true;
    last_ = now;
  }
  if (!walk_over) {
    if (now - last_ < kInterval || (files_ == sent_files_ && bytes_ == sent_bytes_)) return std::nullopt;
  } else {
    final_sent_ = true;
  }
  last_ = now;
  sent_files_ = files_;
  sent_bytes_ = bytes_;
  return wire::WalkTotals{files_, bytes_, static_cast<uint8_t>(walk_over ? 1 : 0)};
}

Status WalkTotalsCheck::begin(uint64_t size) {
  const uint64_t files = files_ + 1, bytes = add_sat(bytes_, size);
  if (final_ && (files > said_files_ || bytes > said_bytes_))
    return make_error(EPROTO, fmt::format("FILE_BEGIN beyond the announced totals ({} entries, {} bytes)", said_files_,
                                          said_bytes_));
  files_ = files;
  bytes_ = bytes;
  return {};
}

Status WalkTotalsCheck::announce(const wire::WalkTotals& t) {
  if (final_) return make_error(EPROTO, "WALK_TOTALS after the final one");
  if (t.files < files_ || t.bytes < bytes_)
    return make_error(EPROTO, fmt::format("WALK_TOTALS of {} entries, {} bytes, when {} entries, {} bytes were begun",
                                          t.files, t.bytes, files_, bytes_));
  if (t.files < said_files_ || t.bytes < said_bytes_) return make_error(EPROTO, "WALK_TOTALS decreased");
  said_files_ = t.files;
  said_bytes_ = t.bytes;
  final_ = t.final != 0;
  return {};
}

}  // namespace rcp
