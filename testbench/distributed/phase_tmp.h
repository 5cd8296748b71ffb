#pragma once
#include <cstdio>
#include <cstdlib>
#include <time.h>
#include <unistd.h>
inline void phase_tmp(const char* what) {
    static const bool on = std::getenv("RNICSIM_PHASES") != nullptr;
    if (!on) return;
    timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    std::fprintf(stderr, "PHASE %ld.%06ld pid %d %s\n", (long)t.tv_sec, t.tv_nsec / 1000, (int)getpid(), what);
}
