// libFuzzer: rcpd.conf parsing (toml++ and every check after it) on arbitrary text. What it
// accepts must hold the invariants the daemon relies on.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "daemon/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rcp::daemon;
  auto c = parse_config_string(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.conf");
  if (!c.ok()) {
    if (c.error().context.rfind("fuzz.conf:", 0) != 0) std::abort();  // every error names the file
    return 0;
  }
  const DaemonConfig& d = c.value();
  // (No module at all is valid: the packaged file serves nothing.)
  if (d.listen.empty() || d.max_per_host > d.max_connections) std::abort();
  for (const ModuleConfig& m : d.modules) {
    if (!valid_module_name(m.name)) std::abort();
    // A module exports either a directory or a block device, by an absolute path.
    const std::string& where = m.is_device() ? m.device : m.path;
    if (where.empty() || where[0] != '/' || (m.is_device() && !m.path.empty())) std::abort();
    if (m.read_only && m.write_only) std::abort();
    if (m.auth_required() == m.secrets_file.empty()) std::abort();
    for (const auto& u : m.auth_users)
      if (!valid_user_name(u)) std::abort();
  }
  return 0;
}
