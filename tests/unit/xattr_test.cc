// fs/xattr_rules.h (which names -X/-A carry, the receiver's per-entry
// bounds: each bound has a case that fails without its check) and
// fs/xattr.h on a real file in /tmp.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "fs/xattr.h"

using namespace rcp;

namespace {

constexpr XattrScope kUserOnly{true, false, false};
constexpr XattrScope kRoot{true, false, true};
constexpr XattrScope kAclsOnly{false, true, false};

}  // namespace

TEST_CASE("xattr names: a namespace prefix, no NUL, at most XATTR_NAME_MAX bytes") {
  CHECK(xattr_name_problem("user.a") == "");
  CHECK(xattr_name_problem("trusted.x") == "");
  CHECK(xattr_name_problem("security.selinux") == "");
  CHECK(xattr_name_problem("system.posix_acl_access") == "");
  CHECK(xattr_name_problem("") != "");
  CHECK(xattr_name_problem("plain") != "");          // no namespace
  CHECK(xattr_name_problem("user.") != "");          // a namespace and nothing after it
  CHECK(xattr_name_problem("users.a") != "");        // not a namespace Linux has
  CHECK(xattr_name_problem(std::string("user.a\0b", 8)) != "");
  const std::string longest = "user." + std::string(kMaxXattrName - 5, 'n');
  CHECK(xattr_name_problem(longest) == "");
  CHECK(xattr_name_problem(longest + "n") != "");
}

TEST_CASE("xattr scope: user.* with -X, trusted/security only as root, ACLs only with -A") {
  CHECK(xattr_wanted("user.a", kUserOnly));
  CHECK_FALSE(xattr_wanted("trusted.a", kUserOnly));
  CHECK_FALSE(xattr_wanted("security.a", kUserOnly));
  CHECK(xattr_wanted("trusted.a", kRoot));
  CHECK(xattr_wanted("security.a", kRoot));
  CHECK_FALSE(xattr_wanted("system.posix_acl_access", kRoot));  // -X alone carries no ACL
  CHECK(xattr_wanted("system.posix_acl_access", kAclsOnly));
  CHECK(xattr_wanted("system.posix_acl_default", kAclsOnly));
  CHECK_FALSE(xattr_wanted("user.a", kAclsOnly));  // -A alone carries no user xattr
  CHECK_FALSE(xattr_wanted("system.nfs4_acl", XattrScope{true, true, true}));  // never another system.*
  CHECK_FALSE(xattr_wanted("plain", XattrScope{true, true, true}));
}

TEST_CASE("XattrTally refuses a malformed name, one not asked for, and a repeat") {
  XattrTally t(kUserOnly);
  CHECK(t.admit("user.a", 1).ok());
  CHECK(t.admit("noprefix", 1).error().code == EPROTO);
  CHECK(t.admit(std::string("user.\0", 6), 1).error().code == EPROTO);
  CHECK(t.admit("trusted.a", 1).error().code == EPROTO);  // not root: not asked for
  CHECK(t.admit("user.a", 1).error().code == EPROTO);     // sent twice
  CHECK(t.count() == 1);
}

TEST_CASE("XattrTally bounds one value at XATTR_SIZE_MAX") {
  XattrTally t(kUserOnly);
  CHECK(t.admit("user.big", kMaxXattrValue).ok());
  CHECK(t.admit("user.bigger", kMaxXattrValue + 1).error().code == EPROTO);
}

TEST_CASE("XattrTally bounds the count per entry") {
  XattrTally t(kUserOnly);
  for (size_t i = 0; i < kMaxXattrsPerEntry; ++i) REQUIRE(t.admit("user." + std::to_string(i), 0).ok());
  CHECK(t.admit("user.one-more", 0).error().code == EPROTO);
}

TEST_CASE("XattrTally bounds the bytes per entry") {
  XattrTally t(kUserOnly);
  // Values of 65536 - 9 bytes with names of 9: each takes exactly kMaxXattrValue.
  const size_t each = kMaxXattrValue;
  size_t i = 0;
  for (; (i + 1) * each <= kMaxXattrBytesPerEntry; ++i) REQUIRE(t.admit("user.v" + std::to_string(100 + i), each - 9).ok());
  CHECK(t.bytes() == kMaxXattrBytesPerEntry);
  CHECK(t.admit("user.x", 0).error().code == EPROTO);  // 6 name bytes over
}

