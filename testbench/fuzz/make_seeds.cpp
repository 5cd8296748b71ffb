// SPDX-License-Identifier: Apache-2.0
// Writes the fuzzers' seed corpora: real frames from roce::build_frame (alone, and as frame
// sequences aimed at recv_path_fuzz's bench), well-formed WQEs of every opcode, and the
// scenario files in configs/. Also creates each fuzzer's working corpus and artifact folders.
// Usage: rnic_fuzz_seeds OUT_DIR SOURCE_DIR   (OUT_DIR/{seeds,corpus,artifacts}/<target>/)
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "hw/hsi/hsi.h"
#include "hw/roce/roce.h"
#include "testbench/fuzz/fuzz_common.h"

namespace {
namespace fs = std::filesystem;
using namespace rnic;
using namespace rnic::fuzz::bench;
using bytes = std::vector<uint8_t>;

const char* const TARGETS[] = {"roce_frame", "recv_path", "wqe_decode", "scenario_config",
                               "driver_cqe"};

void write_file(const fs::path& p, const bytes& b) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    if (!out) {
        std::fprintf(stderr, "rnic_fuzz_seeds: cannot write %s\n", p.c_str());
        std::exit(1);
    }
}

// A frame to the bench (fuzz_common.h), with the extension headers set for `op`.
bytes frame(uint8_t op, uint32_t qp, uint32_t psn, size_t len, uint32_t rkey = MR_RW,
            uint64_t va = MR_RW_VA, uint32_t dma_length = 0, uint8_t syndrome = 0x1F) {
    roce::frame_header h;
    h.dst_mac.b = {0x02, 0, 0, 0, 0, 0x01};
    h.src_mac.b = {0x02, 0, 0, 0, 0, 0x02};
    h.src_ip = (10u << 24) | 2;
    h.dst_ip = (10u << 24) | 1;
    h.bth_.opcode = op;
    h.bth_.dest_qp = qp;
    h.bth_.psn = psn;
    h.bth_.ack_req = true;
    h.reth_.va = va;
    h.reth_.rkey = rkey;
    h.reth_.dma_length = dma_length != 0 ? dma_length : static_cast<uint32_t>(len);
    h.aeth_.syndrome = syndrome;
    h.aeth_.msn = 1;
    h.immdt = 0xC0FFEE;
    h.ieth_rkey = MR_FAST;
    bytes payload(len);
    for (size_t i = 0; i < len; ++i) {
        payload[i] = static_cast<uint8_t>(i * 13 + op);
    }
    bytes out;
    roce::build_frame(h, payload.data(), payload.size(), out);
    return out;
}

bytes records(std::initializer_list<bytes> frames, uint8_t kind = fuzz::RECORD_FIXED) {
    bytes out;
    for (const bytes& f : frames) {
        fuzz::append_record(out, kind, f);
    }
    return out;
}

bytes wait_record(uint16_t units) {
    return {fuzz::RECORD_WAIT, static_cast<uint8_t>(units), static_cast<uint8_t>(units >> 8)};
}

bytes cat(std::initializer_list<bytes> parts) {
    bytes out;
    for (const bytes& p : parts) {
        out.insert(out.end(), p.begin(), p.end());
    }
    return out;
}

void roce_seeds(const fs::path& dir) {
    int n = 0;
    for (unsigned op = 0; op < 256; ++op) {
        const roce::opcode_info& oi = roce::info(static_cast<uint8_t>(op));
        if (!oi.valid) {
            continue;
        }
        for (size_t len : {0, 1, 3, 64, 1024}) {
            if (len != 0 && !oi.has_payload) {
                continue;
            }
            write_file(dir / ("frame_" + std::to_string(n++)),
                       frame(static_cast<uint8_t>(op), QP_RQ, 77, len));
        }
    }
    // Ethernet minimum-size padding after the IP packet (accepted and ignored).
    bytes padded = frame(roce::RC_ACK, QP_RQ, 5, 0);
    padded.resize(60, 0);
    write_file(dir / "ack_padded", padded);
}

