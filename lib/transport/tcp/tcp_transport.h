/// The TCP transport: the same contract as RDMA over TCP. A read becomes a
/// READ_REQ frame; the peer's transport checks the requested range against
/// the memory that connection registered (as an RNIC checks an rkey) and
/// answers with the bytes straight out of its buffer pool, with a zero-copy
/// send where the kernel has one; the reply is received straight into the
/// requester's scatter list. All socket I/O goes through an io_uring (the
/// shared Ring). A copy may use several TCP streams so that one core's worth
/// of socket work is not the limit: control messages travel on stream 0,
/// reads are spread over all of them.
///
/// This is the whole public surface; the implementation is split one
/// concern per file under tcp/: connection.h (the transport's state),
/// tcp_transport.cc (I/O), framing (frames), handshake (hello, connect),
/// listener (the daemon side), completion_id.h (io_uring user_data), tls
/// (TLS 1.3 per stream for --encrypt) and tls_path.cc (its user-space data path).
#pragma once

#include <memory>
#include <string>

#include "transport/listener.h"
#include "transport/transport.h"

namespace rcp {

namespace tcp {
class TlsContext;
}

/// TCP connections per copy when --streams is not given: 2, so socket work
/// is not one core's (a NIC spreads flows over its queues and their cores);
/// 1 to a daemon on this host, where each end's socket work runs on that
/// end's core whatever the count: on loopback one stream moved 1 GiB 11-12 %
/// faster than two, with less CPU at both ends (push 2,444 -> 2,706 MB/s,
/// pull 2,428 -> 2,730; bench/README.md).
constexpr uint32_t kDefaultTcpStreams = 2;
constexpr uint32_t kLocalTcpStreams = 1;

struct TcpOptions {
  uint32_t max_chunk = 0;
  uint32_t reads_in_flight = 32;
  /// TCP connections per copy, 1..16 (the client decides; its hello announces
  /// them); 0: kDefaultTcpStreams, or kLocalTcpStreams when the daemon is on
  /// this host.
  uint32_t streams = 0;
  bool zerocopy = true;     ///< IORING_OP_SENDMSG_ZC for read replies, if the kernel has it
  int timeout_ms = 10000;   ///< connect and hello
  /// Client: TLS 1.3 on every stream (tcp/tls.h); a daemon that does not
  /// offer it is refused (ENOPROTOOPT).
  bool encrypt = false;
  /// Client: the local address every stream connects from (rcp --bind); "" = the kernel's choice.
  std::string bind;
  /// Daemon: the TLS context offered to clients that ask; null = not offered.
  std::shared_ptr<tcp::TlsContext> tls;
};

Result<std::unique_ptr<Transport>> tcp_connect(const std::string& host, uint16_t port, const TcpOptions& opt);

/// The daemon's TCP listener (IPv4/IPv6, SO_REUSEADDR; host "" for all).
/// accept() never blocks; the hello runs in Incoming::finish() on the
/// session's thread, and a socket that joins an existing session as an
/// extra stream finishes as nullptr. Each listener keeps its own registry
/// of sessions open for joins.
Result<std::unique_ptr<Listener>> tcp_listener(const std::string& host, uint16_t port, const TcpOptions& opt);

}  // namespace rcp
