// Proves rcpd.conf parsing: a full valid file with every key, the defaults, and that every kind of
// mistake (TOML syntax, unknown key, wrong type, bad value, missing or conflicting keys) is an error
// naming the file, the line and the key.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "daemon/config.h"
#include "scratch_dir.h"

using namespace rcp;
using namespace rcp::daemon;

namespace {

const char* kFull = R"(# a complete rcpd.conf
[daemon]
listen = ["10.0.0.1", "2001:db8::1"]
port = 17471
tcp_port = 17472
transport = "tcp"
user = "rcpd"
group = "rcpd"
max_connections = 100
max_per_host = 4
max_files_per_session = 32
hello_timeout = 5
idle_timeout = 0
hash_threads = 2
pid_file = "/run/rcpd.pid"

[modules.data]
path = "/srv/data"
comment = "nightly replicas"
read_only = false
write_only = true
list = false
hosts_allow = ["10.0.0.0/8", "127.0.0.1", "::1"]
hosts_deny = ["10.9.0.0/16"]
auth_users = ["alice", "bob@example"]
secrets_file = "/etc/rcpd.secrets"
max_connections = 10

[modules.pub]
path = "/srv/pub"
)";

DaemonConfig parse_ok(const std::string& text) {
  auto r = parse_config_string(text, "t.conf");
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().context));
  return std::move(r).value();
}

/// The error for text, which must name file, line and key.
std::string parse_err(const std::string& text, int line, const std::string& key) {
  auto r = parse_config_string(text, "t.conf");
  REQUIRE_MESSAGE(!r.ok(), text);
  CHECK(r.error().code == EINVAL);
  const std::string& msg = r.error().context;
  CHECK_MESSAGE(msg.rfind("t.conf:" + std::to_string(line) + ": ", 0) == 0, msg);
  CHECK_MESSAGE(msg.find(key) != std::string::npos, msg);
  return msg;
}

const std::string kMod = "[modules.m]\npath = \"/srv/m\"\n";

}  // namespace

TEST_CASE("config: a full file sets every key") {
  const DaemonConfig c = parse_ok(kFull);
  CHECK(c.file == "t.conf");
  CHECK(c.listen == std::vector<std::string>{"10.0.0.1", "2001:db8::1"});
  CHECK(c.port == 17471);
  CHECK(c.tcp_port == 17472);
  CHECK(c.transport == TransportChoice::tcp);
  CHECK(c.user == "rcpd");
  CHECK(c.group == "rcpd");
  CHECK(c.max_connections == 100);
  CHECK(c.max_per_host == 4);
  CHECK(c.max_files_per_session == 32);
  CHECK(c.hello_timeout == 5);
  CHECK(c.idle_timeout == 0);
  CHECK(c.hash_threads == 2);
  CHECK(c.pid_file == "/run/rcpd.pid");
  REQUIRE(c.modules.size() == 2);
  const ModuleConfig* d = c.find_module("data");
  REQUIRE(d != nullptr);
  CHECK(d->path == "/srv/data");
  CHECK(d->comment == "nightly replicas");
  CHECK_FALSE(d->read_only);
  CHECK(d->write_only);
  CHECK_FALSE(d->list);
  REQUIRE(d->hosts.allow.has_value());
  CHECK(d->hosts.allow->size() == 3);
  CHECK(d->hosts.deny.size() == 1);
  CHECK(allowed(*d, parse_ip("10.1.1.1").value()));
  CHECK(allowed(*d, parse_ip("::1").value()));
  CHECK_FALSE(allowed(*d, parse_ip("10.9.1.1").value()));
  CHECK_FALSE(allowed(*d, parse_ip("192.0.2.1").value()));
  CHECK(allowed(*c.find_module("pub"), parse_ip("192.0.2.1").value()));
  CHECK(d->auth_required());
  CHECK(d->has_user("alice"));
  CHECK(d->has_user("bob@example"));
  CHECK_FALSE(d->has_user("mallory"));
  CHECK(d->secrets_file == "/etc/rcpd.secrets");
  CHECK(d->max_connections == 10);
  CHECK(c.find_module("nope") == nullptr);
  CHECK(c.modules[0].name == "data");  // file order kept
  CHECK(c.modules[1].name == "pub");
}

