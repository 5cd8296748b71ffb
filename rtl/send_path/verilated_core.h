// SPDX-License-Identifier: Apache-2.0
// send_path_core over a Verilated (--cc) model class V with the CONTRACT.md ports.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include <verilated.h>
#include <verilated_fst_c.h>

#include "rtl/send_path/send_path_core.h"

namespace rnic::rtl {

// Verilator 5 (checked with 5.006) detects a rising clk_i by comparing it with its value at
// the previous eval(), kept in the root module as __Vtrigrprev__TOP__clk_i. Where that member
// exists, rise() sets it low instead of spending a whole eval() on the falling clock, and
// settle() evaluates only when an input the handshake outputs may depend on has changed.
template <class V, class = void>
struct has_clk_prev : std::false_type {};
template <class V>
struct has_clk_prev<V, std::void_t<decltype(std::declval<V&>().rootp->__Vtrigrprev__TOP__clk_i)>>
    : std::true_type {};

template <class V>
class verilated_core final : public send_path_core {
public:
    explicit verilated_core(bool trace) {
        if (trace) {
            Verilated::traceEverOn(true);  // before the model is built
        }
        m_top = std::make_unique<V>("send_path");
    }
    ~verilated_core() override { trace_close(); }

    void set_clk(bool v) override {
        m_top->clk_i = v;
        m_dirty = true;
    }
    void set_rst_n(bool v) override {
        m_top->rst_ni = v;
        m_dirty = true;
    }
    void set_desc(bool valid, const hw::tx_descriptor& d) override {
        V& t = *m_top;
        t.desc_valid_i = valid;
        t.desc_kind_i = static_cast<uint8_t>(d.kind);
        t.desc_with_imm_i = d.with_imm;
        t.desc_with_inv_i = d.with_inv;
        t.desc_solicited_i = d.solicited;
        t.desc_ack_req_i = d.ack_req;
        t.desc_src_qpn_i = d.src_qpn & 0xFFFFFF;
        t.desc_dest_qpn_i = d.dest_qpn & 0xFFFFFF;
        t.desc_psn_i = d.psn & 0xFFFFFF;
        t.desc_pmtu_i = d.pmtu & 0x1FFF;
        t.desc_length_i = d.length;
        t.desc_remote_va_i = d.remote_va;
        t.desc_rkey_i = d.rkey;
        t.desc_imm_or_key_i = d.imm_or_key;
        t.desc_syndrome_i = d.syndrome;
        t.desc_msn_i = d.msn & 0xFFFFFF;
        t.desc_src_mac_i = mac48(d.src_mac.data());
        t.desc_dst_mac_i = mac48(d.dst_mac.data());
        t.desc_src_ip_i = d.src_ip;
        t.desc_dst_ip_i = d.dst_ip;
    }
    void set_desc_valid(bool valid) override { m_top->desc_valid_i = valid; }
    void set_payload(bool valid, const uint8_t* data, uint64_t keep, bool last) override {
        m_top->pl_valid_i = valid;
        std::memcpy(m_top->pl_data_i.data(), data, 64);  // little-endian words: lane 0 = [7:0]
        m_top->pl_keep_i = keep;
        m_top->pl_last_i = last;
    }
    void set_payload_valid(bool valid) override { m_top->pl_valid_i = valid; }
    void set_fr_ready(bool ready) override { m_top->fr_ready_i = ready; }
    bool desc_ready() const override { return m_top->desc_ready_o; }
    bool pl_ready() const override { return m_top->pl_ready_o; }
    bool fr_valid() const override { return m_top->fr_valid_o; }
    void fr_beat(uint8_t* data, uint64_t& keep, bool& last) const override {
        std::memcpy(data, m_top->fr_data_o.data(), 64);
        keep = m_top->fr_keep_o;
        last = m_top->fr_last_o;
    }
    void eval() override {
        m_top->eval();
        evaluated();
    }
    void settle(bool desc_valid, bool pl_valid, bool fr_ready, outputs& out) override {
        V& t = *m_top;
        t.desc_valid_i = desc_valid;
        t.pl_valid_i = pl_valid;
        t.fr_ready_i = fr_ready;
        if (fast_edges()) {
            // The handshake outputs depend on the state and on the handshake inputs only, not
            // on data (CONTRACT.md): with those unchanged since the last eval(), they stand.
            if (m_dirty || desc_valid != m_ev_desc_valid || pl_valid != m_ev_pl_valid ||
                fr_ready != m_ev_fr_ready) {
                t.eval();  // clk_i unchanged: a combinational settle, no edge
                evaluated();
            }
        } else {
            t.clk_i = 0;
            t.eval();
            evaluated();
        }
        out.desc_ready = t.desc_ready_o;
        out.pl_ready = t.pl_ready_o;
        out.fr_valid = t.fr_valid_o;
    }
    void rise(outputs& out) override {
        V& t = *m_top;
        t.clk_i = 1;
        if constexpr (has_clk_prev<V>::value) {
            if (fast_edges()) {
                t.rootp->__Vtrigrprev__TOP__clk_i = 0;  // a rising edge without a falling eval
            }
        }
        t.eval();  // the input changes settle first, then the edge
        evaluated();
        out.desc_ready = t.desc_ready_o;
        out.pl_ready = t.pl_ready_o;
        out.fr_valid = t.fr_valid_o;
    }
    uint8_t* payload_lanes() override {
        return reinterpret_cast<uint8_t*>(m_top->pl_data_i.data());  // little-endian words
    }
    void set_payload_meta(uint64_t keep, bool last) override {
        m_top->pl_keep_i = keep;
        m_top->pl_last_i = last;
    }
    void trace_open(const std::string& path) override {
        m_trace = std::make_unique<VerilatedFstC>();
        m_top->trace(m_trace.get(), 99);
        m_trace->open(path.c_str());
    }
    void trace_dump(uint64_t time_ps) override {
        if (m_trace) {
            m_trace->dump(time_ps);
        }
    }
    void trace_close() override {
        if (m_trace) {
            m_trace->close();
            m_trace.reset();
        }
    }
    void final() override { m_top->final(); }

private:
    static uint64_t mac48(const uint8_t* m) {
        uint64_t v = 0;
        for (int i = 0; i < 6; ++i) {
            v = (v << 8) | m[i];
        }
        return v;
    }
    // Without a waveform (which must show the clock fall) and with Verilator's trigger state
    // reachable, edges take one eval().
    bool fast_edges() const { return has_clk_prev<V>::value && !m_trace; }
    void evaluated() {
        m_dirty = false;
        m_ev_desc_valid = m_top->desc_valid_i;
        m_ev_pl_valid = m_top->pl_valid_i;
        m_ev_fr_ready = m_top->fr_ready_i;
    }
    std::unique_ptr<V> m_top;
    std::unique_ptr<VerilatedFstC> m_trace;
    bool m_dirty = true;  // clock or reset changed since the last eval()
    bool m_ev_desc_valid = false, m_ev_pl_valid = false, m_ev_fr_ready = false;  // at it
};

}  // namespace rnic::rtl
