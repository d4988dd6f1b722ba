#include "session/loop.h"

namespace rcp {

Status start_hash_pool(const SessionOptions& opt, std::unique_ptr<HashPool>& hp) {
  if (opt.checksum == Checksum::none || opt.hash_threads == 0) return {};
  RCP_ASSIGN(hp, HashPool::create(opt.checksum, opt.hash_threads));
  return {};
}

Error proto_error(Transport& t, std::string what) { return make_error(EPROTO, fmt::format("{}: {}", t.peer(), what)); }

}  // namespace rcp