void recv_seeds(const fs::path& dir) {
    using namespace roce;
    const std::vector<std::pair<std::string, bytes>> seeds = {
        {"write_only", records({frame(RC_WRITE_ONLY, QP_RQ, 0, 64)})},
        {"write_multi",
         records({frame(RC_WRITE_FIRST, QP_RQ, 0, PMTU, MR_RW, MR_RW_VA, 2 * PMTU + 100),
                  frame(RC_WRITE_MIDDLE, QP_RQ, 1, PMTU),
                  frame(RC_WRITE_LAST_IMM, QP_RQ, 2, 100)})},
        {"write_imm", records({frame(RC_WRITE_ONLY_IMM, QP_RQ, 0, 16)})},
        {"write_window", records({frame(RC_WRITE_ONLY, QP_RQ, 0, 256, MW, MW_VA)})},
        {"write_read_only_mr", records({frame(RC_WRITE_ONLY, QP_RQ, 0, 32, MR_RO, MR_RO_VA)})},
        {"send_only", records({frame(RC_SEND_ONLY, QP_RQ, 0, 64)})},
        {"send_multi",
         records({frame(RC_SEND_FIRST, QP_RQ, 0, PMTU), frame(RC_SEND_MIDDLE, QP_RQ, 1, PMTU),
                  frame(RC_SEND_LAST, QP_RQ, 2, 8)})},
        {"send_imm_inv",
         records({frame(RC_SEND_ONLY_IMM, QP_RQ, 0, 4), frame(RC_SEND_ONLY_INV, QP_RQ, 1, 4)})},
        {"send_srq_rnr",
         records({frame(RC_SEND_ONLY, QP_SRQ, 0, 100), frame(RC_SEND_ONLY, QP_SRQ, 1, 100),
                  frame(RC_SEND_ONLY, QP_SRQ, 2, 100), frame(RC_SEND_ONLY, QP_SRQ, 3, 100),
                  frame(RC_SEND_ONLY, QP_SRQ, 4, 100)})},
        {"send_rq_all", records({frame(RC_SEND_ONLY, QP_RQ, 0, 8), frame(RC_SEND_ONLY, QP_RQ, 1, 8),
                                 frame(RC_SEND_ONLY, QP_RQ, 2, 8), frame(RC_SEND_ONLY, QP_RQ, 3, 8),
                                 frame(RC_SEND_ONLY, QP_RQ, 4, 8), frame(RC_SEND_ONLY, QP_RQ, 5, 8),
                                 frame(RC_SEND_ONLY, QP_RQ, 6, 8), frame(RC_SEND_ONLY, QP_RQ, 7, 8),
                                 frame(RC_SEND_ONLY, QP_RQ, 8, 8)})},
        {"send_zero_sge",
         records({frame(RC_SEND_ONLY, QP_RTR, 0, 0), frame(RC_SEND_ONLY, QP_RTR, 1, 8)})},
        {"send_too_long", records({frame(RC_SEND_ONLY, QP_RQ, 0, 4000)})},
        {"read_request", records({frame(RC_READ_REQUEST, QP_RQ, 0, 0, MR_RO, MR_RO_VA, 4096)})},
        {"read_duplicate", records({frame(RC_READ_REQUEST, QP_RQ, 0, 0, MR_RW, MR_RW_VA, 3000),
                                    frame(RC_READ_REQUEST, QP_RQ, 0, 0, MR_RW, MR_RW_VA, 3000)})},
        {"acks", records({frame(RC_ACK, QP_RQ, 0, 0),
                          frame(RC_ACK, QP_RQ, 1, 0, 0, 0, 0, AETH_NAK_PSN_SEQ_ERROR),
                          frame(RC_ACK, QP_RQ, 2, 0, 0, 0, 0, AETH_TYPE_RNR_NAK | 3),
                          frame(RC_ACK, QP_RQ, 3, 0, 0, 0, 0, AETH_NAK_REMOTE_ACCESS_ERROR)})},
        {"read_response",
         records({frame(RC_READ_RESP_FIRST, QP_RQ, 0, PMTU), frame(RC_READ_RESP_LAST, QP_RQ, 1, 20),
                  frame(RC_READ_RESP_ONLY, QP_RTR, 0, 20)})},
        {"sequence_errors",
         records({frame(RC_WRITE_ONLY, QP_RQ, 5, 8), frame(RC_WRITE_ONLY, QP_RQ, 0xFFFFFF, 8),
                  frame(RC_SEND_MIDDLE, QP_RQ, 0, PMTU), frame(RC_SEND_LAST, QP_RTR, 0, 4)})},
        {"unknown_qp_cnp", records({frame(RC_SEND_ONLY, 999, 0, 8),
                                    frame(RC_SEND_ONLY, 0xFFFFFF, 0, 8), frame(CNP, QP_RQ, 0, 0)})},
        {"raw_and_wait",
         cat({records({frame(RC_WRITE_ONLY, QP_RQ, 0, 64)}, fuzz::RECORD_RAW), wait_record(100),
              records({frame(RC_WRITE_ONLY, QP_RQ, 1, 64)}, fuzz::RECORD_RAW)})},
    };
    for (const auto& [name, b] : seeds) {
        write_file(dir / name, b);
    }
}

bytes wqe(uint8_t stride_sel, uint8_t op, uint8_t flags, uint8_t num_sge, uint8_t size_bb,
          uint32_t total_length) {
    bytes b(1 + 256, 0);
    b[0] = stride_sel;
    hsi::wqe_ctrl c{};
    c.opcode = op;
    c.flags = flags;
    c.num_sge = num_sge;
    c.size_bb = size_bb;
    c.total_length = total_length;
    c.remote_va = MR_RW_VA;
    c.rkey = MR_RW;
    std::memcpy(b.data() + 1, &c, sizeof(c));
    for (uint32_t i = 0; i < num_sge && 64 + 16 * (i + 1) <= 256; ++i) {
        const hsi::wqe_sge s{MR_RW_VA + 64 * i, 64, MR_RW};
        std::memcpy(b.data() + 1 + 64 + 16 * i, &s, sizeof(s));
    }
    return b;
}

