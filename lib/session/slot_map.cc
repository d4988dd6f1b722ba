#include "session/slot_map.h"

#include <algorithm>
#include <bit>

namespace rcp {

SlotMap::SlotMap(uint32_t slots, uint32_t chunk, uint32_t sub, uint32_t max_ids)
    : slots_(slots), chunk_(chunk), sub_(sub), state_(slots, State::free), free_subs_(slots, 0) {
  if (sub >= 4096 && uint64_t{sub} * 2 <= chunk && slots > 0) {
    uint64_t per = std::min<uint64_t>(chunk / sub, 64);
    if (max_ids > slots) per = std::min<uint64_t>(per, (max_ids - slots) / slots);
    else per = 0;
    per_ = per >= 2 ? static_cast<uint32_t>(per) : 0;
  }
  if (per_ == 0) sub_ = 0;
  free_.reserve(slots);
  for (uint32_t i = slots; i > 0; --i) free_.push_back(i - 1);
}

std::optional<uint32_t> SlotMap::take(uint32_t length) {
  if (per_ != 0 && length <= sub_) {
    if (partial_.empty()) {
      if (free_.empty()) return std::nullopt;
      const uint32_t s = free_.back();
      free_.pop_back();
      state_[s] = State::split;
      free_subs_[s] = full_mask();
      partial_.push_back(s);
    }
    const uint32_t s = partial_.back();
    const auto j = static_cast<uint32_t>(std::countr_zero(free_subs_[s]));
    free_subs_[s] &= ~(uint64_t{1} << j);
    if (free_subs_[s] == 0) partial_.pop_back();
    return slots_ + s * per_ + j;
  }
  if (length > chunk_ || free_.empty()) return std::nullopt;
  const uint32_t s = free_.back();
  free_.pop_back();
  state_[s] = State::lent;
  return s;
}

void SlotMap::drop_partial(uint32_t slot) {
  if (auto it = std::find(partial_.begin(), partial_.end(), slot); it != partial_.end()) partial_.erase(it);
}

bool SlotMap::give(uint32_t id) {
  if (id < slots_) {
    if (state_[id] != State::lent) return false;
    state_[id] = State::free;
    free_.push_back(id);
    return true;
  }
  if (per_ == 0 || id >= ids()) return false;
  const uint32_t s = (id - slots_) / per_, j = (id - slots_) % per_;
  const uint64_t bit = uint64_t{1} << j;
  if (state_[s] != State::split || (free_subs_[s] & bit)) return false;
  if (free_subs_[s] == 0) partial_.push_back(s);
  free_subs_[s] |= bit;
  if (free_subs_[s] == full_mask()) {  // every sub-slot back: whole again
    drop_partial(s);
    state_[s] = State::free;
    free_subs_[s] = 0;
    free_.push_back(s);
  }
  return true;
}

uint64_t SlotMap::offset(uint32_t id) const {
  if (id < slots_) return uint64_t{id} * chunk_;
  const uint32_t s = (id - slots_) / per_, j = (id - slots_) % per_;
  return uint64_t{s} * chunk_ + uint64_t{j} * sub_;
}

}  // namespace rcp
