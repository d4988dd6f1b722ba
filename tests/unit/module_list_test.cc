// Proves the `rcp HOST:` listing keeps one module per line and the name in
// the first tab-separated field whatever the daemon sends, since shell
// completion cuts names out of it.
#include <doctest/doctest.h>

#include "cli/module_list.h"

using namespace rcp::cli;

TEST_CASE("NAME<TAB>COMMENT per line, tab even without a comment") {
  CHECK(format_module_list({}) == "");
  CHECK(format_module_list({{"data", "the data"}, {"backup", ""}}) == "data\tthe data\nbackup\t\n");
}

TEST_CASE("a name or comment cannot add a line or a field") {
  const std::string out = format_module_list({{"evil\nname", "a\tb\nc\x1b[2J"}, {"ok", "fine"}});
  CHECK(out == "evil name\ta b c [2J\nok\tfine\n");
  auto back = parse_module_list(out);
  REQUIRE(back.size() == 2);
  CHECK(back[0].name == "evil name");
  CHECK(back[1].name == "ok");
}

TEST_CASE("parse reads what format writes, and tolerates lines without a tab") {
  std::vector<ModuleEntry> mods = {{"data", "the data"}, {"b", ""}, {"r\xC3\xA9sum\xC3\xA9", "utf-8 ok"}};
  auto back = parse_module_list(format_module_list(mods));
  REQUIRE(back.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(back[i].name == mods[i].name);
    CHECK(back[i].comment == mods[i].comment);
  }
  auto loose = parse_module_list("plain\n\nx\ty\tz");
  REQUIRE(loose.size() == 2);
  CHECK(loose[0].name == "plain");
  CHECK(loose[0].comment == "");
  CHECK(loose[1].comment == "y\tz");
}
