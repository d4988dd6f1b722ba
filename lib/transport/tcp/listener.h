/// The daemon's side of the TCP transport behind rcp::Listener: a
/// non-blocking listening socket whose accept() only takes the socket
/// (accept4, never waits), and an Incoming whose finish() runs the hello on
/// the session's thread — so a client that connects and says nothing stalls
/// only its own thread, for at most the hello deadline. The listener owns
/// the registry through which extra streams reach their session; sessions
/// keep it alive (shared) while they may still be joined.
#pragma once

#include <memory>
#include <string>

#include "transport/tcp/connection.h"
#include "transport/tcp/tcp_transport.h"

namespace rcp::tcp {

class TcpListener final : public Listener {
 public:
  TcpListener(Fd sock, std::string address, TcpOptions opt);
  const char* kind() const override { return "tcp"; }
  std::string address() const override { return address_; }
  int fd() const override { return sock_.get(); }
  Result<std::unique_ptr<Incoming>> accept() override;
  uint32_t joined() const override { return joins_->joined(); }

 private:
  Fd sock_;
  std::string address_;
  TcpOptions opt_;
  std::shared_ptr<StreamJoins> joins_ = std::make_shared<StreamJoins>();
};

}  // namespace rcp::tcp
