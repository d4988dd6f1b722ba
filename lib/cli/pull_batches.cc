#include "cli/pull_batches.h"

#include <fmt/core.h>

#include "fs/path.h"

namespace rcp::cli {

Result<std::optional<PullBatch>> PullBatches::next() {
  PullBatch b;
  b.open = wire::Open{wire::Op::get, wire::Checksum::xxh128, flags_, {}, {}, rules_};
  b.expect.tree = recursive_;
  if (list_) {
    if (done_) return std::optional<PullBatch>{};
    b.addr = srcs_[0];
    b.open.path = srcs_[0]->module_path();
    b.open.flags |= wire::kOpenRelative;
    b.expect.relative = true;
    for (;;) {
      if (!pending_) {
        RCP_ASSIGN(pending_, list_->next());
        if (!pending_) {
          done_ = true;
          break;
        }
        // --shard on a pull: the sizes are the daemon's, so the split is by name.
        if (shard_ && shard_by_name(*pending_, shard_->count) != shard_->index) {
          pending_.reset();
          continue;
        }
      }
      b.open.more.push_back(*pending_);
      if (b.open.more.size() > wire::kMaxOpenPaths || wire::open_size(b.open) > wire::kOpenBudget) {
        b.open.more.pop_back();
        if (b.open.more.empty()) return make_error(ENAMETOOLONG, "'" + *pending_ + "': path too long for a request");
        break;
      }
      pending_.reset();
    }
    if (b.open.more.empty()) return std::optional<PullBatch>{};
    b.expect.base = b.open.more.front();
    b.expect.more.assign(b.open.more.begin() + 1, b.open.more.end());
    return std::optional<PullBatch>{std::move(b)};
  }
  if (i_ == srcs_.size()) return std::optional<PullBatch>{};
  const Address* first = srcs_[i_++];
  b.addr = first;
  b.open.path = first->module_path();
  const auto [module, rest] = split_module(first->module_path());
  auto clean = clean_relative(rest);
  // (HOST:MODULE alone without -r: a device module, which sends its own name.)
  b.expect.base = clean.ok() && !clean->empty() ? base_name(clean.value()) : recursive_ ? "" : module;
  b.root_contents = clean.ok() && clean->empty() && recursive_;
  // A module's root is a session of its own: with -r its contents land in
  // DEST; without, it is a device module (or refused), never batched with files.
  if (clean.ok() && clean->empty()) return std::optional<PullBatch>{std::move(b)};
  // "DIR/" with -r (rsync's rule): DIR's contents land in DEST, so any name
  // below it may arrive; a session of its own (the flag is the OPEN's).
  if (first->trailing_slash && recursive_) {
    b.open.flags |= wire::kOpenContents;
    b.expect.base = "";
    b.root_contents = true;
    return std::optional<PullBatch>{std::move(b)};
  }
  // More sources in the same module (a root starts a session of its own).
  while (i_ < srcs_.size()) {
    const auto [m2, r2] = split_module(srcs_[i_]->module_path());
    auto c2 = clean_relative(r2);
    if (m2 != module || !c2.ok() || c2->empty() || b.open.more.size() == wire::kMaxOpenPaths ||
        (srcs_[i_]->trailing_slash && recursive_))
      break;
    b.open.more.push_back(r2);
    if (wire::open_size(b.open) > wire::kOpenBudget) {
      b.open.more.pop_back();
      break;
    }
    b.expect.more.push_back(base_name(c2.value()));
    ++i_;
  }
  return std::optional<PullBatch>{std::move(b)};
}

Result<PullBatches> pull_batches(const std::vector<Address>& addrs, const std::string& files_from, bool from0,
                                 bool recursive, uint32_t flags, std::vector<std::string> rules,
                                 std::optional<ShardSpec> shard) {
  std::vector<const Address*> srcs;
  for (size_t i = 0; i + 1 < addrs.size(); ++i) srcs.push_back(&addrs[i]);
  std::optional<PathList> list;
  if (!files_from.empty()) {
    RCP_ASSIGN(PathList l, PathList::open(files_from, from0));
    list.emplace(std::move(l));
  }
  wire::Open probe{wire::Op::get, wire::Checksum::xxh128, flags, addrs[0].module_path(), {}, rules};
  if (wire::open_size(probe) > wire::kOpenBudget)
    return make_error(E2BIG, fmt::format("the filter rules take {} bytes, more than one request holds ({})",
                                         wire::open_size(probe), wire::kOpenBudget));
  return PullBatches(std::move(srcs), flags, std::move(rules), std::move(list), recursive, shard);
}

}  // namespace rcp::cli
