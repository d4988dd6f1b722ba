/// Per-file bookkeeping shared by source and sink: which byte ranges were
/// announced (refusing any that overlap or fall outside the file, so a
/// hostile source cannot make the sink count bytes twice), and the file
/// digest, folded from chunk digests in offset order even though chunks
/// complete out of order. Memory stays proportional to chunks in flight.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include "hash/digest.h"

namespace rcp {

class FileLedger {
 public:
  FileLedger(Checksum algo, uint64_t size) : size_(size), hasher_(algo) {}

  uint64_t size() const { return size_; }
  /// Claims [offset, offset + length) for a chunk about to be transferred.
  /// False when the range is empty, leaves the file, or overlaps a claimed one.
  /// (64-bit: a HOLE may span most of a file.)
  bool claim(uint64_t offset, uint64_t length);
  /// A chunk's bytes are verified (or a hole is in place); folds its digest
  /// once all before it are in.
  void add_digest(uint64_t offset, uint64_t length, const Digest& d);
  /// Every byte of the file has been verified.
  bool complete() const { return folded_ == size_; }
  uint64_t folded_bytes() const { return folded_; }
  /// The file digest (valid once complete()).
  Digest file_digest() { return hasher_.finish(); }

 private:
  uint64_t size_;
  uint64_t folded_ = 0;
  std::map<uint64_t, uint64_t> claimed_;  // offset -> end, disjoint; merged when adjacent
  std::map<uint64_t, std::pair<uint64_t, Digest>> waiting_;  // verified, not yet folded
  Hasher hasher_;
};

}  // namespace rcp
