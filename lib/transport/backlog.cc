#include "transport/backlog.h"

#include <cerrno>

#include <fmt/core.h>

namespace rcp {

Error unsent_error(const std::string& peer, size_t held, size_t messages) {
  return make_error(ENOBUFS, fmt::format("{} does not read what it is sent: {} messages ({:.1f} MiB) wait for it, "
                                         "at most {} MiB are held for a peer; ending the session",
                                         peer, messages, static_cast<double>(held) / (1 << 20), kMaxUnsent >> 20));
}

}  // namespace rcp
