/// Path handling for everything a peer names. Pure functions split and clean
/// wire paths; open_beneath() resolves them with openat2(RESOLVE_BENEATH) so
/// that neither "..", nor an absolute path, nor a symlink — planted before or
/// during the copy — can lead outside the directory the export grants.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/fd.h"
#include "util/result.h"

namespace rcp {

/// Cleans a path relative to an export: drops empty and "." components,
/// refuses "..", absolute paths, NUL bytes and over-long input. Returns the
/// components joined with '/', or "" for the export's root.
Result<std::string> clean_relative(std::string_view path);

/// Splits "MODULE/REST" into {module, rest}; rest may be "".
std::pair<std::string, std::string> split_module(std::string_view spec);

/// Is name usable as one directory entry: non-empty, not "." or "..", no '/' or NUL.
bool is_plain_name(std::string_view name);

/// Last component of a path ("a/b/c" → "c", "c" → "c", "a/b/" → "b").
std::string base_name(std::string_view path);
/// Everything before the last component ("a/b/c" → "a/b", "c" → "").
std::string dir_name(std::string_view path);

/// openat2(root, rel, flags, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS): rel is
/// resolved strictly inside root. rel "" opens root itself (as ".").
Result<Fd> open_beneath(int root_fd, std::string_view rel, int flags, unsigned mode = 0);

/// Creates (where missing) and opens the directory `rel` — a cleaned
/// relative path — beneath root, one component at a time; a component that
/// is a symlink or leads outside is refused, never followed. made_last (if
/// given) says whether the last component was created by this call.
Result<Fd> make_dirs_beneath(int root_fd, std::string_view rel, unsigned mode = 0755, bool* made_last = nullptr);

/// What a walk sends besides regular files and directories.
struct WalkOptions {
  bool links = false;       ///< symlinks are entries (not followed)
  bool copy_links = false;  ///< symlinks are followed (wins over links); a loop or a dangling one is skipped
  bool devices = false;     ///< block and character devices are entries
  bool specials = false;    ///< FIFOs and sockets are entries
  bool beneath = true;      ///< with copy_links: a followed symlink must resolve beneath the walked directory
};

}  // namespace rcp
