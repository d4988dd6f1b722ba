/// What `rcp HOST:` prints: one module per line, "NAME<TAB>COMMENT" (the tab
/// even when the comment is empty), in the daemon's order. Shell completion
/// (packaging/completion) reads the names with `cut -f1`, so this format is a
/// contract: a name or comment from the daemon can never add a line or a
/// field — tabs, newlines and other control characters become spaces.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rcp::cli {

struct ModuleEntry {
  std::string name;
  std::string comment;
};

/// The listing as printed on stdout, one "NAME\tCOMMENT\n" per module.
std::string format_module_list(const std::vector<ModuleEntry>& modules);

/// Reads a listing back (for tests and tools); lines without a tab are a
/// name with no comment, empty lines are skipped.
std::vector<ModuleEntry> parse_module_list(std::string_view text);

}  // namespace rcp::cli
