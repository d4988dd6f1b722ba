#include "cli/exit_codes.h"

#include <cerrno>

namespace rcp::cli {

using namespace exit_code;

namespace {

bool is_interrupt(int c) { return c == ECANCELED || c == EINTR; }
bool is_auth(int c) { return c == EKEYREJECTED || c == ENOKEY || c == EKEYEXPIRED || c == EKEYREVOKED; }
bool is_stream(int c) { return c == EPROTO || c == EBADMSG || c == EMSGSIZE || c == EILSEQ; }
bool is_unsupported(int c) { return c == ENOTSUP || c == EOPNOTSUPP; }
bool is_no_room(int c) { return c == EUSERS || c == EBUSY || c == EAGAIN; }

bool is_socket(int c) {
  switch (c) {
    case ECONNREFUSED: case ECONNRESET: case ECONNABORTED: case EPIPE: case ENOTCONN:
    case EHOSTUNREACH: case EHOSTDOWN: case ENETUNREACH: case ENETDOWN: case ENETRESET:
    case EADDRNOTAVAIL: case EADDRINUSE: case EAFNOSUPPORT: case ESHUTDOWN:
      return true;
    default:
      return false;
  }
}

bool is_selection(int c) {
  switch (c) {
    case ENOENT: case ENOTDIR: case EISDIR: case EEXIST: case ENAMETOOLONG: case ELOOP:
    case EACCES: case EPERM: case EXDEV: case ENOTEMPTY: case ESTALE:
      return true;
    default:
      return false;
  }
}

bool is_file_io(int c) {
  switch (c) {
    case EIO: case ENOSPC: case EDQUOT: case EROFS: case EFBIG: case ETXTBSY: case EBADF: case EMFILE:
    case ENFILE:
      return true;
    default:
      return false;
  }
}

}  // namespace

int exit_code_for(const Error& e, Phase phase) {
  const int c = e.code;
  if (phase == Phase::usage) return kUsage;
  if (is_interrupt(c)) return kSignal;
  if (is_auth(c)) return kAuth;
  if (c == ENOPROTOOPT) return kEncryption;
  if (c == ENOMEM) return kNoMemory;
  if (phase == Phase::file) return (c == ENOENT || c == ESTALE) ? kVanished : kPartial;
  if (c == EPROTONOSUPPORT) return kProtocol;
  if (is_unsupported(c)) return kUnsupported;
  if (c == ETIMEDOUT) return phase == Phase::connect ? kConnectTimeout : kTimeout;
  switch (phase) {
    case Phase::local:
      if (is_file_io(c)) return kFileIo;
      return kFileSelection;  // whatever stops us from reading a source or writing the destination
    case Phase::connect:
      if (is_stream(c)) return kProtocol;  // a hello we cannot read: not our protocol (version)
      if (c == ENODEV || is_no_room(c)) return kStartProtocol;
      if (c == EINVAL) return kUsage;      // e.g. an address the resolver cannot take
      return kSocketIo;                    // resolve, refused, unreachable, reset, ...
    case Phase::session:
      if (is_selection(c)) return kFileSelection;
      if (is_stream(c)) return kStream;
      if (is_socket(c)) return kSocketIo;
      if (is_file_io(c)) return kFileIo;
      if (is_no_room(c) || c == ENODEV) return kStartProtocol;
      return kStream;
    default:
      return kStream;
  }
}

int transfer_exit_code(unsigned files_failed, unsigned files_vanished) {
  if (files_failed > files_vanished) return kPartial;
  if (files_vanished > 0) return kVanished;
  return kOk;
}

int worst(int first, int second) {
  auto rank = [](int c) { return c == kOk ? 0 : c == kVanished ? 1 : c == kPartial ? 2 : 3; };
  return rank(second) > rank(first) ? second : first;
}

const char* exit_code_meaning(int code) {
  switch (code) {
    case kOk: return "success";
    case kUsage: return "syntax or usage error";
    case kProtocol: return "protocol incompatibility";
    case kFileSelection: return "errors selecting input/output files, dirs";
    case kUnsupported: return "requested action not supported";
    case kStartProtocol: return "error starting client-server protocol";
    case kSocketIo: return "error in socket I/O";
    case kFileIo: return "error in file I/O";
    case kStream: return "error in rcp protocol data stream";
    case kSignal: return "received SIGINT or SIGTERM";
    case kNoMemory: return "error allocating or registering buffer memory";
    case kPartial: return "partial transfer due to error";
    case kVanished: return "partial transfer due to vanished source files";
    case kTimeout: return "timeout in data send/receive";
    case kConnectTimeout: return "timeout waiting for daemon connection";
    case kAuth: return "authentication failed";
    case kEncryption: return "encryption required but not in place";
    default: return "";
  }
}

}  // namespace rcp::cli