TEST_CASE("read_xattrs / set_xattr / remove_other_xattrs on a real file") {
  char path[] = "/tmp/rcp-xattr-test.XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  if (::fsetxattr(fd, "user.probe", "1", 1, 0) != 0) {
    MESSAGE("skipped: /tmp keeps no user xattrs (errno " << errno << ")");
    ::close(fd);
    ::unlink(path);
    return;
  }
  REQUIRE(::fremovexattr(fd, "user.probe") == 0);
  CHECK(read_xattrs(fd, kUserOnly)->empty());
  REQUIRE(set_xattr(fd, Xattr{"user.one", "first"}).ok());
  REQUIRE(set_xattr(fd, Xattr{"user.empty", ""}).ok());
  REQUIRE(set_xattr(fd, Xattr{"user.bin", std::string("a\0b", 3)}).ok());
  auto got = read_xattrs(fd, kUserOnly);
  REQUIRE(got.ok());
  CHECK(got->size() == 3);
  for (const Xattr& x : *got) {
    if (x.name == "user.one") CHECK(x.value == "first");
    else if (x.name == "user.empty") CHECK(x.value.empty());
    else if (x.name == "user.bin") CHECK(x.value == std::string("a\0b", 3));
    else FAIL("unexpected xattr " << x.name);
  }
  CHECK(read_xattrs(fd, kAclsOnly)->empty());  // -A alone: user.* are not read
  REQUIRE(set_xattr(fd, Xattr{"user.one", "second"}).ok());  // replaces
  REQUIRE(remove_other_xattrs(fd, {Xattr{"user.one", ""}}, kUserOnly).ok());
  got = read_xattrs(fd, kUserOnly);
  REQUIRE(got.ok());
  REQUIRE(got->size() == 1);
  CHECK(got->at(0).name == "user.one");
  CHECK(got->at(0).value == "second");
  CHECK_FALSE(set_xattr(fd, Xattr{"user.", "x"}).ok());  // the kernel refuses what the rules refuse
  ::close(fd);
  ::unlink(path);
}

TEST_CASE("xattrs_unsupported names ENOTSUP only") {
  CHECK(xattrs_unsupported(ENOTSUP));
  CHECK(xattrs_unsupported(EOPNOTSUPP));
  CHECK_FALSE(xattrs_unsupported(ENOSPC));
  CHECK_FALSE(xattrs_unsupported(EPERM));
}

// session/xattr_pieces.h: cutting values into XATTR pieces and putting them
// back, and every way a lying source's pieces are refused.
#include "session/xattr_pieces.h"

namespace {
Result<std::optional<Xattr>> feed(XattrAssembler& a, const std::vector<wire::XattrPiece>& ps) {
  Result<std::optional<Xattr>> r = std::optional<Xattr>{};
  for (const auto& p : ps) {
    r = a.add(p);
    if (!r.ok()) return r;
  }
  return r;
}
wire::XattrPiece piece(std::string name, uint32_t total, uint32_t offset, std::string data) {
  return wire::XattrPiece{1, std::move(name), total, offset, std::move(data)};
}
}  // namespace

