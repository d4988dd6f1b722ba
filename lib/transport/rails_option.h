/// rcp --rails auto|DEV[,DEV...]: which RDMA devices one copy may stripe its
/// READs over. The first rail is always the device the route to the daemon
/// uses (it carries control); the others are reached through the addresses
/// the daemon announces, each over the device the local route to it picks.
/// "auto" takes every such device; a list takes only the devices it names
/// (the first rail's included or not: it is used either way). Pure parsing.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace rcp {

struct RailsOption {
  bool enabled = false;            ///< --rails given
  bool automatic = false;          ///< "auto"
  std::vector<std::string> devices;  ///< the list, in order, without duplicates

  /// Whether an extra rail may use `dev`.
  bool allows(std::string_view dev) const;
};

/// Longest device name (IBV_SYSFS_NAME_MAX is 64 with the terminator).
constexpr size_t kMaxRailDeviceName = 63;

/// "auto" or a comma-separated list of 1 to wire::kMaxRails device names of
/// [A-Za-z0-9_.-], each at most kMaxRailDeviceName bytes, none twice.
Result<RailsOption> parse_rails_option(std::string_view s);

}  // namespace rcp
