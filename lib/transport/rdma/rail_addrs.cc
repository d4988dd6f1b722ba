#include "transport/rdma/rail_addrs.h"

#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

#include <algorithm>
#include <cstring>
#include <fmt/core.h>
#include <fstream>

namespace rcp::rdma {

std::optional<wire::RailAddr> gid_rail_addr(std::string_view gid) {
  while (!gid.empty() && (gid.back() == '\n' || gid.back() == ' ')) gid.remove_suffix(1);
  if (gid.size() > 39) return std::nullopt;
  in6_addr a{};
  if (inet_pton(AF_INET6, std::string(gid).c_str(), &a) != 1) return std::nullopt;
  if (IN6_IS_ADDR_V4MAPPED(&a)) {
    in_addr v4;
    std::memcpy(&v4, &a.s6_addr[12], 4);
    if (v4.s_addr == 0) return std::nullopt;
    return wire::rail_addr_v4(v4);
  }
  if (IN6_IS_ADDR_UNSPECIFIED(&a) || IN6_IS_ADDR_LINKLOCAL(&a) || IN6_IS_ADDR_LOOPBACK(&a) ||
      IN6_IS_ADDR_MULTICAST(&a))
    return std::nullopt;
  return wire::rail_addr_v6(a);
}

namespace {

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

}  // namespace

std::vector<LocalRail> local_rails() {
  std::vector<LocalRail> out;
  int n = 0;
  ibv_context** ctxs = rdma_get_devices(&n);
  if (!ctxs) return out;
  for (int i = 0; i < n; ++i) {
    LocalRail r;
    r.ctx = ctxs[i];
    r.dev = ibv_get_device_name(ctxs[i]->device);
    ibv_device_attr da{};
    const int ports = ibv_query_device(ctxs[i], &da) == 0 ? da.phys_port_cnt : 1;
    for (int p = 1; p <= ports; ++p) {
      const std::string base = fmt::format("/sys/class/infiniband/{}/ports/{}/", r.dev, p);
      if (read_line(base + "state").find("ACTIVE") == std::string::npos) continue;
      // RoCE GID tables hold a few entries per address (v1 and v2 of each);
      // 16 covers a port with several addresses.
      for (int g = 0; g < 16; ++g) {
        auto a = gid_rail_addr(read_line(fmt::format("{}gids/{}", base, g)));
        if (a && std::find(r.addrs.begin(), r.addrs.end(), *a) == r.addrs.end()) r.addrs.push_back(*a);
      }
    }
    out.push_back(std::move(r));
  }
  rdma_free_devices(ctxs);
  return out;
}

}  // namespace rcp::rdma
