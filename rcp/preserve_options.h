// rcp's metadata options, as rsync spells them: -a (-rlptgoD), -p, -t, -o,
// -g, -l, -L, -D (--devices --specials), -H, --numeric-ids, -S, --discard, -X
// and -A (-a implies neither, as in rsync). They fill one
// Preserve (fs/metadata.h), which travels in OPEN.
#pragma once

#include <CLI/CLI.hpp>

#include "fs/metadata.h"

namespace rcp::cli {

inline void add_preserve_options(CLI::App& app, Preserve& p) {
  app.add_flag_callback(
      "-a,--archive",
      [&p] {
        const Preserve a = Preserve::archive();
        p.perms |= a.perms, p.times |= a.times, p.owner |= a.owner, p.group |= a.group;
        p.links |= a.links, p.devices |= a.devices, p.specials |= a.specials;
      },
      "archive: -rlptgoD (owner only when the receiver runs as root)");
  app.add_flag("-p,--perms", p.perms, "keep permission bits exactly (setuid/setgid only where the receiver is root)");
  app.add_flag("-t,--times", p.times, "keep modification times, to the nanosecond");
  app.add_flag("-o,--owner", p.owner, "keep the owner (when the receiver runs as root)");
  app.add_flag("-g,--group", p.group, "keep the group");
  app.add_flag("-l,--links", p.links, "copy symlinks as symlinks (the target verbatim)");
  app.add_flag("-L,--copy-links", p.copy_links, "follow symlinks on the source: copy what they point to");
  app.add_flag_callback(
      "-D", [&p] { p.devices = p.specials = true; }, "--devices --specials");
  app.add_flag("--devices", p.devices, "copy block and character devices (created only by a root receiver)");
  app.add_flag("--specials", p.specials, "copy FIFOs and sockets");
  app.add_flag("-H,--hard-links", p.hard_links, "keep hard-link groups (within one copy)");
  app.add_flag("-X,--xattrs", p.xattrs,
               "keep extended attributes (user.*; trusted.* and security.* when the receiver is root and not rcpd)");
  app.add_flag_callback(
      "-A,--acls", [&p] { p.acls = p.perms = true; }, "keep POSIX ACLs (implies -p)");
  app.add_flag("--numeric-ids", p.numeric_ids, "owner and group by number, not mapped by name");
  app.add_flag("-S,--sparse", p.sparse,
               "leave holes unallocated at the destination (holes are never sent: SEEK_DATA/SEEK_HOLE)");
  app.add_flag("--discard", p.discard,
               "with --write-devices: discard the source's holes on the device instead of writing zeros");
}

/// -a also means -r.
inline bool archive_requested(const CLI::App& app) { return app.count("--archive") > 0; }

}  // namespace rcp::cli