void wqe_seeds(const fs::path& dir) {
    // Stride selectors: 0 = 64 B, 1 = 128 B, 3 = 256 B (see wqe_decode_fuzz.cpp).
    write_file(dir / "send_2sge", wqe(1, hsi::WQE_SEND, hsi::WQE_FLAG_SIGNALED, 2, 2, 128));
    write_file(dir / "write_inline", wqe(1, hsi::WQE_WRITE, hsi::WQE_FLAG_INLINE, 0, 2, 40));
    write_file(dir / "read_4sge", wqe(3, hsi::WQE_READ, 0, 4, 4, 256));
    write_file(dir / "fast_reg", wqe(1, hsi::WQE_FAST_REG, 0, 0, 2, 0));
    write_file(dir / "bind_mw", wqe(3, hsi::WQE_BIND_MW, 0, 0, 2, 0));
    write_file(dir / "local_inv", wqe(0, hsi::WQE_LOCAL_INV, 0, 0, 1, 0));
    write_file(dir / "nop", wqe(0, hsi::WQE_NOP, 0, 0, 1, 0));
    write_file(dir / "too_big", wqe(0, hsi::WQE_SEND, 0, 9, 3, 0));
}

// driver_cqe_fuzz records: 33 bytes each (see driver_cqe_fuzz.cpp).
bytes cqe_record(uint8_t opcode, uint16_t wqe_index, uint8_t status, uint32_t byte_len) {
    bytes r(33, 0);
    r[0] = 0;
    hsi::cqe e{};
    e.qpn = 0;  // replaced by the input's QP (byte 1 top bit clear)
    e.wqe_index = wqe_index;
    e.opcode = opcode;
    e.status = status;
    e.byte_len = byte_len;
    std::memcpy(r.data() + 1, &e, sizeof(e));
    return r;
}
bytes control_record(uint8_t kind, uint8_t arg) {
    bytes r(33, 0);
    r[0] = kind;
    r[1] = arg;
    return r;
}
bytes event_record(uint8_t type, uint32_t data) {
    bytes r(33, 0);
    r[0] = 1;
    hsi::event_entry e{};
    e.type = type;
    e.data = data;
    std::memcpy(r.data() + 1, &e, sizeof(e));
    return r;
}

void driver_seeds(const fs::path& dir) {
    write_file(
        dir / "receives",
        cat({cqe_record(hsi::CQE_RECV, 0, hsi::CQE_OK, 64),
             cqe_record(hsi::CQE_RECV_IMM, 1, hsi::CQE_OK, 8), control_record(2, 4),
             cqe_record(hsi::CQE_RECV_INV, 2, hsi::CQE_OK, 1),
             cqe_record(hsi::CQE_RECV, 3, hsi::CQE_LOCAL_LENGTH_ERR, 0), control_record(3, 4)}));
    write_file(dir / "send_side", cat({cqe_record(hsi::CQE_SEND, 0, hsi::CQE_OK, 0),
                                       cqe_record(hsi::CQE_READ, 5, hsi::CQE_REMOTE_ACCESS_ERR, 0),
                                       control_record(3, 7)}));
    write_file(dir / "armed_events",
               cat({control_record(4, 1), cqe_record(hsi::CQE_RECV, 0, 0, 4),
                    event_record(hsi::EVENT_CQ_COMPLETION, 1), event_record(hsi::EVENT_CQ_ERROR, 1),
                    event_record(hsi::EVENT_QP_ERROR, 1), event_record(hsi::EVENT_SRQ_LIMIT, 1),
                    event_record(hsi::EVENT_CMD_DONE, 12345), control_record(2, 7)}));
}

void config_seeds(const fs::path& dir, const fs::path& source) {
    write_file(dir / "empty_object", bytes{'{', '}'});
    const fs::path configs = source / "configs";
    int n = 0;
    for (const auto& e : fs::recursive_directory_iterator(configs)) {
        if (e.is_regular_file() && e.path().extension() == ".json") {
            fs::copy_file(e.path(), dir / ("config_" + std::to_string(n++) + ".json"),
                          fs::copy_options::overwrite_existing);
        }
    }
    if (n == 0) {
        std::fprintf(stderr, "rnic_fuzz_seeds: no configs/*.json under %s\n", source.c_str());
        std::exit(1);
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: rnic_fuzz_seeds OUT_DIR SOURCE_DIR\n");
        return 2;
    }
    const fs::path out = argv[1];
    for (const char* t : TARGETS) {
        for (const char* kind : {"seeds", "corpus", "artifacts"}) {
            fs::create_directories(out / kind / t);
        }
    }
    roce_seeds(out / "seeds" / "roce_frame");
    recv_seeds(out / "seeds" / "recv_path");
    wqe_seeds(out / "seeds" / "wqe_decode");
    config_seeds(out / "seeds" / "scenario_config", argv[2]);
    driver_seeds(out / "seeds" / "driver_cqe");
    std::printf("rnic_fuzz_seeds: seed corpora in %s\n", (out / "seeds").c_str());
    return 0;
}
