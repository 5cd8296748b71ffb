// SPDX-License-Identifier: Apache-2.0
// libsystemc.so refers to sc_main and brings a main() that calls it; a fuzzer's entry point is
// libFuzzer's main() instead, so this sc_main only satisfies the link and is never called.
int sc_main(int, char**) {
    return 0;
}
