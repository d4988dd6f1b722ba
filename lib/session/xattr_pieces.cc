#include "session/xattr_pieces.h"

#include <fmt/core.h>

#include <algorithm>

namespace rcp {

std::vector<wire::XattrPiece> split_xattr(uint32_t file_id, const Xattr& x) {
  std::vector<wire::XattrPiece> out;
  const auto total = static_cast<uint32_t>(x.value.size());
  size_t at = 0;
  do {
    const size_t n = std::min(wire::kMaxXattrPiece, x.value.size() - at);
    out.push_back(wire::XattrPiece{file_id, x.name, total, static_cast<uint32_t>(at), x.value.substr(at, n)});
    at += n;
  } while (at < x.value.size());
  return out;
}

Result<std::optional<Xattr>> XattrAssembler::add(const wire::XattrPiece& p) {
  if (!cur_) {
    if (p.offset != 0)
      return make_error(EPROTO, fmt::format("xattr '{}' starts at offset {}, not 0", p.name, p.offset));
    RCP_TRY(tally_.admit(p.name, p.total));
    cur_ = Xattr{p.name, {}};
    cur_->value.reserve(p.total);
    total_ = p.total;
  } else if (p.name != cur_->name || p.total != total_ || p.offset != cur_->value.size()) {
    return make_error(EPROTO, fmt::format("xattr piece '{}' [{}, +{}) of {} bytes while '{}' has {} of {} bytes",
                                          p.name, p.offset, p.data.size(), p.total, cur_->name, cur_->value.size(),
                                          total_));
  }
  cur_->value += p.data;  // (the decoder keeps offset + size within total)
  if (cur_->value.size() < total_) return std::optional<Xattr>{};
  std::optional<Xattr> done = std::move(cur_);
  cur_.reset();
  return done;
}

}  // namespace rcp
