// Proves the client config gives each host its defaults (host table over
// top level, user file over system file), and that every mistake — unknown
// key, wrong type, out-of-range value, broken TOML — is an error naming the
// file, line and key instead of a silently ignored setting.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli/client_config.h"

using namespace rcp::cli;

namespace {

ClientConfig ok(std::string_view text, const std::string& file = "/etc/rcp/config.toml") {
  auto r = parse_client_config(text, file, "/home/u");
  REQUIRE_MESSAGE(r.ok(), r.error().message());
  return r.value();
}

std::string err(std::string_view text, const std::string& file = "/etc/rcp/config.toml") {
  auto r = parse_client_config(text, file, "/home/u");
  REQUIRE_MESSAGE(!r.ok(), (std::string(text) + " parsed but should not"));
  return r.error().message();
}

bool contains(const std::string& hay, std::string_view needle) { return hay.find(needle) != std::string::npos; }

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/rcp-config-test.XXXXXX";
    REQUIRE(::mkdtemp(t) != nullptr);
    path = t;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& name, std::string_view text) {
    const std::string p = path + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p) << text;
    return p;
  }
};

}  // namespace

TEST_CASE("an empty file configures nothing") {
  auto c = ok("");
  CHECK_FALSE(c.all.port);
  CHECK_FALSE(c.all.transport);
  CHECK(c.hosts.empty());
  CHECK_FALSE(c.for_host("any").streams);
}

TEST_CASE("top-level defaults and per-host tables") {
  auto c = ok(R"(
transport = "tcp"
port = 7000
tcp_port = 7001
streams = 4
progress = false
password_file = "/etc/rcp/pw"

[hosts."backup-host"]
port = 17471
transport = "rdma"
user = "backup"
password_file = "~/.config/rcp/backup.pw"

[hosts."[fe80::1]"]
streams = 1

[hosts.other]
progress = true
encrypt = true
)");
  CHECK(*c.all.transport == "tcp");
  CHECK(*c.all.port == 7000);
  CHECK(*c.all.tcp_port == 7001);
  CHECK(*c.all.streams == 4);
  CHECK(*c.all.progress == false);
  CHECK(*c.all.password_file == "/etc/rcp/pw");
  REQUIRE(c.hosts.size() == 3);

  auto b = c.for_host("backup-host");
  CHECK(*b.port == 17471);           // host table wins
  CHECK(*b.tcp_port == 7001);        // top level where the host says nothing
  CHECK(*b.transport == "rdma");
  CHECK(*b.user == "backup");
  CHECK(*b.password_file == "/home/u/.config/rcp/backup.pw");  // "~/" expanded
  CHECK(*c.for_host("BACKUP-HOST").port == 17471);               // host names are case-insensitive

  CHECK(*c.for_host("fe80::1").streams == 1);    // brackets are not part of the name
  CHECK(*c.for_host("[fe80::1]").streams == 1);
  CHECK(*c.for_host("other").progress == true);
  CHECK(*c.for_host("other").encrypt == true);
  CHECK_FALSE(c.for_host("backup-host").encrypt.has_value());
  auto n = c.for_host("nobody");
  CHECK(*n.port == 7000);
  CHECK_FALSE(n.user);
}

TEST_CASE("a relative password_file is next to the config file") {
  auto c = ok("password_file = \"pw\"\n", "/home/u/.config/rcp/config.toml");
  CHECK(*c.all.password_file == "/home/u/.config/rcp/pw");
}

