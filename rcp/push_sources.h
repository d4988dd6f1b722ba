// What a push sends: the filter rules in command-line order, and the local
// sources (or a --files-from list, sharded with --shard) as one stream.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "client.h"
#include "fs/filter.h"
#include "fs/sources.h"

namespace rcp::client {

/// The filter rules in the order the command line gave them (the first
/// match wins, so `--include '*/' --include '*.c' --exclude '*'` means what
/// it says); none: nullptr.
Result<std::shared_ptr<const FilterList>> filters(const CLI::App& app, const Options& o);

/// What a push sends. Every local source must exist before anything
/// connects (a typo costs no connection and no partial copy); each is then
/// walked only when its turn comes (fs/sources.h: memory stays flat). With
/// --files-from the one source is the directory the listed paths are
/// relative to, and they arrive under those paths. Skipped entries of trees
/// are warnings. `tree`: a directory is among them; `contents`: "dir/" (its
/// contents, rsync's rule); the totals count the named regular files.
Result<SourceStream> push_sources(const std::vector<std::string>& srcs, const Options& o,
                                  std::shared_ptr<const FilterList> filter, bool& tree, bool& contents,
                                  uint64_t& total_bytes, uint64_t& total_files);

}  // namespace rcp::client
