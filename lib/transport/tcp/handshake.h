/// How a TCP connection starts: resolving and dialing, and the hello each
/// side sends first — the same versioned 32-byte hello RDMA carries in its
/// rdma_cm private data, then the session token. The daemon's hello is
/// followed by a fresh token (getrandom); a client opening extra streams
/// sends a join hello followed by that token on each, and the daemon
/// confirms by echoing the token (or answers 0: refused). The hello is
/// exchanged with blocking I/O under a deadline before the connection moves
/// onto io_uring: it is a few dozen bytes, once per connection. When the
/// client's hello asks for TLS (rcp --encrypt, offered by the daemon's
/// hello), a TLS 1.3 handshake follows on that stream, within the same
/// deadline, and the token and the join acknowledgement travel inside it
/// (tls.h); a join must be encrypted exactly when its session is.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <memory>
#include <string>

#include "transport/sockaddr_string.h"
#include "transport/tcp/connection.h"
#include "transport/tcp/tcp_transport.h"
#include "wire/messages.h"

namespace rcp::tcp {

/// A connected socket to host:port (first address that answers); `peer` is
/// set to the address it reached.
/// `bind` (rcp --bind): the local address to connect from, "" for the kernel's choice;
/// an address this host does not have is refused with its name.
Result<Fd> dial(const std::string& host, uint16_t port, std::string& peer, const std::string& bind = "");

/// Daemon side, on the session's thread: exchanges hellos on an accepted
/// socket, all of it within opt.timeout_ms (one deadline for the whole
/// exchange, not per byte); *cancel set by another thread ends it within
/// 100 ms (ECANCELED). A fresh session gets a token open in `joins` for as many streams
/// as the client announced; a join hello hands the socket to its session
/// (or is refused) and returns nullptr.
Result<std::unique_ptr<Transport>> accept_hello(Fd sock, const std::string& peer, const TcpOptions& opt,
                                                std::shared_ptr<StreamJoins> joins,
                                                const std::atomic<bool>* cancel = nullptr);

}  // namespace rcp::tcp
