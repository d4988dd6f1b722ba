/// --delete: after (or while) a recursive copy lands, what the source did
/// not send is removed from the directories it sent — only there: never the
/// destination's parent, never outside it, never through a symlink (every
/// directory is opened beneath the destination with RESOLVE_NO_SYMLINKS, and
/// entries go with unlinkat beneath their directory's fd, as rsync does).
///
/// The source sends a tree depth first, a directory's entries before any
/// entry outside it (fs/sources.h), so a directory is complete when the
/// first name outside it arrives: the pruner keeps the names seen in the
/// directories on the current path only, never the whole tree's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "fs/filter.h"
#include "util/result.h"

namespace rcp {

struct PruneOptions {
  /// --delete-after: decide per directory as it completes, remove only once
  /// every file is in (finish()). Otherwise a directory is pruned as soon as
  /// it is complete (rsync's --delete-during).
  bool after = false;
  /// The destination directory itself is being copied (a source "." or an
  /// export's root): prune it too. Otherwise only the directories sent.
  bool root = false;
  /// Excluded names are protected, as rsync's default: never deleted.
  std::shared_ptr<const FilterList> filter;
  /// -n: decide and count as usual, remove nothing.
  bool dry_run = false;
};

class Pruner {
 public:
  /// dest_fd: the destination directory (borrowed; outlives the pruner).
  Pruner(int dest_fd, PruneOptions opt);
  Pruner(const Pruner&) = delete;

  /// The source sent `name` ('/'-separated, below the destination). A name
  /// that is not clean (".." or absolute, or anything to clean away) is
  /// ignored: it prunes nothing.
  void saw(const std::string& name, bool is_dir);
  /// The source could not send an entry: from now on nothing is deleted
  /// (rsync: "IO error encountered -- skipping file deletion").
  void source_error() { io_error_ = true; }
  /// No more entries: the directories still open are complete; with
  /// `after`, the deletions decided are done now.
  void finish();

  uint32_t deleted() const { return deleted_; }
  /// Called for each entry removed (dry run: that would be), a directory
  /// after its contents, with its path below the destination (for -i, -n).
  void on_delete(std::function<void(const std::string& rel, bool is_dir)> f) { on_delete_ = std::move(f); }
  /// What could not be deleted, one line each (bounded: the rest counted).
  const std::vector<std::string>& errors() const { return errors_; }
  uint64_t errors_dropped() const { return errors_dropped_; }

 private:
  struct Frame {
    std::string rel;
    std::unordered_set<std::string> names;
    bool in_scope = false;
  };
  void complete(Frame& f);
  void remove_entry(int dir_fd, const std::string& dir_rel, const std::string& name);
  /// Removes directory `name` and what it holds; false when it stays
  /// because it still holds something (a protected entry, or one a deeper
  /// failure left): its parents then stay too, without an error of their own.
  Result<bool> remove_tree(int parent_fd, const std::string& name, const std::string& rel, int depth);
  void error(std::string line);

  int dest_fd_;
  PruneOptions opt_;
  std::vector<Frame> stack_;
  std::vector<std::string> queued_;  // --delete-after: paths decided, not yet removed
  bool io_error_ = false;
  uint32_t deleted_ = 0;
  std::function<void(const std::string&, bool)> on_delete_;
  void removed(const std::string& rel, bool is_dir) {
    ++deleted_;
    if (on_delete_) on_delete_(rel, is_dir);
  }
  std::vector<std::string> errors_;
  uint64_t errors_dropped_ = 0;
};

}  // namespace rcp
