// Large pages for large simulations. A simulation whose estimated peak memory reaches LARGE_PAGES_FROM_BYTES walks
// gigabytes of executors, tensors and ring state with little locality, and with 4 KiB pages most of its memory
// accesses miss the TLB (the page walks cost more again on a virtual machine). Such a job asks the allocator for 2 MiB
// pages: mimalloc's large OS pages, which mimalloc 2.0 takes from the kernel's reserved huge pages where there are some
// (/proc/sys/vm/nr_hugepages) and otherwise from transparent huge pages (/sys/kernel/mm/transparent_hugepage/enabled
// "always" or "madvise"). Where the kernel offers neither, nothing is asked: mimalloc would keep such memory committed
// for no gain. Measured: ResNet-50 Baidu analytical at 4,096 GPUs (2.2 GB, estimated 3.9 GB), in alternating pairs,
// 52.1 / 50.7 -> 46.6 / 47.1 s of user CPU, system 1.2 -> 2.9 s, 0.15 GB more memory, the same result
// (docs/performance.md). Smaller jobs keep 4 KiB pages (no gain measured at 1,024 GPUs, 0.6 GB, estimated 1.0 GB).
// Where the executable runs on glibc's malloc (sanitizer builds, a build without mimalloc) or another mimalloc than
// 2.0's, nothing changes. Results never depend on it. Tests: tests/sim/large_pages_test.cpp.
#pragma once

#include "core/common/result.hpp"

namespace tp::sim {

inline constexpr double LARGE_PAGES_FROM_BYTES = 2.0 * 1024 * 1024 * 1024;

/// From now on in this process, allocate with large pages if `estimated_peak_bytes` reaches LARGE_PAGES_FROM_BYTES, the
/// allocator is mimalloc 2.0, the kernel offers huge pages (reserved or transparent) and TENSORPATH_LARGE_PAGES is not
/// "0" (else nothing). True if large pages were asked for;
/// an Error for a TENSORPATH_LARGE_PAGES other than unset, empty, "0" or "1" (whatever the job's size).
Result<bool> use_large_pages_for(double estimated_peak_bytes);

} // namespace tp::sim