TEST_CASE("config: defaults of absent keys") {
  const DaemonConfig c = parse_ok(kMod);
  CHECK(c.listen == std::vector<std::string>{"0.0.0.0", "::"});
  CHECK(c.port == 7471);
  CHECK(c.tcp_port == 7472);
  CHECK(c.transport == TransportChoice::auto_);
  CHECK(c.user.empty());
  CHECK(c.max_connections == 64);
  CHECK(c.max_per_host == 8);
  CHECK(c.max_files_per_session == 64);
  CHECK(c.hello_timeout == 10);
  CHECK(c.idle_timeout == 600);
  CHECK(c.hash_threads == kHashThreadsAuto);  // hash_threads_for decides per session
  const ModuleConfig& m = c.modules.at(0);
  CHECK(m.read_only);
  CHECK_FALSE(m.write_only);
  CHECK(m.list);
  CHECK_FALSE(m.hosts.allow.has_value());
  CHECK(m.hosts.deny.empty());
  CHECK_FALSE(m.auth_required());
  CHECK(m.max_connections == 0);
  CHECK(host_allowed(m.hosts, parse_ip("203.0.113.1").value()));
  // Dotted keys at the top level are the same TOML.
  CHECK(parse_ok("modules.m.path = \"/x\"\n").modules.at(0).path == "/x");
  // An empty allow list is kept as "nobody", not as "everyone".
  const DaemonConfig none = parse_ok(kMod + "hosts_allow = []\n");
  REQUIRE(none.modules[0].hosts.allow.has_value());
  CHECK_FALSE(host_allowed(none.modules[0].hosts, parse_ip("127.0.0.1").value()));
}

TEST_CASE("config: TOML syntax errors name the file and line") {
  std::string m = parse_err("[daemon]\nport = 1\nport = 2\n" + kMod, 3, "not valid TOML");
  parse_err("[daemon\n", 1, "not valid TOML");
  parse_err(kMod + "comment = \"unterminated\n", 3, "not valid TOML");
}

TEST_CASE("config: unknown keys and tables") {
  parse_err("[daemon]\nport = 1\nportt = 2\n" + kMod, 3, "daemon.portt");
  parse_err(kMod + "read_onyl = true\n", 3, "modules.m.read_onyl");
  parse_err("[global]\nx = 1\n" + kMod, 1, "global");
  parse_err("stray = 1\n" + kMod, 1, "stray");
  parse_err(kMod + "[modules.m.sub]\nx = 1\n", 3, "modules.m.sub");
}

TEST_CASE("config: wrong types") {
  parse_err("[daemon]\nport = \"7471\"\n" + kMod, 2, "daemon.port");
  parse_err("[daemon]\nlisten = \"::\"\n" + kMod, 2, "daemon.listen");
  parse_err("[daemon]\nlisten = [\"::\", 4]\n" + kMod, 2, "daemon.listen");
  parse_err("[daemon]\nhello_timeout = 2.5\n" + kMod, 2, "daemon.hello_timeout");
  parse_err("[daemon]\nuser = 0\n" + kMod, 2, "daemon.user");
  parse_err("[daemon]\ntransport = true\n" + kMod, 2, "daemon.transport");
  parse_err("[daemon]\npid_file = 1\n" + kMod, 2, "daemon.pid_file");
  parse_err("daemon = 1\n" + kMod, 1, "daemon");
  parse_err("modules = 1\n", 1, "modules");
  parse_err("modules.m = \"/srv\"\n", 1, "modules.m");
  parse_err(kMod + "read_only = \"yes\"\n", 3, "modules.m.read_only");
  parse_err(kMod + "write_only = 0\n", 3, "modules.m.write_only");
  parse_err(kMod + "list = 1\n", 3, "modules.m.list");
  parse_err(kMod + "hosts_allow = \"10.0.0.0/8\"\n", 3, "modules.m.hosts_allow");
  parse_err(kMod + "hosts_deny = [1]\n", 3, "modules.m.hosts_deny");
  parse_err(kMod + "auth_users = \"alice\"\n", 3, "modules.m.auth_users");
  parse_err(kMod + "secrets_file = false\n", 3, "modules.m.secrets_file");
  parse_err(kMod + "comment = 1\n", 3, "modules.m.comment");
  parse_err(kMod + "max_connections = \"1\"\n", 3, "modules.m.max_connections");
  parse_err("[modules.m]\npath = [\"/srv\"]\n", 2, "modules.m.path");
}

