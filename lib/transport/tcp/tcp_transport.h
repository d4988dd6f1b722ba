/// The TCP transport: the same contract as RDMA over TCP. A read becomes a
/// READ_REQ frame; the peer's transport checks the requested range against
/// the memory that connection registered (as an RNIC checks an rkey) and
/// answers with the bytes straight out of its buffer pool, with a zero-copy
/// send where the kernel has one; the reply is received straight into the
/// requester's scatter list. All socket I/O goes through the transport's own
/// io_uring. A copy may use several TCP streams so that one core's worth of
/// socket work is not the limit: control messages travel on stream 0, reads
/// are spread over all of them.
#pragma once

#include <memory>
#include <string>

#include "transport/transport.h"
#include "util/fd.h"

namespace rcp {

struct TcpOptions {
  uint32_t max_chunk = 0;
  uint32_t reads_in_flight = 32;
  uint32_t streams = 2;     ///< TCP connections per copy (client side decides)
  bool zerocopy = true;     ///< IORING_OP_SENDMSG_ZC for read replies, if the kernel has it
  int timeout_ms = 10000;   ///< connect and hello
};

Result<std::unique_ptr<Transport>> tcp_connect(const std::string& host, uint16_t port, const TcpOptions& opt);

/// Takes an accepted socket and exchanges hellos. A socket that joins an
/// existing session (an extra stream) is handed to that session and the
/// result holds nullptr.
Result<std::unique_ptr<Transport>> tcp_accept(Fd sock, const std::string& peer, const TcpOptions& opt);

/// A listening socket (IPv4/IPv6, SO_REUSEADDR).
Result<Fd> tcp_listen(const std::string& host, uint16_t port);

}  // namespace rcp
