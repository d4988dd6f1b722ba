/// The daemon's side of a transport: something that waits for connections
/// and turns each into a Transport. One implementation per transport (rdma_cm
/// and TCP); the daemon's accept loop only sees this interface.
///
/// Accepting is split in two because the transports differ in where the
/// slow part is: rdma_cm has already carried the hello in the connect
/// request, so its listener finishes establishment itself; a TCP socket's
/// hello must still be read, which must not stall the accept loop, so that
/// part runs on the session's own thread (Incoming::finish()).
#pragma once

#include <memory>
#include <string>

#include "transport/transport.h"
#include "util/result.h"

namespace rcp {

/// A connection taken off a listener whose handshake may still be pending.
class Incoming {
 public:
  virtual ~Incoming() = default;
  /// The peer's address, for logs and access checks (known before finish()).
  virtual std::string peer() const = 0;
  /// Completes the handshake (may block up to the transport's hello
  /// deadline). Returns nullptr without error when the connection joined an
  /// existing session (an extra TCP stream or RDMA queue pair) instead of
  /// starting one.
  virtual Result<std::unique_ptr<Transport>> finish() = 0;
  /// Any thread: asks a finish() still in its handshake to give up soon
  /// (the daemon evicts the oldest pending handshake when a new connection
  /// needs its place). No effect once the handshake is over.
  virtual void cancel() {}
};

class Listener {
 public:
  virtual ~Listener() = default;
  /// "rdma" or "tcp".
  virtual const char* kind() const = 0;
  /// Where it listens, for the log ("rdma 0.0.0.0:7471").
  virtual std::string address() const = 0;
  /// Readable when accept() has something to take.
  virtual int fd() const = 0;
  /// Takes what is waiting without blocking. nullptr without error when the
  /// event was not a new connection (or was handled entirely inside the
  /// listener, e.g. an RDMA queue pair join). An error whose code is EMFILE
  /// or ENFILE means a connection is waiting but no descriptor is left for
  /// it: the caller should back off rather than ask again at once.
  virtual Result<std::unique_ptr<Incoming>> accept() = 0;
  /// Connections that joined a running session (extra TCP streams or queue
  /// pairs) and are held until it ends, so the daemon can count them in
  /// max_connections.
  virtual uint32_t joined() const { return 0; }
};

}  // namespace rcp
