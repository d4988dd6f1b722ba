/// A module that exports a block device (`device = "/dev/vg0/backup"` in
/// rcpd.conf(5)) instead of a directory. The device is opened by the path
/// the administrator configured, for each session, never by a path a client
/// sends: the only remote path it answers to is the module itself
/// (HOST:NAME). A pull reads the whole device (size from BLKGETSIZE64) and
/// sends it under the module's name; a push — only when read_only = false,
/// like every module — writes the device in place: refused when it is
/// mounted or held (O_EXCL), when the file is larger than the device, or
/// when chunks would not be verified before they are written.
#pragma once

#include <string>
#include <vector>

#include "daemon/config.h"
#include "fs/destination.h"
#include "fs/sources.h"
#include "util/result.h"
#include "wire/messages.h"

namespace rcp::daemon {

/// Refuses any path below a device module (ENOENT), and more paths or a
/// --files-from list in the same OPEN (the device is the one file it has).
Status check_device_path(const ModuleConfig& m, const std::string& rel, const wire::Open& open);

/// What a pull from the device module sends.
std::vector<SourceOpener> device_sources(const ModuleConfig& m);

/// Where a push into the device module writes; `verified`: the session's
/// chunks carry a digest or a MAC (a checksum of none without
/// authentication is refused: EINVAL).
Result<Destination> device_destination(const ModuleConfig& m, const wire::Open& open, bool verified);

}  // namespace rcp::daemon
