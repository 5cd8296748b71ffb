// SPDX-License-Identifier: Apache-2.0
// libsystemc.so refers to sc_main and brings a main() that calls it; a fuzzer's entry point is
// libFuzzer's main() instead, so this sc_main only satisfies the link and is never called.
extern "C" int sc_main(int, char**) {  // declared extern "C" by SystemC (sc_externs.h)
    return 0;
}
