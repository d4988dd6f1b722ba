#include "transport/rails_option.h"

#include <algorithm>
#include <fmt/core.h>

#include "wire/rails.h"

namespace rcp {

bool RailsOption::allows(std::string_view dev) const {
  return automatic || std::find(devices.begin(), devices.end(), dev) != devices.end();
}

Result<RailsOption> parse_rails_option(std::string_view s) {
  RailsOption o;
  o.enabled = true;
  if (s == "auto") {
    o.automatic = true;
    return o;
  }
  size_t pos = 0;
  for (;;) {
    const size_t comma = s.find(',', pos);
    const std::string_view name = s.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    if (name.empty()) return make_error(EINVAL, fmt::format("--rails '{}': empty device name", s));
    if (name.size() > kMaxRailDeviceName)
      return make_error(EINVAL, fmt::format("--rails: device name longer than {} bytes", kMaxRailDeviceName));
    for (char c : name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
        return make_error(EINVAL, fmt::format("--rails: '{}' is not a device name", name));
    if (std::find(o.devices.begin(), o.devices.end(), name) != o.devices.end())
      return make_error(EINVAL, fmt::format("--rails: device '{}' named twice", name));
    if (o.devices.size() >= wire::kMaxRails)
      return make_error(EINVAL, fmt::format("--rails: more than {} devices", wire::kMaxRails));
    o.devices.emplace_back(name);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return o;
}

}  // namespace rcp
