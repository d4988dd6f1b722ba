/// The sessions a pull needs (issue 10): many sources share one OPEN, so
/// `rcp host:m/a host:m/b ... DEST` is one session and one connection, and a
/// --files-from list is sent in requests of up to wire::kMaxOpenPaths paths,
/// read as the copy goes. Each batch says which names its session may bring.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/address.h"
#include "cli/shard.h"
#include "fs/destination.h"
#include "fs/path_list.h"
#include "util/result.h"
#include "wire/messages.h"

namespace rcp::cli {

/// One session of a pull: its OPEN (a path and up to kMaxOpenPaths more in
/// the same module) and the names it may bring.
struct PullBatch {
  const Address* addr = nullptr;  ///< the first source (host, user, module)
  wire::Open open;
  ExpectedNames expect;
  bool root_contents = false;  ///< the export's root, or "DIR/", with -r: its contents land in DEST
};

/// The sessions a pull needs: consecutive sources in one module share an
/// OPEN, as many as one holds (wire::kOpenBudget, kMaxOpenPaths) — 50 named
/// files are one session, not 50. With --files-from the listed paths are read
/// as the batches go (never the whole list at once).
class PullBatches {
 public:
  PullBatches(std::vector<const Address*> srcs, uint32_t flags, std::vector<std::string> rules,
              std::optional<PathList> list, bool recursive, std::optional<ShardSpec> shard = std::nullopt)
      : srcs_(std::move(srcs)), flags_(flags), rules_(std::move(rules)), list_(std::move(list)), recursive_(recursive),
        shard_(shard) {}

  /// The next session's OPEN; nullopt when every source is sent.
  Result<std::optional<PullBatch>> next();
  /// Whether next() may still return a batch (false: the last one was
  /// returned, so its session's totals are the copy's).
  bool may_have_more() const { return list_ ? !done_ || pending_.has_value() : i_ < srcs_.size(); }

 private:
  std::vector<const Address*> srcs_;
  uint32_t flags_;
  std::vector<std::string> rules_;
  std::optional<PathList> list_;
  bool recursive_;
  std::optional<ShardSpec> shard_;  ///< --shard: only the list's paths of this shard (by name)
  size_t i_ = 0;
  bool done_ = false;
  std::optional<std::string> pending_;
};

/// The batches for the sources addrs[0 .. size-2] (the last is DEST). A
/// --files-from list (files_from not "") is relative to the one source.
/// Refuses filter rules that do not fit one OPEN. With shard, only the
/// listed paths whose shard_by_name() is shard->index are asked for.
Result<PullBatches> pull_batches(const std::vector<Address>& addrs, const std::string& files_from, bool from0,
                                 bool recursive, uint32_t flags, std::vector<std::string> rules,
                                 std::optional<ShardSpec> shard = std::nullopt);

}  // namespace rcp::cli