TEST_CASE("mistakes name file, line, column and key") {
  std::string e = err("port = 7000\nprot = 7001\n");
  CHECK(contains(e, "/etc/rcp/config.toml:2:1: unknown key 'prot'"));
  CHECK(contains(e, "known: transport, port"));

  e = err("[hosts.\"b\"]\nport = 1\nstreem = 2\n");
  CHECK(contains(e, ":3:1: unknown key 'streem' in a [hosts] table"));

  e = err("port = \"7000\"\n");
  CHECK(contains(e, ":1:"));
  CHECK(contains(e, "'port' must be an integer from 1 to 65535, not a string"));

  CHECK(contains(err("tcp_port = 70000\n"), "'tcp_port' must be an integer from 1 to 65535, not 70000"));
  CHECK(contains(err("port = 0\n"), "not 0"));
  CHECK(contains(err("streams = 17\n"), "'streams' must be an integer from 1 to 16, not 17"));
  CHECK(contains(err("streams = 2.5\n"), "not a number with a fraction"));
  CHECK(contains(err("transport = \"udp\"\n"), "'transport' must be \"auto\", \"rdma\" or \"tcp\", not \"udp\""));
  CHECK(contains(err("transport = 1\n"), "'transport' must be a string, not an integer"));
  CHECK(contains(err("progress = \"yes\"\n"), "'progress' must be true or false, not a string"));
  CHECK(contains(err("encrypt = 1\n"), "'encrypt' must be true or false"));
  CHECK(contains(err("user = \"\"\n"), "'user' is empty"));
  CHECK(contains(err("password_file = \"~bob/pw\"\n"), "'~user' paths are not supported"));
  CHECK(contains(err("hosts = 3\n"), "'hosts' must be a table"));
  CHECK(contains(err("[hosts]\nb = 3\n"), "'hosts.b' must be a table"));
  CHECK(contains(err("[hosts.\"b\".x]\nport = 1\n"), "unknown key 'x' in a [hosts] table"));
  CHECK(contains(err("[hosts.\"\"]\nport = 1\n"), "empty host name in [hosts.\"\"]"));
  CHECK(contains(err("password_file = \"\"\n"), "'password_file' is empty"));
  // Broken TOML: the parser's own description, with the position.
  e = err("port = 7000\nport = 7001\n");
  CHECK(contains(e, "/etc/rcp/config.toml:2:"));
  e = err("port = \n");
  CHECK(contains(e, "/etc/rcp/config.toml:1:"));
  e = err("[hosts.\"b\"\n");
  CHECK(contains(e, "/etc/rcp/config.toml:1:"));
  // Usage errors: no strerror text.
  CHECK_FALSE(contains(err("prot = 1\n"), "Invalid argument"));
}

TEST_CASE("~ needs HOME") {
  auto r = parse_client_config("password_file = \"~/pw\"\n", "/etc/rcp/config.toml", "");
  REQUIRE_FALSE(r.ok());
  CHECK(contains(r.error().message(), "HOME is not set"));
}

TEST_CASE("load: the user's file wins key by key over the system's; missing files are skipped") {
  TempDir d;
  const std::string sys = d.write("etc/config.toml", R"(
port = 1000
tcp_port = 1001
[hosts.a]
streams = 3
transport = "tcp"
)");
  const std::string user = d.write("home/config.toml", R"(
port = 2000
[hosts.A]
streams = 5
[hosts.b]
progress = false
)");
  auto r = load_client_config({user, d.path + "/missing.toml", sys});
  REQUIRE_MESSAGE(r.ok(), r.error().message());
  const ClientConfig& c = r.value();
  CHECK(c.files == std::vector<std::string>{sys, user});
  CHECK(*c.all.port == 2000);
  CHECK(*c.all.tcp_port == 1001);
  auto a = c.for_host("a");
  CHECK(*a.streams == 5);
  CHECK(*a.transport == "tcp");
  CHECK(*c.for_host("b").progress == false);

  auto none = load_client_config({d.path + "/nope.toml"});
  REQUIRE(none.ok());
  CHECK(none.value().files.empty());
}

TEST_CASE("load: a broken file stops the load with its name; a directory is not a config") {
  TempDir d;
  const std::string bad = d.write("bad.toml", "port = 1\nport_tcp = 2\n");
  auto r = load_client_config({bad});
  REQUIRE_FALSE(r.ok());
  CHECK(contains(r.error().message(), bad + ":2:1: unknown key 'port_tcp'"));
  auto dir = load_client_config({d.path});
  REQUIRE_FALSE(dir.ok());
  CHECK(contains(dir.error().message(), d.path));  // A file past the bound is refused as read, not parsed (1 MiB of comments).
  const std::string big = d.write("big.toml", std::string((1 << 20) + 1, '#'));
  auto b = load_client_config({big});
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().code == EFBIG);
  CHECK(contains(b.error().message(), "config file '" + big + "' is larger than 1 MiB"));
}

TEST_CASE("default paths: the user's file first, then /etc") {
  const char* old_xdg = std::getenv("XDG_CONFIG_HOME");
  const std::string saved = old_xdg ? old_xdg : "";
  ::setenv("XDG_CONFIG_HOME", "/x/cfg", 1);
  auto p = default_client_config_paths();
  CHECK(p == std::vector<std::string>{"/x/cfg/rcp/config.toml", "/etc/rcp/config.toml"});
  ::unsetenv("XDG_CONFIG_HOME");
  if (const char* home = std::getenv("HOME"); home && *home) {
    p = default_client_config_paths();
    CHECK(p.front() == std::string(home) + "/.config/rcp/config.toml");
  }
  if (old_xdg) ::setenv("XDG_CONFIG_HOME", saved.c_str(), 1);
}
