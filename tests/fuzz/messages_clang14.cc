// lib/wire/messages.cc for the fuzz build. Debian 12's clang 14 lacks class template argument
// deduction for aggregates (clang 17 has it), which messages.cc's `overloaded{...}` relies on;
// declaring the template and a deduction guide first, in the same (unnamed) namespace of this
// translation unit, lets clang 14 compile the file unchanged. Drop this file once messages.cc
// carries the guide itself or the fuzz build uses clang >= 17.
namespace rcp::wire {
namespace {
template <class... Ts>
struct overloaded;
template <class... Ts>
overloaded(Ts...) -> overloaded<Ts...>;
}  // namespace
}  // namespace rcp::wire

#include "wire/messages.cc"
