/// --exclude / --include / --exclude-from: rsync's filter rules, as pure
/// logic. A path (relative to the transfer root, as the entry's name on the
/// wire: "src/a/b.txt" for `rcp -r src ...`) is tested against the rules in
/// order; the first rule that matches decides, no match means included.
///
/// Pattern rules (rsync(1), "INCLUDE/EXCLUDE PATTERN RULES"):
///  - `*` matches anything but '/', `**` anything including '/', `?` one
///    character but '/', `[...]` a class (`[!...]`/`[^...]` negated, ranges),
///    `\` quotes the next character;
///  - a leading '/' anchors the pattern at the transfer root;
///  - a trailing '/' matches only directories;
///  - a pattern without '/' (but a trailing one) and without `**` matches the
///    last component; an unanchored one with a '/' but no `**` matches the
///    last N+1 components (N = its slashes); one with `**` the whole path or
///    any tail of it that starts after a '/';
///  - a trailing `/***` matches the directory and everything inside it.
/// An excluded directory is not descended into (the sender never walks it),
/// and on the receiving side an excluded entry is protected from --delete.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace rcp {

/// Bounds on what a peer may send in an OPEN (wire/messages.h checks them
/// too) and what a user may give: rules in one list, bytes in one rule.
constexpr size_t kMaxFilterRules = 256;
constexpr size_t kMaxFilterRuleLen = 1024;

/// Does `text` match the wildcard `pattern` (the whole of it)? `*` and `?`
/// never match '/', `**` does. Exposed for tests.
bool wildmatch(std::string_view pattern, std::string_view text);

class FilterList {
 public:
  /// One rule as the user gives it: `--exclude P` (include = false) or
  /// `--include P`. A rule beginning with "- " or "+ " says which itself
  /// (as rsync accepts); "!" clears the list. Refuses an empty pattern, a
  /// NUL byte, one longer than kMaxFilterRuleLen, or more than kMaxFilterRules.
  Status add(std::string_view rule, bool include);
  /// --exclude-from FILE ("-" = stdin): one rule per line (NUL-separated with
  /// from0); blank lines and lines starting with ';' or '#' are ignored.
  Status add_from_file(const std::string& path, bool include, bool from0);

  /// The rules as they travel in an OPEN: "+ PATTERN" or "- PATTERN".
  std::vector<std::string> wire() const;
  /// The rules of an OPEN, validated (the peer's bytes: prefixes, lengths, count).
  static Result<FilterList> from_wire(const std::vector<std::string>& rules);

  /// Is the entry `path` (relative to the transfer root, '/'-separated, no
  /// leading '/') excluded? `is_dir`: it is a directory.
  bool excluded(std::string_view path, bool is_dir) const;
  bool empty() const { return rules_.empty(); }
  size_t size() const { return rules_.size(); }

 private:
  struct Rule {
    bool include = false;
    bool anchored = false;
    bool dir_only = false;
    bool all_below = false;  ///< ended in "/***": the directory and everything in it
    bool wild2 = false;      ///< contains "**": matched against the whole path or a tail
    size_t slashes = 0;      ///< '/' inside the pattern (after the anchor and trailing '/')
    std::string pattern;     ///< without the anchor, the trailing '/' or "/***"
    std::string text;        ///< as given, for wire()
  };
  bool matches(const Rule& r, std::string_view path, bool is_dir) const;
  std::vector<Rule> rules_;
};

}  // namespace rcp