TEST_CASE("config: bad values") {
  parse_err("[daemon]\nport = 0\n" + kMod, 2, "daemon.port");
  parse_err("[daemon]\nport = 65536\n" + kMod, 2, "daemon.port");
  parse_err("[daemon]\ntcp_port = -1\n" + kMod, 2, "daemon.tcp_port");
  parse_err("[daemon]\nmax_connections = 0\n" + kMod, 2, "daemon.max_connections");
  parse_err("[daemon]\nmax_connections = 9223372036854775807\n" + kMod, 2, "daemon.max_connections");
  parse_err("[daemon]\nmax_per_host = 0\n" + kMod, 2, "daemon.max_per_host");
  parse_err("[daemon]\nmax_connections = 4\nmax_per_host = 5\n" + kMod, 3, "daemon.max_per_host");
  parse_err("[daemon]\nmax_per_host = 65\n" + kMod, 2, "daemon.max_per_host");  // default max_connections 64
  // Found by fuzz_config: a small max_connections alone used to dereference the absent max_per_host.
  CHECK(parse_ok("[daemon]\nmax_connections = 4\n" + kMod).max_per_host == 4);
  CHECK(parse_ok("[daemon]\nmax_connections = 40\n" + kMod).max_per_host == 8);
  parse_err("[daemon]\nmax_files_per_session = 0\n" + kMod, 2, "daemon.max_files_per_session");
  parse_err("[daemon]\nmax_files_per_session = 4097\n" + kMod, 2, "daemon.max_files_per_session");
  parse_err("[daemon]\nhello_timeout = 0\n" + kMod, 2, "daemon.hello_timeout");
  parse_err("[daemon]\nhello_timeout = 301\n" + kMod, 2, "daemon.hello_timeout");
  parse_err("[daemon]\nidle_timeout = -1\n" + kMod, 2, "daemon.idle_timeout");
  parse_err("[daemon]\nidle_timeout = 86401\n" + kMod, 2, "daemon.idle_timeout");
  parse_err("[daemon]\nhash_threads = 65\n" + kMod, 2, "daemon.hash_threads");
  parse_err("[daemon]\nhash_threads = -1\n" + kMod, 2, "daemon.hash_threads");
  parse_err("[daemon]\nuser = \"" + std::string(33, 'u') + "\"\n" + kMod, 2, "daemon.user");
  CHECK(parse_ok("[daemon]\nuser = \"" + std::string(32, 'u') + "\"\n" + kMod).user.size() == 32);
  parse_err("[daemon]\ntransport = \"udp\"\n" + kMod, 2, "daemon.transport");
  parse_err("[daemon]\nuser = \"\"\n" + kMod, 2, "daemon.user");
  parse_err("[daemon]\nuser = \"-rf\"\n" + kMod, 2, "daemon.user");
  parse_err("[daemon]\nuser = \"a b\"\n" + kMod, 2, "daemon.user");
  parse_err("[daemon]\ngroup = \"x:y\"\n" + kMod, 2, "daemon.group");
  parse_err("[daemon]\npid_file = \"rcpd.pid\"\n" + kMod, 2, "daemon.pid_file");
  parse_err("[daemon]\npid_file = \"\"\n" + kMod, 2, "daemon.pid_file");
  parse_err("[daemon]\nlisten = []\n" + kMod, 2, "daemon.listen");
  parse_err("[daemon]\nlisten = [\"localhost\"]\n" + kMod, 2, "daemon.listen");
  parse_err("[daemon]\nlisten = [\"0.0.0.0\", \"0.0.0.0\"]\n" + kMod, 2, "daemon.listen");
  parse_err("[modules.m]\npath = \"srv/m\"\n", 2, "modules.m.path");
  parse_err("[modules.m]\npath = \"\"\n", 2, "modules.m.path");
  parse_err("[modules.m]\npath = \"/a\\u0000b\"\n", 2, "modules.m.path");
  parse_err(kMod + "hosts_allow = [\"10.0.0.0/33\"]\n", 3, "modules.m.hosts_allow");
  parse_err(kMod + "hosts_deny = [\"::1/129\"]\n", 3, "modules.m.hosts_deny");
  parse_err(kMod + "hosts_deny = [\"::1\", \"::1\"]\n", 3, "modules.m.hosts_deny");
  parse_err(kMod + "auth_users = []\nsecrets_file = \"/s\"\n", 3, "modules.m.auth_users");
  parse_err(kMod + "auth_users = [\"al ice\"]\nsecrets_file = \"/s\"\n", 3, "modules.m.auth_users");
  parse_err(kMod + "auth_users = [\"a:b\"]\nsecrets_file = \"/s\"\n", 3, "modules.m.auth_users");
  parse_err(kMod + "auth_users = [\"alice\", \"alice\"]\nsecrets_file = \"/s\"\n", 3, "modules.m.auth_users");
  parse_err(kMod + "auth_users = [\"alice\"]\nsecrets_file = \"s\"\n", 4, "modules.m.secrets_file");
  parse_err(kMod + "auth_users = [\"alice\"]\nsecrets_file = \"\"\n", 4, "modules.m.secrets_file");
  parse_err(kMod + "comment = \"" + std::string(257, 'c') + "\"\n", 3, "modules.m.comment");
  parse_err(kMod + "comment = \"forged\\nlog line\"\n", 3, "modules.m.comment");
  parse_err(kMod + "max_connections = 65537\n", 3, "modules.m.max_connections");
  parse_err(kMod + "max_connections = -1\n", 3, "modules.m.max_connections");
}

