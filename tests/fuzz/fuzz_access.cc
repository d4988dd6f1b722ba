// libFuzzer: operator text parsed by the daemon besides rcpd.conf itself: CIDR rules and
// addresses (parse_cidr, parse_ip) and secrets files (parse_secrets). A rule that parses
// prints to text that parses back to the same rule, and contains its own base address.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "daemon/access.h"
#include "daemon/secrets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rcp::daemon;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto c = parse_cidr(text); c.ok()) {
    auto back = parse_cidr(c.value().to_string());
    if (!back.ok() || !(back.value() == c.value())) std::abort();
    if (!c.value().contains(c.value().base)) std::abort();
  }
  if (auto ip = parse_ip(text); ip.ok()) {
    auto back = parse_ip(ip.value().to_string());
    if (!back.ok() || !(back.value() == ip.value())) std::abort();
  }
  if (auto s = parse_secrets(text, "fuzz.secrets"); s.ok()) {
    if (s.value().size() > kMaxSecretsEntries) std::abort();
  }
  return 0;
}
