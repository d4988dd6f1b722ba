/// `overloaded{...}`: a set of lambdas as one callable, for std::visit over a
/// variant. Used without a generic (auto) member, it makes the compiler list
/// every alternative: a message added to wire::Message without a handler in
/// the source, the sink or the codec is a build error, never a silent
/// fall-through.
#pragma once

namespace rcp {

template <class... Ts>
struct overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
overloaded(Ts...) -> overloaded<Ts...>;

}  // namespace rcp
