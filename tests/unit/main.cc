// doctest's main for the unit tests of lib/ (pure logic; no devices, no network).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