TEST_CASE("config: missing and conflicting keys") {
  parse_err("[modules.m]\ncomment = \"x\"\n", 1, "modules.m.path");
  parse_err(kMod + "write_only = true\n", 3, "modules.m.write_only");  // read_only defaults to true
  parse_err(kMod + "read_only = true\nwrite_only = true\n", 4, "modules.m.write_only");
  parse_ok(kMod + "read_only = false\nwrite_only = true\n");
  parse_err(kMod + "auth_users = [\"alice\"]\n", 3, "modules.m.secrets_file");
  parse_err(kMod + "secrets_file = \"/etc/s\"\n", 3, "modules.m.auth_users");
  // No module at all is valid: rcpd starts and serves nothing (the packaged file).
  parse_ok("[daemon]\nport = 1\n");
  parse_ok("");
}

TEST_CASE("config: characters toml++ 3.3 mishandles are refused before it parses") {
  // U+00E9 after a value, U+0416 in a comment, U+3042 in a string, U+FEFE in a key position:
  // toml++ 3.3.0 reaches __builtin_unreachable() classifying these as whitespace or not.
  std::string m = parse_err(kMod + "max_connections = 1\xC3\xA9\n", 3, "U+00E9");
  CHECK(m.find("\\u escape") != std::string::npos);
  parse_err("# \xD0\x96\n" + kMod, 1, "U+0416");
  parse_err(kMod + "comment = \"\xE3\x81\x82\"\n", 3, "U+3042");
  parse_err(kMod + "\xEF\xBB\xBE = 1\n", 3, "U+FEFE");
  parse_err(kMod + "comment = \"\xC2\xA1\"\n", 3, "U+00A1");
  parse_err(kMod + "comment = \"\xD2\x99\"\n", 3, "U+0499");
  // The edges and everything else pass: U+00A0, U+049A, U+3000, U+65E5, U+FEFF (in strings), escapes.
  CHECK(parse_ok(kMod + "comment = \"\xC2\xA0\xD2\x9A\xE3\x80\x80\xE6\x97\xA5\"\n").modules[0].comment ==
        "\xC2\xA0\xD2\x9A\xE3\x80\x80\xE6\x97\xA5");
  CHECK(parse_ok(kMod + "comment = \"caf\\u00e9\"  # \xE6\x97\xA5\n").modules[0].comment == "caf\xC3\xA9");
  // Malformed UTF-8 is left to toml++, which refuses it.
  parse_err(kMod + "comment = \"\xC3\"\n", 3, "not valid TOML");
  parse_err(kMod + "comment = \"x\"\n\xD0", 3, "not valid TOML");  // a lead byte at the very end
}

TEST_CASE("config: module names are plain") {
  for (const char* ok : {"data", "a", "A-b_c.d", "x1"}) CHECK_MESSAGE(valid_module_name(ok), ok);
  for (const char* bad : {"", ".hidden", "-x", "a/b", "a b", "..", "a\nb", "é"}) CHECK_MESSAGE(!valid_module_name(bad), bad);
  CHECK(valid_module_name(std::string(64, 'm')));
  CHECK_FALSE(valid_module_name(std::string(65, 'm')));
  parse_err("[modules.\"a/b\"]\npath = \"/x\"\n", 1, "modules.a/b");
  parse_err("[modules.\".x\"]\npath = \"/x\"\n", 1, "modules..x");
  parse_err("[modules.\"\"]\npath = \"/x\"\n", 1, "modules.");
  for (const char* ok : {"alice", "bob@example.org", "a_b-c.d"}) CHECK_MESSAGE(valid_user_name(ok), ok);
  for (const char* bad : {"", "-a", "a:b", "a b", "a\tb"}) CHECK_MESSAGE(!valid_user_name(bad), bad);
  CHECK_FALSE(valid_user_name(std::string(65, 'u')));
}

