// One run of rcp as the options ask: a module listing, a push, or a pull
// (in batches when several remote sources name one daemon); connects,
// authenticates, runs the sessions and fills the report. Returns the exit code.
#pragma once

#include <CLI/CLI.hpp>

#include "client.h"

namespace rcp::client {

int run(const Options& o, const CLI::App& app);

}  // namespace rcp::client
