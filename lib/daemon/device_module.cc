#include "daemon/device_module.h"

#include <fcntl.h>

#include <fmt/core.h>

namespace rcp::daemon {

Status check_device_path(const ModuleConfig& m, const std::string& rel, const wire::Open& open) {
  if (!rel.empty() || !open.more.empty() || (open.flags & wire::kOpenRelative))
    return make_error(ENOENT, fmt::format("module {} exports a block device: name the module alone ({}), no path below it",
                                          m.name, m.name));
  return {};
}

std::vector<SourceOpener> device_sources(const ModuleConfig& m) {
  std::vector<SourceOpener> files;
  files.push_back([m]() -> Result<SourceFile> {
    RCP_ASSIGN(SourceFile f, open_source_file(AT_FDCWD, m.device, m.name, false, true));
    f.name = m.name;  // never the device's path: the client sees only the module
    return f;
  });
  return files;
}

Result<Destination> device_destination(const ModuleConfig& m, const wire::Open& open, bool verified) {
  if (open.flags & wire::kOpenMulti)
    return make_error(ENOTDIR, fmt::format("module {} is a block device: it takes exactly one file", m.name));
  if (!verified)
    return make_error(EINVAL, fmt::format("module {} is a block device written in place: digest none is refused "
                                          "(every chunk is verified before it is written)", m.name));
  Destination d;
  d.shown = m.name;
  // The daemon never forces: a mounted or held device is refused.
  RCP_ASSIGN(d.device, open_device_target(m.device, m.name, false));
  return d;
}

}  // namespace rcp::daemon
