// The sink: -X/-A, extended attributes and ACLs (session/sink_role.h).
#include "session/sink_role.h"

namespace rcp {
namespace {

/// -X/-A: xattr bytes (names and values) a sink holds for entries begun and
/// not yet committed. XattrTally bounds one entry to 1 MiB; a source may
/// have kMaxFilesOpen (256) entries begun, so without this a lying one
/// could make a sink hold 256 MiB. 64 entries of the largest size; an
/// honest source has about slots + 1 (17) files open, most with a few
/// short xattrs.
constexpr uint64_t kMaxXattrBuffered = 64u << 20;
/// Directories' access ACLs (-A) held until fix_dirs sets them with the
/// bits: an honest one is tens of bytes (a 1,000,000-directory tree with
/// one named user each: 44 MB); past this a directory's is set when it is
/// made (its contents are then created under the ACL's bits already).
constexpr uint64_t kMaxDirAclsHeld = 64u << 20;

}  // namespace

/// A piece of one of an entry's xattrs (-X/-A): put together, bounded
/// (session/xattr_pieces.h), and kept until the entry is committed when
/// this sink sets that name (a root source's trusted.* reaching a non-root
/// sink is dropped quietly, as rsync does).
Status Sink::handle(wire::XattrPiece& x) {
  auto it = files_.find(x.file_id);
  if (it == files_.end()) return proto_error(t_, fmt::format("XATTR for unknown file {}", x.file_id));
  File& f = it->second;
  if (f.end_seen) return proto_error(t_, fmt::format("XATTR after FILE_END of '{}'", f.shown));
  if (!opt_.preserve.xattrs && !opt_.preserve.acls)
    return proto_error(t_, fmt::format("XATTR for '{}' in a session without -X or -A", f.shown));
  if (f.link_to != 0 && f.link_to != f.id)
    return proto_error(t_, fmt::format("XATTR for the hard link '{}' (its group's first file carries them)", f.shown));
  if (!f.xa) f.xa = std::make_unique<XattrAssembler>(xarrive_);
  auto done = f.xa->add(x);
  if (!done.ok()) return proto_error(t_, fmt::format("'{}': {}", f.shown, done.error().context));
  if (!done->has_value() || !xattr_wanted((*done)->name, xscope_)) return {};
  const uint64_t n = (*done)->name.size() + (*done)->value.size();
  if (xattr_buffered_ + n > kMaxXattrBuffered)
    return proto_error(t_, fmt::format("'{}': more than {} bytes of xattrs held for entries not yet complete",
                                       f.shown, kMaxXattrBuffered));
  xattr_buffered_ += n;
  f.xattr_bytes += n;
  f.xattrs.push_back(std::move(**done));
  return {};
}

/// The entry that stood at the destination, opened to read or set its
/// xattrs: a regular file (never through a symlink: O_NOFOLLOW) or a
/// directory beneath the destination. Invalid when there is none.
Fd Sink::open_existing(const File& f) const {
  if (f.is_dir) {
    if (!dest_.dir.valid()) return {};
    auto d = open_beneath(dest_.dir.get(), f.rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    return d.ok() ? std::move(d.value()) : Fd{};
  }
  if (f.dir_fd < 0 || f.type != S_IFREG) return {};
  Fd fd(::openat(f.dir_fd, f.leaf.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st;
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  return fd;
}

/// -i: which of the 'a' and 'x' letters the entry's xattrs change in what
/// stands at the destination (a new entry is "+++++++++" anyway).
void Sink::xattrs_before(File& f) {
  if ((!opt_.preserve.xattrs && !opt_.preserve.acls) || !f.old.exists || f.old.type != f.type) return;
  if (f.type != S_IFREG && f.type != S_IFDIR) return;
  // A file the rules keep is updated only when the quick check kept it
  // (rsync: --ignore-existing and -u leave a kept file wholly alone).
  const bool kept = opt_.rules.dry_run ? !f.dry_write : f.skip;  // (a dry run "skips" every file)
  if (kept && f.type == S_IFREG &&
      (opt_.rules.ignore_existing || f.old.size != f.size || f.old.mtime_ns != f.mtime_ns))
    return;
  Fd fd = open_existing(f);
  if (!fd.valid()) return;
  auto old = read_xattrs(fd.get(), xscope_);
  f.xattr_bits = old.ok() ? xattr_changes(*old, f.xattrs) : 0;
}

/// A file the update rules keep (quick check): its xattrs are brought to
/// the source's all the same, as rsync -X does. A failure fails the file.
void Sink::update_kept_xattrs(File& f) {
  if (f.xattr_bits == 0) return;
  Fd fd = open_existing(f);
  if (!fd.valid()) return;
  if (Status st = set_xattrs(f, fd.get()); !st.ok()) fail_file(f, st.error().message());
}

/// Sets f's xattrs on fd and removes the others this copy carries, so the
/// entry ends with exactly the source's. A file system without xattrs (of
/// a namespace) is told once per session and passed over, as rsync does.
Status Sink::set_xattrs(File& f, int fd) {
  Status st = apply_xattrs(fd, f.xattrs, xscope_);
  if (!st.ok() && xattrs_unsupported(st.error().code)) {
    xattr_failed(f.shown, st.error());
    return {};
  }
  if (!st.ok()) return make_error(st.error().code, fmt::format("{} on '{}'", st.error().context, f.shown));
  return {};
}

/// A directory's xattrs, set when it is made (its contents inherit a
/// default ACL); the access ACL is left in `acl` to be set with its bits.
Status Sink::dir_xattrs(File& f, std::vector<Xattr>& acl) {
  if (opt_.rules.dry_run) return {};
  std::vector<Xattr> now;
  for (Xattr& x : f.xattrs) (x.name == "system.posix_acl_access" ? acl : now).push_back(std::move(x));
  Fd fd = open_existing(f);
  if (!fd.valid()) return make_error(EIO, fmt::format("'{}': directory gone before its xattrs were set", f.shown));
  if (!acl.empty() && dir_acls_held_ + acl[0].value.size() > kMaxDirAclsHeld) {
    now.push_back(std::move(acl[0]));
    acl.clear();
  }
  if (!acl.empty()) dir_acls_held_ += acl[0].value.size();
  std::vector<Xattr> keep = now;
  keep.insert(keep.end(), acl.begin(), acl.end());  // (not removed here: set at fix_dirs)
  f.xattrs = std::move(now);
  Status st;
  for (const Xattr& x : f.xattrs)
    if (st.ok()) st = set_xattr(fd.get(), x);
  if (st.ok()) st = remove_other_xattrs(fd.get(), keep, xscope_);
  if (!st.ok() && xattrs_unsupported(st.error().code)) {
    xattr_failed(f.shown, st.error());
    st = {};
  }
  if (!st.ok()) return make_error(st.error().code, fmt::format("{} on '{}'", st.error().context, f.shown));
  return {};
}

/// An xattr this file system does not keep: said once per session (-v
/// shows each), the copy goes on without it.
void Sink::xattr_failed(const std::string& shown, const Error& e) {
  if (!xattr_noted_) log_warning("'{}': {}: xattrs this file system does not keep are not copied", shown, e.message());
  else log_info("'{}': {}", shown, e.message());
  xattr_noted_ = true;
}

}  // namespace rcp
