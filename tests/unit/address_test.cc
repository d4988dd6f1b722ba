// Proves every address form a scp or rsync user types parses into the same
// struct, that local names with ':' stay local as in scp, and that each
// malformed form fails with a sentence quoting the argument.
#include <doctest/doctest.h>

#include <string>

#include "cli/address.h"

using rcp::cli::Address;
using rcp::cli::parse_address;

namespace {

Address ok(std::string_view s) {
  auto r = parse_address(s);
  REQUIRE_MESSAGE(r.ok(), (std::string(s) + " -> " + r.error().message()));
  return r.value();
}

std::string err(std::string_view s) {
  auto r = parse_address(s);
  REQUIRE_MESSAGE(!r.ok(), (std::string(s) + " parsed but should not"));
  return r.error().message();
}

bool contains(const std::string& hay, std::string_view needle) { return hay.find(needle) != std::string::npos; }

void check_remote(const Address& a, std::string_view user, std::string_view host, uint16_t port,
                  std::string_view module, std::string_view path) {
  CHECK(a.is_remote);
  CHECK(a.user == user);
  CHECK(a.host == host);
  CHECK(a.port == port);
  CHECK(a.module == module);
  CHECK(a.path == path);
  CHECK_FALSE(a.list_modules);
}

}  // namespace

TEST_CASE("local paths stay local, as in scp") {
  for (std::string_view s : {"file.txt", "dir/sub/", "/abs/path", "./a:b", "/x:y", "a/b:c", ".", "..", "-",
                             ":leading-colon", "[draft] notes.txt", "[nocolon", "dir[1]/x:y", "a@b", "x@y/z:w",
                             "r\xC3\xA9sum\xC3\xA9.txt"}) {
    auto a = ok(s);
    CHECK_MESSAGE(!a.is_remote, s);
    CHECK(a.path == s);
    CHECK(a.host.empty());
  }
}

TEST_CASE("HOST:MODULE/PATH") {
  check_remote(ok("server:data/isos/big.iso"), "", "server", 0, "data", "isos/big.iso");
  check_remote(ok("127.0.0.1:data/x.txt"), "", "127.0.0.1", 0, "data", "x.txt");
  check_remote(ok("backup-host.example.org:logs"), "", "backup-host.example.org", 0, "logs", "");
  check_remote(ok("h:data/dir/"), "", "h", 0, "data", "dir/");
  check_remote(ok("h:data//x"), "", "h", 0, "data", "x");
  CHECK(ok("h:data/dir/").trailing_slash);
  CHECK(ok("h:data/").trailing_slash);
  CHECK(ok("h:data/").path.empty());
  CHECK_FALSE(ok("h:data").trailing_slash);
  CHECK_FALSE(ok("h:data/x").trailing_slash);
  // Globs and odd characters in the path are the daemon's to expand or refuse.
  check_remote(ok("h:data/logs/*.gz"), "", "h", 0, "data", "logs/*.gz");
  check_remote(ok("h:data/a:b c"), "", "h", 0, "data", "a:b c");
  check_remote(ok("h:my module/x"), "", "h", 0, "my module", "x");
}

TEST_CASE("[v6]:MODULE/PATH") {
  check_remote(ok("[::1]:data/x"), "", "::1", 0, "data", "x");
  check_remote(ok("[fe80::1%eth0]:data/x"), "", "fe80::1%eth0", 0, "data", "x");
  check_remote(ok("[2001:db8::7]:m"), "", "2001:db8::7", 0, "m", "");
  check_remote(ok("[::ffff:10.0.0.1]::m/p"), "", "::ffff:10.0.0.1", 0, "m", "p");
  check_remote(ok("[hostname]:m/p"), "", "hostname", 0, "m", "p");
}

TEST_CASE("USER@HOST forms") {
  check_remote(ok("alice@server:data/f"), "alice", "server", 0, "data", "f");
  check_remote(ok("alice@[::1]:data/f"), "alice", "::1", 0, "data", "f");
  // The last '@' separates the host, so user names may contain '@'.
  check_remote(ok("alice@corp@server:data/f"), "alice@corp", "server", 0, "data", "f");
  check_remote(ok("bob@h::data/f"), "bob", "h", 0, "data", "f");
}

TEST_CASE("HOST::MODULE/PATH (rsync daemon style) means the same as one colon") {
  check_remote(ok("host::data/u.txt"), "", "host", 0, "data", "u.txt");
  check_remote(ok("host::data"), "", "host", 0, "data", "");
}

TEST_CASE("rcp:// URLs") {
  check_remote(ok("rcp://host/data/x"), "", "host", 0, "data", "x");
  check_remote(ok("rcp://host:7000/data/x/y"), "", "host", 7000, "data", "x/y");
  check_remote(ok("rcp://u@host:1/data"), "u", "host", 1, "data", "");
  check_remote(ok("rcp://u@[::1]:65535/data/x"), "u", "::1", 65535, "data", "x");
  check_remote(ok("rcp://[fe80::1%25eth0]/data/x"), "", "fe80::1%25eth0", 0, "data", "x");
  check_remote(ok("RCP://Host/data/x"), "", "Host", 0, "data", "x");
  CHECK(ok("rcp://h/data/d/").trailing_slash);
}

