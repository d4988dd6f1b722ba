/// One table of exit codes for rcp, the same for push and pull. Where rsync
/// has a code with the same meaning rcp uses rsync's number, so scripts and
/// monitoring written for rsync read rcp's status unchanged; the codes rsync
/// does not have start at 40.
///
///  code | name                | meaning (when rcp uses it)
///  -----+---------------------+------------------------------------------------------------------
///    0  | kOk                 | everything asked for was copied (or listed)
///    1  | kUsage              | syntax or usage error: bad option, bad address, bad config file
///    2  | kProtocol           | protocol incompatibility: hello version, checksum or feature the
///       |                     | peer does not offer
///    3  | kFileSelection      | errors selecting input/output files or dirs: a missing local source,
///       |                     | a destination that is not a directory, a directory without -r, a
///       |                     | path or module the daemon does not have or refuses
///    4  | kUnsupported        | requested action not supported by this side or the daemon
///    5  | kStartProtocol      | error starting the client-server protocol: the daemon refused the
///       |                     | session (full, too many connections), --transport rdma without a
///       |                     | usable RDMA device
///   10  | kSocketIo           | error in socket I/O: cannot resolve or reach the host, connection
///       |                     | refused or reset
///   11  | kFileIo             | error in file I/O that ended the copy (disk full, read-only, EIO)
///   12  | kStream             | error in the protocol data stream: malformed or unexpected message,
///       |                     | digest mismatch that ended the session
///   20  | kSignal             | interrupted by SIGINT/SIGTERM (Ctrl-C)
///   22  | kNoMemory           | could not allocate or register (pin) buffer memory
///   23  | kPartial            | partial transfer due to error: some files failed, the others were
///       |                     | copied (each failure is printed with its path)
///   24  | kVanished           | partial transfer due to vanished source files: only failures were
///       |                     | sources that disappeared between listing and reading
///   30  | kTimeout            | timeout in data send/receive (peer silent past the idle timeout)
///   35  | kConnectTimeout     | timeout waiting for the daemon's connection (connect/handshake)
///   40  | kAuth               | rcp only: authentication failed (the daemon refused the user's
///       |                     | credentials or the password file could not be used)
///   41  | kEncryption         | rcp only: encryption required but not in place: the module or
///       |                     | daemon requires it and rcp ran without --encrypt (or over RDMA), or
///       |                     | --encrypt and the daemon does not offer it
///
/// rsync's 6, 13, 14, 21, 25 name situations rcp does not have and are not
/// used. When several things failed, the first fatal error decides; file
/// failures alone give 23, or 24 when every failure was a vanished source.
#pragma once

#include "util/result.h"

namespace rcp::cli {

namespace exit_code {
inline constexpr int kOk = 0;
inline constexpr int kUsage = 1;
inline constexpr int kProtocol = 2;
inline constexpr int kFileSelection = 3;
inline constexpr int kUnsupported = 4;
inline constexpr int kStartProtocol = 5;
inline constexpr int kSocketIo = 10;
inline constexpr int kFileIo = 11;
inline constexpr int kStream = 12;
inline constexpr int kSignal = 20;
inline constexpr int kNoMemory = 22;
inline constexpr int kPartial = 23;
inline constexpr int kVanished = 24;
inline constexpr int kTimeout = 30;
inline constexpr int kConnectTimeout = 35;
inline constexpr int kAuth = 40;
inline constexpr int kEncryption = 41;
}  // namespace exit_code

/// Where the error happened; the same errno means different things in each.
enum class Phase {
  usage,    ///< parsing the command line or the config file
  local,    ///< checking local sources/destination before connecting
  connect,  ///< resolving, connecting, the transport handshake
  session,  ///< after connecting: opening the module/path, the transfer as a whole
  file,     ///< one file inside a running session; the others go on
};

/// Maps an Error to its exit code. Conventions the rest of lib/ follows so the
/// mapping holds: ECANCELED/EINTR = interrupted; EKEYREJECTED (or ENOKEY,
/// EKEYEXPIRED, EKEYREVOKED) = authentication refused; ENOPROTOOPT =
/// encryption required by one side and not in place; EPROTONOSUPPORT = a
/// version or feature the peer does not speak; EPROTO/EBADMSG = a malformed
/// stream; EUSERS/EBUSY from the daemon = no room for this session.
/// In the file phase a vanished source (ENOENT/ESTALE) gives 24, anything
/// else 23; use worst() to combine per-file outcomes with a fatal one.
int exit_code_for(const Error& e, Phase phase);

/// The code a finished transfer returns from its counts alone (0, 23 or 24).
int transfer_exit_code(unsigned files_failed, unsigned files_vanished);

/// Combines two outcomes into the one to return: any fatal code beats 23,
/// 23 beats 24, anything beats 0; between two fatal codes the first wins.
int worst(int first, int second);

/// A one-line description of a code for the man page and `--help` ("partial
/// transfer due to error"); "" for codes not in the table.
const char* exit_code_meaning(int code);

}  // namespace rcp::cli
