// The daemon's TCP listener (listener.h).
#include "transport/tcp/listener.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <fmt/core.h>

#include "transport/tcp/handshake.h"

namespace rcp::tcp {
namespace {

/// "host:port" as rcpd has always logged a TCP peer (IPv6 without brackets).
std::string peer_string(const sockaddr_storage& ss) {
  char host[64] = "?";
  uint16_t port = 0;
  if (ss.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
  }
  return fmt::format("{}:{}", host, port);
}

/// An accepted socket whose hello is still to come.
class TcpIncoming final : public Incoming {
 public:
  TcpIncoming(Fd sock, std::string peer, const TcpOptions& opt, std::shared_ptr<StreamJoins> joins)
      : sock_(std::move(sock)), peer_(std::move(peer)), opt_(opt), joins_(std::move(joins)) {}
  std::string peer() const override { return peer_; }
  Result<std::unique_ptr<Transport>> finish() override {
    return accept_hello(std::move(sock_), peer_, opt_, std::move(joins_), &cancel_);
  }
  void cancel() override { cancel_ = true; }

 private:
  Fd sock_;
  std::string peer_;
  TcpOptions opt_;
  std::shared_ptr<StreamJoins> joins_;
  std::atomic<bool> cancel_{false};
};

}  // namespace

TcpListener::TcpListener(Fd sock, std::string address, TcpOptions opt)
    : sock_(std::move(sock)), address_(std::move(address)), opt_(opt) {}

Result<std::unique_ptr<Incoming>> TcpListener::accept() {
  sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  // The accepted socket blocks (the hello polls with a deadline before each
  // call); io_uring then reads it without ever blocking the thread.
  int fd = ::accept4(sock_.get(), reinterpret_cast<sockaddr*>(&ss), &sl, SOCK_CLOEXEC);
  if (fd < 0) {
    // Out of descriptors or memory: the connection stays queued and the
    // socket stays readable, so say so (the daemon backs off) instead of
    // reporting "nothing waiting", which would spin its loop.
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) return sys_error("accept tcp");
    return std::unique_ptr<Incoming>();  // nothing waiting, or the client left already
  }
  Fd sock(fd);
  return std::unique_ptr<Incoming>(
      std::make_unique<TcpIncoming>(std::move(sock), peer_string(ss), opt_, joins_));
}

}  // namespace rcp::tcp

namespace rcp {

Result<std::unique_ptr<Listener>> tcp_listener(const std::string& host, uint16_t port, const TcpOptions& opt) {
  // No host: one IPv6 socket with IPV6_V6ONLY off takes IPv4 and IPv6 clients
  // alike (AF_UNSPEC would pick 0.0.0.0 first and serve IPv4 only); a kernel
  // without IPv6 gets the IPv4 wildcard instead.
  if (host.empty()) {
    Fd s6(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (s6.valid()) {
      int zero = 0, one = 1;
      ::setsockopt(s6.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
      ::setsockopt(s6.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      sockaddr_in6 any{};
      any.sin6_family = AF_INET6;
      any.sin6_addr = in6addr_any;
      any.sin6_port = htons(port);
      if (::bind(s6.get(), reinterpret_cast<sockaddr*>(&any), sizeof any) != 0)
        return sys_error(fmt::format("bind tcp *:{} (IPv4 and IPv6)", port));
      if (::listen(s6.get(), 64) != 0) return sys_error("listen");
      return std::unique_ptr<Listener>(
          std::make_unique<tcp::TcpListener>(std::move(s6), fmt::format("tcp *:{} (IPv4 and IPv6)", port), opt));
    }
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_family = AF_UNSPEC;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  std::string ps = std::to_string(port);
  int gai = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), ps.c_str(), &hints, &res);
  if (gai != 0) return make_error(EINVAL, fmt::format("resolve listen address '{}': {}", host, gai_strerror(gai)));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  Fd s(::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s.valid()) return sys_error("socket");
  int one = 1;
  ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // "::" serves IPv6 only, so rcpd can also listen on "0.0.0.0" (its default pair).
  if (res->ai_family == AF_INET6) ::setsockopt(s.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (::bind(s.get(), res->ai_addr, res->ai_addrlen) != 0)
    return sys_error(fmt::format("bind tcp {}", sockaddr_string(res->ai_addr)));
  if (::listen(s.get(), 64) != 0) return sys_error("listen");
  std::string address = fmt::format("tcp {}:{}", host.empty() ? "*" : host, port);
  return std::unique_ptr<Listener>(std::make_unique<tcp::TcpListener>(std::move(s), std::move(address), opt));
}

}  // namespace rcp
