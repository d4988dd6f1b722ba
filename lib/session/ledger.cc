#include "session/ledger.h"

namespace rcp {

bool FileLedger::claim(uint64_t offset, uint64_t length) {
  if (length == 0 || offset > size_ || size_ - offset < length) return false;
  const uint64_t end = offset + length;
  auto next = claimed_.lower_bound(offset);
  if (next != claimed_.end() && next->first < end) return false;
  if (next != claimed_.begin()) {
    auto prev = std::prev(next);
    if (prev->second > offset) return false;
    if (prev->second == offset) {  // merge with the range before, keeps the map small
      prev->second = end;
      if (next != claimed_.end() && next->first == end) {
        prev->second = next->second;
        claimed_.erase(next);
      }
      return true;
    }
  }
  if (next != claimed_.end() && next->first == end) {
    uint64_t e = next->second;
    claimed_.erase(next);
    claimed_.emplace(offset, e);
    return true;
  }
  claimed_.emplace(offset, end);
  return true;
}

void FileLedger::add_digest(uint64_t offset, uint64_t length, const Digest& d) {
  waiting_.emplace(offset, std::make_pair(length, d));
  for (auto it = waiting_.begin(); it != waiting_.end() && it->first == folded_; it = waiting_.begin()) {
    hasher_.add_chunk(it->second.second);
    folded_ += it->second.first;
    waiting_.erase(it);
  }
}

}  // namespace rcp
