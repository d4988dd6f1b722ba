#include "client.h"

#include <infiniband/verbs.h>

#include <cctype>
#include <cstring>

namespace rcp::client {

std::atomic<bool> g_cancel{false};
cli::Report g_report;
cli::ProgressReporter* g_progress = nullptr;

/// An Error in the user's words: the context already names the object; the
/// errno's text is the reason (lib/ leaves code 0 when the context says it all).
/// The errno's text is left out when the context already says it ("'d' is a
/// directory (use -r)" needs no ": Is a directory").
std::string words(const Error& e) {
  if (e.code == 0) return e.context;
  std::string reason = std::strerror(e.code), lc = e.context;
  for (auto& c : reason) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (auto& c : lc) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lc.find(reason) != std::string::npos ? e.context : e.message();
}

/// The code for a daemon's refusal of an OPEN: one without an errno (a
/// wildcard in the wrong place, a path it cannot use) is about the files
/// the user named, like ENOENT, so exit 3 (not 12, a broken stream).
int open_code(const Error& e) {
  if (e.code == 0 || e.code == EINVAL) return ec::kFileSelection;
  return cli::exit_code_for(e, cli::Phase::session);
}

/// Fails with the code the table gives this error in this phase.
int fail(const Error& e, cli::Phase phase, const std::string& what, int forced) {
  if (g_cancel || e.code == ECANCELED || e.code == EINTR) {
    say("interrupted");
    return ec::kSignal;
  }
  const int code = forced >= 0 ? forced : cli::exit_code_for(e, phase);
  std::string text = words(e);
  if (code == ec::kStartProtocol && (e.code == EUSERS || e.code == EBUSY))
    text = e.context;  // the daemon's own sentence says it is full
  if (!(what.empty() || text.rfind(what, 0) == 0)) text = what + ": " + text;
  say("{}", text);
  g_report.errors.push_back(text);
  return code;
}

/// "rcp -V": version, transports compiled in, and the RDMA devices found.
void print_version() {
  std::printf("rcp %s\n", RCP_VERSION);
  std::printf("transports: rdma (rdma_cm + verbs), tcp\n");
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  std::string devs;
  for (int i = 0; list && i < n; ++i) devs += (devs.empty() ? "" : ", ") + std::string(ibv_get_device_name(list[i]));
  if (list) ibv_free_device_list(list);
  std::printf("rdma devices: %s\n", devs.empty() ? "none (copies use TCP)" : devs.c_str());
}

}  // namespace rcp::client
