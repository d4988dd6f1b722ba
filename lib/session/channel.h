/// A connection's control channel: encodes and sends wire messages, and
/// receives them with a backlog, so that events that arrive together with
/// the message awaited (before the data phase) are not lost but handed to
/// the session loop first.
#pragma once

#include <atomic>
#include <vector>

#include "transport/transport.h"
#include "util/result.h"
#include "wire/messages.h"

namespace rcp {

class Channel {
 public:
  explicit Channel(Transport& t) : t_(t) {}
  Transport& transport() { return t_; }
  Status send(const wire::Message& m);
  /// Waits for the next control message (only before the data phase).
  Result<wire::Message> receive(int timeout_ms, const std::atomic<bool>* cancel = nullptr);
  /// Gives what was sent up to timeout_ms to leave (a last ERROR before the
  /// connection closes); events that arrive meanwhile are dropped.
  void flush(int timeout_ms);
  /// Next event: from the backlog, else from one poll of the transport.
  Status poll(std::vector<TransportEvent>& out);

 private:
  Transport& t_;
  std::vector<TransportEvent> backlog_;
};

}  // namespace rcp