TEST_CASE("config: size bound and load_config") {
  auto big = parse_config_string(std::string(kMaxConfigBytes + 1, '#'), "big.conf");
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().code == EFBIG);

  const test::ScratchDir scratch;
  const std::string dir = scratch.dir;
  const std::string path = scratch.at("rcpd.conf");
  FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  std::fputs(kFull, f);
  std::fclose(f);
  auto c = load_config(path);
  REQUIRE_MESSAGE(c.ok(), (c.ok() ? "" : c.error().context));
  CHECK(c.value().file == path);
  CHECK(c.value().modules.size() == 2);

  f = std::fopen(path.c_str(), "w");
  std::fputs("[modules.m]\npath = \"/x\"\nbogus = 1\n", f);
  std::fclose(f);
  auto e = load_config(path);
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().context == path + ":3: modules.m.bogus: unknown key");

  // a huge (sparse) file is refused by its size, not read into memory first
  REQUIRE(::truncate(path.c_str(), off_t{1} << 40) == 0);
  auto huge = load_config(path);
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.error().code == EFBIG);

  auto missing = load_config(std::string(dir) + "/absent.conf");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ENOENT);
  auto isdir = load_config(dir);
  REQUIRE_FALSE(isdir.ok());
  CHECK(isdir.error().code == EINVAL);

  REQUIRE(truncate(path.c_str(), kMaxConfigBytes + 1) == 0);
  auto toobig = load_config(path);
  REQUIRE_FALSE(toobig.ok());
  CHECK(toobig.error().code == EFBIG);
}

TEST_CASE("daemon config: a file with no module is valid and serves nothing") {
  auto c = parse_config_string("[daemon]\nmax_connections = 4\n", "empty.conf");
  REQUIRE(c.ok());
  CHECK(c->modules.empty());
  CHECK(c->max_connections == 4);
}

TEST_CASE("config: a module may export a block device, and say direct") {
  DaemonConfig c = parse_ok("[modules.disk]\ndevice = \"/dev/vg0/backup\"\ndirect = true\n");
  REQUIRE(c.modules.size() == 1);
  CHECK(c.modules[0].is_device());
  CHECK(c.modules[0].device == "/dev/vg0/backup");
  CHECK(c.modules[0].path.empty());
  CHECK(c.modules[0].direct);
  CHECK(c.modules[0].read_only);  // read-only by default like every module
  CHECK_FALSE(parse_ok(kMod).modules[0].direct);
  CHECK_FALSE(parse_ok(kMod).modules[0].is_device());
  parse_err("[modules.disk]\ndevice = \"dev/sdb\"\n", 2, "modules.disk.device");
  parse_err("[modules.disk]\ndevice = \"\"\n", 2, "modules.disk.device");
  parse_err("[modules.disk]\ndevice = 3\n", 2, "modules.disk.device");
  parse_err(kMod + "device = \"/dev/sdb\"\n", 3, "modules.m.device");  // path and device exclude each other
  parse_err(kMod + "direct = \"yes\"\n", 3, "modules.m.direct");
  parse_err("[modules.disk]\ncomment = \"x\"\n", 1, "modules.disk.path");  // neither
}

TEST_CASE("config: encryption (daemon policy, per-module requirement)") {
  DaemonConfig d = parse_ok(kMod);
  CHECK(d.encrypt == EncryptPolicy::allowed);
  CHECK_FALSE(d.modules[0].encrypt);
  CHECK_FALSE(d.encryption_required(d.modules[0]));
  DaemonConfig m = parse_ok(kMod + "encrypt = true\n");
  CHECK(m.modules[0].encrypt);
  CHECK(m.encryption_required(m.modules[0]));
  DaemonConfig r = parse_ok("[daemon]\nencrypt = \"required\"\n" + kMod);
  CHECK(r.encrypt == EncryptPolicy::required);
  CHECK(r.encryption_required(r.modules[0]));
  CHECK(parse_ok("[daemon]\nencrypt = \"never\"\n" + kMod).encrypt == EncryptPolicy::never);
  parse_err("[daemon]\nencrypt = \"always\"\n" + kMod, 2, "daemon.encrypt");
  parse_err("[daemon]\nencrypt = true\n" + kMod, 2, "daemon.encrypt");
  parse_err(kMod + "encrypt = \"yes\"\n", 3, "modules.m.encrypt");
  // A module no client could reach.
  std::string msg = parse_err("[daemon]\nencrypt = \"never\"\n" + kMod + "encrypt = true\n", 5, "modules.m.encrypt");
  CHECK(msg.find("never") != std::string::npos);
}
