// The Catch2 main, compiled once (at -O0) and linked into every test binary.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
