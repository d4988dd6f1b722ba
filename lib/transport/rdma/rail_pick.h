/// Which rail the next chunk goes to (rcp --rails): the one with the fewest
/// bytes outstanding, so a faster or less busy link takes more chunks
/// (round robin would hold every rail to the slowest one's pace). Pure, for
/// unit tests; ReadLanes applies it.
#pragma once

#include <cstdint>
#include <span>

namespace rcp::rdma {

/// The READ load of one rail.
struct RailLoad {
  uint64_t bytes_out = 0;  ///< bytes of READs posted, not completed
  uint32_t reads_out = 0;  ///< chunks posted, not completed
  uint64_t bytes = 0;      ///< bytes read over it (completed)
  uint64_t chunks = 0;     ///< chunks read over it (completed)
  bool failed = false;     ///< dropped: nothing is posted on it any more
};

/// Index of the rail among `eligible` ones with the fewest outstanding
/// bytes (ties: fewer outstanding chunks, then fewer bytes carried so far —
/// so a paced copy with one chunk in flight at a time still uses every
/// rail —, then the lower index), or -1 when none is eligible. A failed
/// rail is never picked, eligible or not.
inline int pick_rail(std::span<const RailLoad> rails, std::span<const bool> eligible) {
  int best = -1;
  for (size_t i = 0; i < rails.size() && i < eligible.size(); ++i) {
    if (!eligible[i] || rails[i].failed) continue;
    if (best < 0) {
      best = static_cast<int>(i);
      continue;
    }
    const RailLoad& b = rails[static_cast<size_t>(best)];
    const RailLoad& c = rails[i];
    if (c.bytes_out != b.bytes_out ? c.bytes_out < b.bytes_out
        : c.reads_out != b.reads_out ? c.reads_out < b.reads_out
                                     : c.bytes < b.bytes)
      best = static_cast<int>(i);
  }
  return best;
}

}  // namespace rcp::rdma
