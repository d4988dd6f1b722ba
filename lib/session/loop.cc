#include "session/loop.h"

#include "auth/chunk_mac.h"

namespace rcp {

Status start_hash_pool(const SessionOptions& opt, std::unique_ptr<HashPool>& hp) {
  if (opt.hash_threads == 0) return {};
  if (opt.chunk_key) {
    RCP_ASSIGN(hp, HashPool::create_keyed(*opt.chunk_key, opt.hash_threads));
    return {};
  }
  if (opt.checksum == Checksum::none) return {};
  RCP_ASSIGN(hp, HashPool::create(opt.checksum, opt.hash_threads));
  return {};
}

Digest chunk_digest(const SessionOptions& opt, uint32_t file_id, uint64_t offset,
                    std::span<const std::span<const uint8_t>> pieces) {
  if (opt.chunk_key) {
    uint32_t len = 0;
    for (auto p : pieces) len += static_cast<uint32_t>(p.size());
    auth::ChunkMac m(*opt.chunk_key);
    m.begin(file_id, offset, len);
    for (auto p : pieces) m.update(p);
    return m.finish();
  }
  if (pieces.size() == 1) return digest_of(opt.checksum, pieces[0]);  // no streaming state to set up
  Hasher h(opt.checksum);
  for (auto p : pieces) h.update(p);
  return h.finish();
}

Digest hole_digest(const SessionOptions& opt, uint32_t file_id, uint64_t offset, uint64_t length) {
  uint8_t rec[4 + 4 + 8 + 8] = {'h', 'o', 'l', 'e'};
  for (int i = 0; i < 4; ++i) rec[4 + i] = static_cast<uint8_t>(file_id >> (24 - 8 * i));
  for (int i = 0; i < 8; ++i) rec[8 + i] = static_cast<uint8_t>(offset >> (56 - 8 * i));
  for (int i = 0; i < 8; ++i) rec[16 + i] = static_cast<uint8_t>(length >> (56 - 8 * i));
  if (opt.chunk_key) {
    auth::ChunkMac m(*opt.chunk_key);
    m.begin(file_id, offset, 0);
    m.update(rec);
    return m.finish();
  }
  return digest_of(opt.checksum, rec);
}

bool chunk_digest_equal(const SessionOptions& opt, const Digest& a, const Digest& b) {
  return opt.chunk_key ? auth::digest_equal(a, b) : a == b;
}

uint8_t chunk_digest_len(const SessionOptions& opt) {
  return opt.chunk_key ? static_cast<uint8_t>(32) : digest_of(opt.checksum, {}).len;
}

Error proto_error(Transport& t, std::string what) { return make_error(EPROTO, fmt::format("{}: {}", t.peer(), what)); }

Result<wire::Message> message_of(Transport& t, TransportEvent& e) {
  if (e.kind == TransportEvent::Kind::closed)
    return make_error(e.status, fmt::format("connection to {} lost: {}", t.peer(), e.detail));
  auto m = wire::decode(e.message);
  if (!m.ok()) return make_error(m.error().code, t.peer() + ": " + m.error().context);
  return m;
}

}  // namespace rcp
