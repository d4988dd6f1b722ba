#include "auth/message_mac.h"

#include <string>

namespace rcp::auth {

MessageMac::MessageMac(Role self, const SessionKeys& keys)
    : send_(self == Role::client ? keys.client_to_server : keys.server_to_client),
      recv_(self == Role::client ? keys.server_to_client : keys.client_to_server) {}

Tag MessageMac::seal(std::span<const uint8_t> msg) {
  send_.begin();
  send_.update_u64(send_seq_++);
  send_.update(msg);
  return send_.finish();
}

Status MessageMac::open(std::span<const uint8_t> msg, std::span<const uint8_t> tag) {
  if (failed_) return make_error(EBADMSG, "control message refused: an earlier one failed its MAC check");
  recv_.begin();
  recv_.update_u64(recv_seq_);
  recv_.update(msg);
  const Tag expected = recv_.finish();
  if (!equal_ct(expected, tag)) {
    failed_ = true;
    return make_error(EBADMSG, "control message " + std::to_string(recv_seq_) +
                                   " failed its MAC check (altered, replayed, reordered or forged)");
  }
  ++recv_seq_;
  return {};
}

}  // namespace rcp::auth
