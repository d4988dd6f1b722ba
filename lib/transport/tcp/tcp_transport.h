/// The TCP transport: the same contract as RDMA over one TCP stream. A read
/// becomes a READ_REQ frame; the peer's transport checks the requested range
/// against the memory that connection registered (as an RNIC checks an rkey)
/// and answers with the bytes straight out of its buffer pool; the reply is
/// received straight into the requester's scatter list.
#pragma once

#include <memory>
#include <string>

#include "transport/transport.h"
#include "util/fd.h"

namespace rcp {

/// The hello this side offers (filled by the caller from its options).
struct TcpOptions {
  uint32_t max_chunk = 0;
  uint32_t reads_in_flight = 16;
  int timeout_ms = 10000;  ///< connect and hello
};

Result<std::unique_ptr<Transport>> tcp_connect(const std::string& host, uint16_t port, const TcpOptions& opt);
/// Takes an accepted socket, exchanges hellos and returns the transport.
Result<std::unique_ptr<Transport>> tcp_accept(Fd sock, const std::string& peer, const TcpOptions& opt);

/// A listening socket (IPv4/IPv6, SO_REUSEADDR).
Result<Fd> tcp_listen(const std::string& host, uint16_t port);

}  // namespace rcp