TEST_CASE("listing modules: HOST:, HOST::, rcp://HOST[/]") {
  for (std::string_view s : {"host:", "host::", "u@host:", "[::1]:", "[::1]::", "rcp://host", "rcp://host/",
                             "rcp://u@host:7000/", "rcp://[::1]:9"}) {
    auto a = ok(s);
    CHECK_MESSAGE(a.is_remote, s);
    CHECK_MESSAGE(a.list_modules, s);
    CHECK(a.module.empty());
    CHECK(a.path.empty());
  }
  CHECK(ok("u@host:").user == "u");
  CHECK(ok("rcp://u@host:7000/").port == 7000);
}

TEST_CASE("errors quote the argument and say what is wrong") {
  CHECK(contains(err(""), "empty path"));
  // Bad ports.
  CHECK(contains(err("rcp://h:99999/data"), "port 99999 is out of range (1-65535)"));
  CHECK(contains(err("rcp://h:99999/data"), "'rcp://h:99999/data'"));
  CHECK(contains(err("rcp://h:0/data"), "out of range"));
  CHECK(contains(err("rcp://h:abc/data"), "'abc' is not a number"));
  CHECK(contains(err("rcp://h:123456/data"), "not a number from 1 to 65535"));
  CHECK(contains(err("rcp://h:/data"), "empty port"));
  CHECK(contains(err("rcp://[::1]:x/data"), "not a number"));
  // Unterminated or misplaced brackets.
  CHECK(contains(err("[::1:data/x"), "unterminated '['"));
  CHECK(contains(err("u@[::1:data/x"), "unterminated '['"));
  CHECK(contains(err("rcp://[::1/data"), "unterminated '['"));
  CHECK(contains(err("rcp://[::1]x/data"), "after ']'"));
  CHECK(contains(err("[]:data/x"), "empty address"));
  // Empty module.
  CHECK(contains(err("host:/data/x"), "no module name"));
  CHECK(contains(err("host:/data/x"), "rcp host:"));
  CHECK(contains(err("host::/x"), "no module name"));
  CHECK(contains(err("rcp://host//x"), "no module name"));
  CHECK(contains(err("[::1]:/x"), "rcp [::1]:"));
  // Other.
  CHECK(contains(err("rcp://"), "no host name after rcp://"));  // (not "before ':'": there is none)
  CHECK(contains(err("rcp:///data/x"), "no host name"));
  CHECK(contains(err("rcp://::1/data"), "needs brackets"));
  CHECK(contains(err("rcp://@h/data"), "empty user name"));
  CHECK(contains(err("rcp://u:secret@h/data"), "password in the URL is not supported"));
  CHECK(contains(err("rcp://u:secret@h/data"), "'rcp://u:***@h/data'"));
  CHECK_FALSE(contains(err("rcp://u:secret@h/data"), "secret"));
  CHECK(contains(err("@h:data"), "empty user name"));
  CHECK(contains(err("u@:data/x"), "no host name"));
  CHECK(contains(err("scp://host/data"), "unsupported URL scheme 'scp://'"));
  CHECK(contains(err("my file:x"), "'my file' is not a host name"));
  CHECK(contains(err("my file:x"), "./my file:x"));
  CHECK(contains(err("h:..:x"), "module names cannot contain ':'"));
  CHECK(contains(err("h:../x"), "'..' is not a module name"));
  CHECK(contains(err("h:::x"), "cannot contain ':'"));
  // A module name is a name the daemon's config holds: no control characters, 255 bytes at most.
  CHECK(contains(err("h:da\tta/x"), "the module name contains a control character"));
  CHECK(contains(err("rcp://h/da\x1bta/x"), "control character"));
  CHECK(contains(err("h:" + std::string(256, 'm') + "/x"), "the module name is longer than 255 bytes"));
  CHECK(parse_address("h:" + std::string(255, 'm') + "/x").ok());
  // A usage error, not a system error: no strerror text appended.
  CHECK(err("h:/x").find("Invalid argument") == std::string::npos);
}

TEST_CASE("to_string spells the canonical form") {
  using rcp::cli::to_string;
  CHECK(to_string(ok("host::data/u.txt")) == "host:data/u.txt");
  CHECK(to_string(ok("u@[::1]:data/x")) == "u@[::1]:data/x");
  CHECK(to_string(ok("rcp://u@h:7000/data/x")) == "rcp://u@h:7000/data/x");
  CHECK(to_string(ok("rcp://h/data/x")) == "h:data/x");
  CHECK(to_string(ok("h:data/dir/")) == "h:data/dir/");
  CHECK(to_string(ok("h:data/")) == "h:data/");
  CHECK(to_string(ok("h::")) == "h:");
  CHECK(to_string(ok("./a:b")) == "./a:b");
  CHECK(ok("h:data/x/y").module_path() == "data/x/y");
  CHECK(ok("h:data").module_path() == "data");
}
