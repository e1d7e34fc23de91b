// mimalloc's run-time options, for the code that tunes the executables' malloc where it is mimalloc (CMakeLists.txt,
// TENSORPATH_ALLOCATOR): the emulator keeps freed memory (emulator/host_memory.cpp), large simulations ask for large
// pages (sim/large_pages.cpp). Looked up at run time: sanitizer builds and builds without mimalloc run on glibc.
#pragma once

namespace tp {

using MimallocOptionSet = void (*)(int option, long value);

/// mimalloc's mi_option_set where the process runs on mimalloc 2.0 (Debian 12 has 2.0.9), whose option numbers the
/// callers use; null under another malloc or another mimalloc (2.1 renumbered the options).
MimallocOptionSet mimalloc20_option_set();

} // namespace tp
