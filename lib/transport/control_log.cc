#include "transport/control_log.h"

#include <fmt/core.h>

namespace rcp {

void ControlLog::on_send(std::span<const uint8_t> message) { log_.emplace_back(message.begin(), message.end()); }

void ControlLog::on_granted(uint64_t n) {
  for (; n > 0 && !log_.empty(); --n) {
    log_.pop_front();
    ++base_;
  }
}

Result<std::vector<std::vector<uint8_t>>> ControlLog::since(uint64_t from) const {
  if (from < base_ || from > sent())
    return make_error(EPROTO, fmt::format("peer says it took {} of our control sends: {} were sent, {} acknowledged",
                                          from, sent(), base_));
  std::vector<std::vector<uint8_t>> out;
  for (size_t i = static_cast<size_t>(from - base_); i < log_.size(); ++i)
    if (!log_[i].empty()) out.push_back(log_[i]);
  return out;
}

}  // namespace rcp
