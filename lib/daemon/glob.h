/// Remote globs, as scp users type them: `rcp 'host:data/logs/*.gz' .` —
/// the quotes keep the local shell off it and the daemon expands it inside
/// the module. Only the last component may hold wildcards (* ? [...], fnmatch
/// without FNM_PERIOD's exceptions: a leading '.' must be matched
/// explicitly, as in a shell); the directory part is an ordinary path,
/// resolved beneath the export like any other (so no pattern can leave it).
#pragma once

#include <string>
#include <vector>

#include "util/result.h"

namespace rcp {

/// True if the last component of `rel` holds a wildcard.
bool has_wildcard(const std::string& rel);

/// The entries of `rel`'s directory (opened beneath root_fd) whose names
/// match its last component, as paths relative to the export, sorted; at
/// most kMaxGlobMatches. ENOENT "no match" when nothing matches; code 0
/// (the message says it all; rcp exits 3, as for a path it cannot use) when
/// a wildcard appears before the last component.
constexpr size_t kMaxGlobMatches = 100000;
Result<std::vector<std::string>> expand_wildcard(int root_fd, const std::string& rel, const std::string& shown);

}  // namespace rcp
