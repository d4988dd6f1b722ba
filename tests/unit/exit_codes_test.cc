// Proves each failure issue 11 lists lands on one documented exit code, the
// same for push and pull, with rsync's numbers where the meaning is rsync's.
#include <doctest/doctest.h>

#include <cerrno>
#include <set>

#include "cli/exit_codes.h"

using namespace rcp;
using namespace rcp::cli;
using namespace rcp::cli::exit_code;

namespace {
int code(int err, Phase p) { return exit_code_for(make_error(err, "x"), p); }
}  // namespace

TEST_CASE("rsync's numbers where the meaning is the same") {
  CHECK(kOk == 0);
  CHECK(kUsage == 1);
  CHECK(kProtocol == 2);
  CHECK(kFileSelection == 3);
  CHECK(kUnsupported == 4);
  CHECK(kStartProtocol == 5);
  CHECK(kSocketIo == 10);
  CHECK(kFileIo == 11);
  CHECK(kStream == 12);
  CHECK(kSignal == 20);
  CHECK(kNoMemory == 22);
  CHECK(kPartial == 23);
  CHECK(kVanished == 24);
  CHECK(kTimeout == 30);
  CHECK(kConnectTimeout == 35);
  // rcp's own codes do not collide with any rsync code.
  CHECK(kAuth == 40);
  CHECK(kEncryption == 41);
  for (int c : {kOk, kUsage, kProtocol, kFileSelection, kUnsupported, kStartProtocol, kSocketIo, kFileIo, kStream,
                kSignal, kNoMemory, kPartial, kVanished, kTimeout, kConnectTimeout, kAuth, kEncryption})
    CHECK_MESSAGE(std::string(exit_code_meaning(c)) != "", c);
  CHECK(std::string(exit_code_meaning(99)) == "");
}

TEST_CASE("usage errors are 1 whatever the errno") {
  for (int e : {0, EINVAL, ENOENT, ERANGE}) CHECK(code(e, Phase::usage) == kUsage);
}

TEST_CASE("the cases issue 11 saw, now consistent for push and pull") {
  // 'nodir': Not a directory on push was 3 "connection failure": now a selection error.
  CHECK(code(ENOTDIR, Phase::session) == kFileSelection);
  // A directory without -r: the same code whichever side finds it.
  CHECK(code(EISDIR, Phase::local) == kFileSelection);
  CHECK(code(EISDIR, Phase::session) == kFileSelection);
  // A refused path (outside the export): same on push and pull.
  CHECK(code(EXDEV, Phase::session) == kFileSelection);
  CHECK(code(ELOOP, Phase::session) == kFileSelection);
  CHECK(code(EPERM, Phase::session) == kFileSelection);
  // Unknown module (rcpd sends ENOENT) and a missing local source before connecting.
  CHECK(code(ENOENT, Phase::session) == kFileSelection);
  CHECK(code(ENOENT, Phase::local) == kFileSelection);
  // A full daemon, once it says so, is not a socket error.
  CHECK(code(EUSERS, Phase::connect) == kStartProtocol);
  CHECK(code(EBUSY, Phase::session) == kStartProtocol);
  // Resolve and connect failures.
  CHECK(code(EHOSTUNREACH, Phase::connect) == kSocketIo);
  CHECK(code(ECONNREFUSED, Phase::connect) == kSocketIo);
  CHECK(code(ECONNRESET, Phase::session) == kSocketIo);
  // Ctrl-C, whatever the phase.
  for (Phase p : {Phase::local, Phase::connect, Phase::session, Phase::file}) {
    CHECK(code(EINTR, p) == kSignal);
    CHECK(code(ECANCELED, p) == kSignal);
  }
}

TEST_CASE("timeouts: connecting is 35, a silent peer later is 30") {
  CHECK(code(ETIMEDOUT, Phase::connect) == kConnectTimeout);
  CHECK(code(ETIMEDOUT, Phase::session) == kTimeout);
}

TEST_CASE("protocol, stream, memory, auth, unsupported") {
  CHECK(code(EPROTONOSUPPORT, Phase::connect) == kProtocol);
  CHECK(code(EPROTONOSUPPORT, Phase::session) == kProtocol);
  CHECK(code(EPROTO, Phase::connect) == kProtocol);  // a hello we cannot read
  CHECK(code(EPROTO, Phase::session) == kStream);
  CHECK(code(EBADMSG, Phase::session) == kStream);
  CHECK(code(EMSGSIZE, Phase::session) == kStream);
  CHECK(code(ENOMEM, Phase::connect) == kNoMemory);
  CHECK(code(ENOMEM, Phase::session) == kNoMemory);
  CHECK(code(EKEYREJECTED, Phase::connect) == kAuth);
  CHECK(code(EKEYREJECTED, Phase::session) == kAuth);
  CHECK(code(ENOKEY, Phase::local) == kAuth);
  CHECK(code(ENOTSUP, Phase::session) == kUnsupported);
  CHECK(code(ENODEV, Phase::connect) == kStartProtocol);  // --transport rdma, no device
  CHECK(code(ENOSPC, Phase::session) == kFileIo);
  CHECK(code(EIO, Phase::local) == kFileIo);
  CHECK(code(0, Phase::session) == kStream);
  CHECK(code(0, Phase::connect) == kSocketIo);
}

TEST_CASE("per-file failures: 23, or 24 when a source vanished") {
  CHECK(code(ENOENT, Phase::file) == kVanished);
  CHECK(code(ESTALE, Phase::file) == kVanished);
  CHECK(code(EACCES, Phase::file) == kPartial);
  CHECK(code(ENOSPC, Phase::file) == kPartial);
  CHECK(code(EPROTO, Phase::file) == kPartial);
  CHECK(transfer_exit_code(0, 0) == kOk);
  CHECK(transfer_exit_code(2, 2) == kVanished);
  CHECK(transfer_exit_code(3, 2) == kPartial);
  CHECK(transfer_exit_code(1, 0) == kPartial);
}

TEST_CASE("worst: fatal beats 23 beats 24 beats 0; the first fatal code wins") {
  CHECK(worst(kOk, kOk) == kOk);
  CHECK(worst(kOk, kVanished) == kVanished);
  CHECK(worst(kVanished, kPartial) == kPartial);
  CHECK(worst(kPartial, kVanished) == kPartial);
  CHECK(worst(kPartial, kSocketIo) == kSocketIo);
  CHECK(worst(kSocketIo, kPartial) == kSocketIo);
  CHECK(worst(kSocketIo, kTimeout) == kSocketIo);
  CHECK(worst(kOk, kSignal) == kSignal);
}

TEST_CASE("encryption required but not in place is 41 wherever it is found") {
  CHECK(code(ENOPROTOOPT, Phase::connect) == kEncryption);   // --encrypt, the daemon offers no TLS
  CHECK(code(ENOPROTOOPT, Phase::session) == kEncryption);   // the module requires it
  CHECK(code(ENOPROTOOPT, Phase::usage) == kUsage);
}
