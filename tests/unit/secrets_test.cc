// Proves the secrets file is parsed strictly and bounded, and refused unless it is a regular file
// owned by the daemon's user with no group or other permissions (temp files, chmod, symlinks).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "daemon/secrets.h"

using namespace rcp;
using namespace rcp::daemon;

namespace {

std::string parse_err(const std::string& text, int line) {
  auto r = parse_secrets(text, "s.txt");
  REQUIRE_MESSAGE(!r.ok(), text);
  CHECK(r.error().code == EINVAL);
  CHECK_MESSAGE(r.error().context.rfind("s.txt:" + std::to_string(line) + ": ", 0) == 0, r.error().context);
  return r.error().context;
}

/// A temp dir holding one secrets file, removed at the end of the test.
struct TempSecrets {
  std::string dir;
  std::string path;
  explicit TempSecrets(const std::string& text, mode_t mode = 0600) {
    char tmpl[] = "/tmp/rcp-secrets-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    path = dir + "/secrets";
    FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
    REQUIRE(chmod(path.c_str(), mode) == 0);
  }
  ~TempSecrets() {
    unlink((dir + "/link").c_str());
    unlink(path.c_str());
    rmdir(dir.c_str());
  }
};

}  // namespace

TEST_CASE("secrets: user:secret lines, comments and blank lines") {
  auto r = parse_secrets("# comment\n\n   \n  # indented comment\nalice:correct horse battery\r\nbob:pa:ss:word\n"
                         "carol:trailing-no-newline",
                         "s.txt");
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().context));
  const Secrets& s = r.value();
  CHECK(s.size() == 3);
  REQUIRE(s.find("alice") != nullptr);
  CHECK(*s.find("alice") == "correct horse battery");  // blanks inside kept, \r removed
  CHECK(*s.find("bob") == "pa:ss:word");               // split at the first ':'
  CHECK(*s.find("carol") == "trailing-no-newline");
  CHECK(s.find("dave") == nullptr);
  CHECK(s.find("") == nullptr);
  CHECK(parse_secrets("", "s.txt").value().size() == 0);
}

TEST_CASE("secrets: malformed lines are refused naming the line, never the secret") {
  parse_err("alice:longenough\nno colon here\n", 2);
  std::string m = parse_err("alice:short\n", 1);
  CHECK(m.find("short") != std::string::npos);  // "shorter than"
  CHECK(m.find(": short") == std::string::npos);
  parse_err("alice:\n", 1);
  parse_err(":longenough\n", 1);
  parse_err(" alice:longenough\n", 1);
  parse_err("al ice:longenough\n", 1);
  parse_err("-alice:longenough\n", 1);
  m = parse_err("alice:secret-one\nalice:secret-two\n", 2);
  CHECK(m.find("secret-") == std::string::npos);
  parse_err(std::string("alice:longe\0nough\n", 18), 1);
  parse_err("alice:" + std::string(kMaxSecretsLine, 'x') + "\n", 1);
}

TEST_CASE("secrets: bounded size and entry count") {
  std::string many;
  for (size_t i = 0; i <= kMaxSecretsEntries; ++i) many += "u" + std::to_string(i) + ":secret-secret\n";
  REQUIRE(many.size() <= kMaxSecretsBytes);
  parse_err(many, static_cast<int>(kMaxSecretsEntries + 1));
  many.resize(many.rfind('u'));
  CHECK(parse_secrets(many, "s.txt").value().size() == kMaxSecretsEntries);
  auto big = parse_secrets(std::string(kMaxSecretsBytes + 1, '#'), "s.txt");
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().code == EFBIG);
}

TEST_CASE("secrets: load_secrets requires owner = daemon user and mode 0600 or stricter") {
  {
    TempSecrets t("alice:longenough\n");
    auto r = load_secrets(t.path);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().context));
    CHECK(*r.value().find("alice") == "longenough");
    CHECK(load_secrets(t.path, geteuid()).ok());
    auto wrong_owner = load_secrets(t.path, geteuid() + 1);
    REQUIRE_FALSE(wrong_owner.ok());
    CHECK(wrong_owner.error().code == EPERM);
    CHECK(wrong_owner.error().context.find("owned by uid") != std::string::npos);
  }
  for (mode_t mode : {0640, 0604, 0620, 0602, 0610, 0601, 0644, 0666}) {
    TempSecrets t("alice:longenough\n", mode);
    auto r = load_secrets(t.path);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == EPERM);
    CHECK(r.error().context.find("chmod 600") != std::string::npos);
  }
  {
    TempSecrets t("alice:longenough\n", 0400);
    CHECK(load_secrets(t.path).ok());
  }
  {
    TempSecrets t("alice:longenough\n");
    REQUIRE(symlink(t.path.c_str(), (t.dir + "/link").c_str()) == 0);
    auto r = load_secrets(t.dir + "/link");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ELOOP);
    auto d = load_secrets(t.dir);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().code == EINVAL);
    auto missing = load_secrets(t.dir + "/absent");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().code == ENOENT);
    // A character device (what a mistyped path like /dev/zero is) is refused, not read forever.
    auto dev = load_secrets("/dev/zero", 0);
    REQUIRE_FALSE(dev.ok());
    CHECK(dev.error().code == EINVAL);
  }
  {
    TempSecrets t("alice:longenough\n");
    REQUIRE(truncate(t.path.c_str(), kMaxSecretsBytes + 1) == 0);
    auto r = load_secrets(t.path);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == EFBIG);
    // refused by its size, before a byte is read
    CHECK_MESSAGE(r.error().context == "secrets file " + t.path + " is larger than 65536 bytes", r.error().context);
  }
  {
    TempSecrets t("alice:longenough\nbroken\n");
    auto r = load_secrets(t.path);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().context == t.path + ":2: expected user:secret");
  }
}

TEST_CASE("secrets: moved Secrets keep their entries") {
  auto r = parse_secrets("alice:longenough\n", "s.txt");
  REQUIRE(r.ok());
  Secrets a = std::move(r.value());
  Secrets b;
  b = std::move(a);
  REQUIRE(b.find("alice") != nullptr);
  CHECK(*b.find("alice") == "longenough");
}
