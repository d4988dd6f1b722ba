#include "util/notify.h"

#include <systemd/sd-daemon.h>

#include <string>

namespace rcp {

void notify_ready() { ::sd_notify(0, "READY=1"); }

void notify_stopping() { ::sd_notify(0, "STOPPING=1"); }

void notify_status(std::string_view status) {
  std::string msg = "STATUS=";
  for (char c : status) msg += (c == '\n' ? ' ' : c);
  ::sd_notify(0, msg.c_str());
}

}  // namespace rcp
