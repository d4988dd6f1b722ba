#include "cli/shard.h"

#include <algorithm>
#include <charconv>
#include <fmt/core.h>
#include <numeric>
#include <queue>

namespace rcp::cli {
namespace {

bool parse_u32(std::string_view s, uint32_t& out) {
  if (s.empty() || s.size() > 10) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || v > UINT32_MAX) return false;
  out = static_cast<uint32_t>(v);
  return true;
}

}  // namespace

Result<ShardSpec> parse_shard(std::string_view text) {
  const size_t slash = text.find('/');
  ShardSpec s;
  if (slash == std::string_view::npos || !parse_u32(text.substr(0, slash), s.index) ||
      !parse_u32(text.substr(slash + 1), s.count))
    return make_error(EINVAL, fmt::format("--shard '{}': expected I/N, as 0/4 (shard I of N, counted from 0)", text));
  if (s.count == 0) return make_error(EINVAL, fmt::format("--shard '{}': N must be at least 1", text));
  if (s.count > kMaxShards)
    return make_error(EINVAL, fmt::format("--shard '{}': N is at most {}", text, kMaxShards));
  if (s.index >= s.count)
    return make_error(EINVAL, fmt::format("--shard '{}': I counts from 0, so it must be below N ({})", text, s.count));
  return s;
}

uint32_t shard_by_name(std::string_view path, uint32_t count) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64: offset basis, prime 0x100000001b3
  for (unsigned char c : path) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return count == 0 ? 0 : static_cast<uint32_t>(h % count);
}

std::vector<uint32_t> shard_by_size(const std::vector<WeighedPath>& list, uint32_t count) {
  std::vector<uint32_t> out(list.size(), 0);
  if (count <= 1 || list.empty()) return out;
  std::vector<size_t> order(list.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // A path listed twice is one file: every copy of it weighs the largest size
  // given for it, so the copies sort together and share one shard.
  std::vector<uint64_t> weight(list.size());
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return list[a].path < list[b].path; });
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    uint64_t w = 0;
    while (j < order.size() && list[order[j]].path == list[order[i]].path) w = std::max(w, list[order[j++]].size);
    for (; i < j; ++i) weight[order[i]] = w;
  }
  // Largest first, then by path: the order (and so the split) does not
  // depend on the list's order.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (weight[a] != weight[b]) return weight[a] > weight[b];
    return list[a].path < list[b].path;
  });
  // Min-heap of (load, shard): the least-loaded shard, the lower on a tie.
  using Slot = std::pair<uint64_t, uint32_t>;
  std::priority_queue<Slot, std::vector<Slot>, std::greater<Slot>> heap;
  for (uint32_t i = 0; i < count; ++i) heap.push({0, i});
  const std::string* prev = nullptr;
  uint32_t prev_shard = 0;
  for (size_t k : order) {
    if (prev && *prev == list[k].path) {
      out[k] = prev_shard;
      continue;
    }
    Slot s = heap.top();
    heap.pop();
    out[k] = s.second;
    // (Saturating: a list whose sizes sum past 2^64 still splits.)
    s.first = weight[k] > UINT64_MAX - s.first ? UINT64_MAX : s.first + weight[k];
    heap.push(s);
    prev = &list[k].path;
    prev_shard = s.second;
  }
  return out;
}

}  // namespace rcp::cli
