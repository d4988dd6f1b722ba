/// A connection's control channel: encodes and sends wire messages, and
/// receives them with a backlog, so that events that arrive together with
/// the message awaited (before the data phase) are not lost but handed to
/// the session loop first.
///
/// Once a session is authenticated (session/authenticate.h) the channel seals
/// every control message it sends and opens every one it hands on, on either
/// transport: the 32-byte tag of auth::MessageMac is appended after the
/// message inside the frame, whose header length field counts it:
///
///     magic | version | type | length = n + 32 | payload (n) | tag (32)
///     tag = HMAC-SHA256(direction key, seq || header-with-that-length || payload)
///
/// The receiver checks and strips the tag (restoring length = n) before the
/// message is decoded, so nothing above the channel sees it; a message that
/// fails (altered, dropped, replayed, reordered, or with no tag) ends the
/// session with EBADMSG. Every message fits: the longest (an OPEN or a
/// FILE_BEGIN with a kMaxPath name) is ~3.1 KiB, so the tag still fits
/// kMaxMessage (checked on every send).
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "auth/message_mac.h"
#include "transport/transport.h"
#include "util/result.h"
#include "wire/auth_messages.h"
#include "wire/messages.h"

namespace rcp {

class Channel {
 public:
  explicit Channel(Transport& t) : t_(t) {}
  ~Channel();
  Transport& transport() { return t_; }
  Status send(const wire::Message& m);
  /// Waits for the next control message (only before the data phase).
  Result<wire::Message> receive(int timeout_ms, const std::atomic<bool>* cancel = nullptr);
  /// Gives what was sent up to timeout_ms to leave (a last ERROR before the
  /// connection closes); events that arrive meanwhile are dropped.
  void flush(int timeout_ms);
  /// Hands what was sent to the wire now (a TCP send submitted, an RDMA one
  /// posted) rather than at the session loop's first poll; what arrives
  /// meanwhile is kept, unopened, for poll(). run_role calls it before it
  /// maps and populates the pool (~2 ms for 16 MiB here), so a daemon's
  /// OPEN_OK reaches the client while the daemon populates, and both ends
  /// populate at once. A one-file push over loopback (exec to exit, from
  /// tracepoints): 9.7 ms with the two populates (1.9 + 2.0 ms) one after
  /// the other, 6.2-6.9 ms with them side by side.
  Status start_sending();
  /// Next event: from the backlog, else from one poll of the transport.
  /// Control messages are opened (MAC checked and stripped) on the way out.
  Status poll(std::vector<TransportEvent>& out);

  /// The authentication exchange (before any MAC): one auth frame out, and
  /// the next frame in, raw (an auth frame, or an ordinary message such as
  /// ERROR or an impostor's OPEN_OK, for the caller to judge).
  Status send_auth(const wire::AuthMessage& m);
  Result<std::vector<uint8_t>> receive_frame(int timeout_ms, const std::atomic<bool>* cancel = nullptr);

  /// From now on every message sent is sealed and every message received
  /// must carry a valid tag.
  void enable_mac(auth::Role self, const auth::SessionKeys& keys);
  bool sealed() const { return mac_ != nullptr; }

 private:
  Status open_sealed(TransportEvent& e);
  Transport& t_;
  std::vector<TransportEvent> backlog_;
  std::unique_ptr<auth::MessageMac> mac_;
  uint64_t sealed_sent_ = 0;  // for the test fault that tampers with one sealed message
  // The message being encoded, its capacity kept from one send to the next:
  // encoding into a fresh vector grew it field by field (~6 allocations for a
  // 60-byte message, 7 messages per small file).
  std::vector<uint8_t> tx_;
};

}  // namespace rcp
