/// --shard I/N (issue 15): which entries of a --files-from list this run
/// copies, so that N independent rcp runs (a Slurm job array, a Kubernetes
/// Indexed Job, GNU parallel) together copy every listed path exactly once.
/// Every run reads the same list and computes the same split; nothing is
/// exchanged between them.
///
/// Two rules, one per direction, because only a push can see the sizes:
/// - push (`by_size`): the list's paths weighed by their size (lstat, or stat
///   with -L, of SRC/PATH on the host running rcp), largest first, each into
///   the least-loaded shard (ties: the lower shard), paths of equal size in
///   byte order. List scheduling's bound holds: no shard carries more than
///   total/N + the largest file. Every run must see the same sizes: a file
///   that changes size while the job starts may move to another shard (copied
///   twice, or by none until the job is run again).
/// - pull (`by_name`): the sizes are on the daemon, so a path goes to shard
///   FNV-1a-64(path) mod N. Balanced by count in expectation, by bytes only
///   when the sizes are not correlated with the names. Streams: the list is
///   never held whole.
/// Either way a listed path is a unit: a directory with -r goes whole to one
/// shard (list files, not directories, for balance). Duplicates of a path
/// land in the same shard.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace rcp::cli {

/// N beyond this is refused: a job of more shards than this is a typo (and
/// the push split holds one load counter per shard).
constexpr uint32_t kMaxShards = 65536;

struct ShardSpec {
  uint32_t index = 0;  ///< I: 0 <= I < N
  uint32_t count = 1;  ///< N: 1 <= N <= kMaxShards
};

/// Parses "I/N" (decimal, no sign, no spaces): 0 <= I < N <= kMaxShards.
Result<ShardSpec> parse_shard(std::string_view text);

/// The pull rule: FNV-1a-64 of the path's bytes, mod count. Never changes
/// between versions (runs of one job must agree).
uint32_t shard_by_name(std::string_view path, uint32_t count);

struct WeighedPath {
  std::string path;
  uint64_t size = 0;
};

/// The push rule: for each entry of list (in the list's order) its shard in
/// [0, count). Depends only on the multiset of (path, size) pairs, not on
/// their order in the list.
std::vector<uint32_t> shard_by_size(const std::vector<WeighedPath>& list, uint32_t count);

}  // namespace rcp::cli
