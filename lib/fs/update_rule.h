/// What a sink does with a file the source announces, given what is already
/// at the destination: rsync's quick check (same size and mtime: skip) and
/// the options that change it (-c, --ignore-existing, --existing, -u,
/// --whole-file). Pure logic, unit tested in tests/unit/update_rule_test.cc.
#pragma once

#include <cstdint>

namespace rcp {

struct UpdateRules {
  bool checksum = false;         ///< -c: never skip on size and mtime; compare content (chunk digests)
  bool ignore_existing = false;  ///< --ignore-existing: an existing destination entry is never replaced
  bool existing = false;         ///< --existing: a file missing at the destination is not created
  bool update = false;           ///< -u: a destination file newer than the source's is kept
  bool whole_file = false;       ///< --whole-file: never reuse chunks of the existing file
  bool partial = false;          ///< --partial: write through ".NAME.rcp-partial", kept when interrupted
  /// -n/--dry-run: decide as above, change nothing (no temp file, directory,
  /// metadata or deletion) and fetch no data; report what would change.
  bool dry_run = false;
};

/// The destination entry of that name, as lstat saw it.
struct ExistingEntry {
  bool exists = false;
  bool regular = false;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};

enum class UpdateAction {
  skip,   ///< leave the destination as it is
  write,  ///< write the file (through a temp file)
};

UpdateAction decide_update(const UpdateRules& r, const ExistingEntry& dst, uint64_t size, int64_t mtime_ns);

/// Whether the existing file may serve as the basis of a chunk-by-chunk update.
inline bool use_basis(const UpdateRules& r, const ExistingEntry& dst) { return dst.exists && dst.regular && !r.whole_file; }

}  // namespace rcp
