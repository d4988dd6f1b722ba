#include "auth/chunk_mac.h"

#include <algorithm>

namespace rcp::auth {

void ChunkMac::begin(uint32_t file_id, uint64_t offset, uint32_t length) {
  h_.begin();
  h_.update_u32(file_id);
  h_.update_u64(offset);
  h_.update_u32(length);
}

wire::Digest ChunkMac::finish() {
  const Mac256 m = h_.finish();
  wire::Digest d;
  d.len = static_cast<uint8_t>(m.size());
  std::copy(m.begin(), m.end(), d.bytes.begin());
  return d;
}

wire::Digest chunk_mac(const Key& data_key, uint32_t file_id, uint64_t offset, std::span<const uint8_t> bytes) {
  ChunkMac c(data_key);
  c.begin(file_id, offset, static_cast<uint32_t>(bytes.size()));
  c.update(bytes);
  return c.finish();
}

bool digest_equal(const wire::Digest& a, const wire::Digest& b) {
  if (a.len != b.len || a.len > wire::kMaxDigest) return false;
  return equal_ct({a.bytes.data(), a.len}, {b.bytes.data(), b.len});
}

}  // namespace rcp::auth
