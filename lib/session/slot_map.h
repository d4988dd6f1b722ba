/// The source pool's slots, for chunks of every size: pure, unit tested.
///
/// The pool is `slots` chunk-sized slots (the window). A whole slot carries
/// one chunk of a big file; a small file's only chunk would leave almost all
/// of it idle, and the window of 16 slots then bounds a tree of 4 KiB files
/// to 16 files in flight: the two ends took turns (10,000 x 4 KiB pushed over
/// TCP on loopback: 0.68-0.92 s with 16 slots, 0.46-0.58 s with 256 slots of
/// 64 KiB). So a slot may be split into `per` sub-slots of `sub` bytes for
/// chunks no longer than `sub`: the same memory holds `per` times as many
/// small chunks in flight, with nothing new on the wire (a sub-slot is one
/// more slot id, below kMaxSlots, that the sink lends back in CHUNK_DONE).
///
/// Ids: whole slot i is id i; sub-slot j of slot i is slots + i * per + j.
/// Small chunks fill the slot split last before splitting another (LIFO), so
/// older split slots drain and become whole again for big chunks.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace rcp {

class SlotMap {
 public:
  /// `slots` slots of `chunk` bytes; sub-slots of `sub` bytes when sub is at
  /// least 4 KiB and at most half a chunk, at most 64 per slot, and all ids
  /// stay below `max_ids`; otherwise slots are never split.
  SlotMap(uint32_t slots, uint32_t chunk, uint32_t sub, uint32_t max_ids);

  uint32_t ids() const { return slots_ + slots_ * per_; }  ///< every id is below this
  uint32_t per() const { return per_; }
  uint32_t sub() const { return sub_; }
  /// A slot (or sub-slot) for a chunk of `length` bytes, if one is free.
  std::optional<uint32_t> take(uint32_t length);
  /// Returns an id; false if it is out of range or not lent (a peer
  /// returning a slot twice, or one never lent, is a protocol error).
  bool give(uint32_t id);
  /// Where id's bytes start in the pool, and which whole slot holds them.
  uint64_t offset(uint32_t id) const;
  uint32_t whole(uint32_t id) const { return id < slots_ ? id : (id - slots_) / per_; }
  /// Whole slots neither lent nor split (tests).
  uint32_t whole_free() const { return static_cast<uint32_t>(free_.size()); }

 private:
  enum class State : uint8_t { free, lent, split };
  uint32_t slots_, chunk_, sub_, per_ = 0;
  std::vector<State> state_;
  std::vector<uint64_t> free_subs_;  // per slot, when split: bit j = sub-slot j free
  std::vector<uint32_t> free_;       // whole free slots (LIFO: warm buffers first)
  std::vector<uint32_t> partial_;    // split slots with a free sub-slot (LIFO)
  uint64_t full_mask() const { return per_ == 64 ? ~uint64_t{0} : (uint64_t{1} << per_) - 1; }
  void drop_partial(uint32_t slot);
};

}  // namespace rcp