TEST_CASE("xattr pieces: values of 0, 1, 3071-3073, 4096 and 65536 bytes round-trip") {
  for (size_t n : {0, 1, 3071, 3072, 3073, 4096, 65536}) {
    Xattr x{"user.v", std::string(n, '\0')};
    for (size_t i = 0; i < n; ++i) x.value[i] = static_cast<char>(i * 7);
    auto ps = split_xattr(9, x);
    CHECK(ps.size() == (n == 0 ? 1 : (n + wire::kMaxXattrPiece - 1) / wire::kMaxXattrPiece));
    for (const auto& p : ps) {
      CHECK(p.data.size() <= wire::kMaxXattrPiece);
      CHECK(p.file_id == 9);
      std::vector<uint8_t> buf;
      CHECK(wire::encode(p, buf).ok());  // every piece fits a message
    }
    XattrAssembler a(kUserOnly);
    for (size_t i = 0; i + 1 < ps.size(); ++i) {
      auto r = a.add(ps[i]);
      REQUIRE(r.ok());
      CHECK_FALSE(r->has_value());
      CHECK(a.in_progress());
    }
    auto last = a.add(ps.back());
    REQUIRE(last.ok());
    REQUIRE(last->has_value());
    CHECK((*last)->name == "user.v");
    CHECK((*last)->value == x.value);
    CHECK_FALSE(a.in_progress());
  }
}

TEST_CASE("xattr pieces: out of order, another name or total midway, a repeat, or past the bounds is refused") {
  auto ps = split_xattr(1, Xattr{"user.v", std::string(7000, 'v')});  // pieces at 0, 3072, 6144
  REQUIRE(ps.size() == 3);
  auto refused = [](XattrAssembler& a, const wire::XattrPiece& p, const char* why) {
    auto r = a.add(p);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == EPROTO);
    CHECK_MESSAGE(r.error().context.find(why) != std::string::npos, r.error().context);
  };
  {
    XattrAssembler a(kUserOnly);
    refused(a, ps[1], "not 0");  // a value starting midway
  }
  {
    XattrAssembler a(kUserOnly);
    REQUIRE(a.add(ps[0]).ok());
    refused(a, ps[2], "while 'user.v' has 3072 of 7000");  // a piece skipped
  }
  {
    XattrAssembler a(kUserOnly);
    REQUIRE(a.add(ps[0]).ok());
    refused(a, ps[0], "while");  // the same piece again
  }
  {
    XattrAssembler a(kUserOnly);
    REQUIRE(a.add(ps[0]).ok());
    refused(a, piece("user.w", 7000, 3072, ps[1].data), "while");  // another name midway
  }
  {
    XattrAssembler a(kUserOnly);
    REQUIRE(a.add(ps[0]).ok());
    refused(a, piece("user.v", 8000, 3072, ps[1].data), "while");  // another total midway
  }
  {
    XattrAssembler a(kUserOnly);
    REQUIRE(feed(a, ps).ok());
    refused(a, ps[0], "sent twice");  // a repeat of a complete name
  }
  {
    XattrAssembler a(kUserOnly);
    refused(a, piece("trusted.t", 1, 0, "x"), "not asked for");       // not in the scope
    refused(a, piece("system.other", 1, 0, "x"), "not asked for");    // never carried
  }
  {
    XattrAssembler a(kUserOnly);  // the per-entry count
    for (size_t i = 0; i < kMaxXattrsPerEntry; ++i) REQUIRE(a.add(piece("user.n" + std::to_string(i), 0, 0, "")).ok());
    refused(a, piece("user.more", 0, 0, ""), "more than 256");
  }
  {
    XattrAssembler a(kUserOnly);  // the per-entry bytes (16 values of 64 KiB, the 17th refused before its bytes)
    for (int i = 0; i < 15; ++i) REQUIRE(feed(a, split_xattr(1, Xattr{"user.b" + std::to_string(i), std::string(kMaxXattrValue, 'b')})).ok());
    refused(a, piece("user.last", kMaxXattrValue, 0, "b"), "bytes of xattrs on one entry");
  }
}

TEST_CASE("xattrs of a descriptor that cannot be read: an error naming the call, no list") {
  // (A failed size query must stop here: read as a size, -1 would ask for
  // a string of SIZE_MAX bytes.)
  const auto got = read_xattrs(-1, kUserOnly);
  REQUIRE_FALSE(got.ok());
  CHECK(got.error().code == EBADF);
  CHECK(got.error().context.find("listxattr") != std::string::npos);
  const Status rm = remove_other_xattrs(-1, {}, kUserOnly);
  REQUIRE_FALSE(rm.ok());
  CHECK(rm.error().code == EBADF);
  CHECK(rm.error().context.find("listxattr") != std::string::npos);
}
