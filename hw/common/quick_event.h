// SPDX-License-Identifier: Apache-2.0
#pragma once
// An sc_event member that is cheap to construct at elaboration. SystemC 2.3.4 names every event
// made before the simulation starts: an unnamed one gets sc_gen_unique_name("event"), which
// formats "event_<n>" through a fresh std::ostringstream (a locale set up per call, ~4,400
// instructions), then the hierarchical name is checked against and inserted into the object
// manager's tables (~3,600 more). A 16-host fabric constructs ~1,600 such events, 12.9 M
// instructions of a 900 M run. quick_event gives the kernel a ready unique leaf name instead
// ("qe_<n>", numbered across the process, so it cannot clash with another quick_event or with a
// generated "<base>_<n>" name), which skips sc_gen_unique_name; the event is otherwise the same
// sc_event, registered in the same place of the hierarchy. Made while the simulation runs, it
// is unnamed as before (the kernel keeps no name then). No output of the simulator shows an
// event's name.
#include <charconv>
#include <cstdint>

#include <systemc>

namespace rnic::hw {

class quick_event : public sc_core::sc_event {
public:
    quick_event()
        : sc_core::sc_event(next_name().data()) {}

private:
    struct name_buffer {
        char text[24];
        const char* data() const { return text[0] != '\0' ? text : nullptr; }
    };

    static name_buffer next_name() {
        name_buffer b{};
        if (sc_core::sc_is_running()) {
            return b;  // no name: the kernel names no running event
        }
        static std::uint64_t count = 0;
        b.text[0] = 'q';
        b.text[1] = 'e';
        b.text[2] = '_';
        *std::to_chars(b.text + 3, b.text + sizeof b.text - 1, count++).ptr = '\0';
        return b;
    }
};

}  // namespace rnic::hw
