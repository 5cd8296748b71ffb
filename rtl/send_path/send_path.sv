// SPDX-License-Identifier: Apache-2.0
// RoCEv2 send path: message descriptors and 64-byte payload beats in, Ethernet frames out in
// 64-byte beats. Port contract and cycle-level protocol: CONTRACT.md.
//
// Pipeline (one beat per cycle, every register advances with a valid/ready handshake):
//   S  sequencer   holds the accepted message; hands one packet command per edge to H
//   H  header      all headers of the next packet (Ethernet .. last extension header, IPv4
//                  checksum), registered one edge after S has the packet
//   A  assembler   frame beat j: header bytes, then the payload shifted behind the header
//                  (header length mod 64 is 6, 10, 54 or 58), pad zero; consumes one payload
//                  beat per output beat while the packet has payload left
//   O  output      ICRC over the beat (64 table lookups per beat; the final CRC beat is
//                  right-aligned so any length works) and inserted behind the pad
// Descriptor accepted at edge s: header at s+1, first beat in A at s+2, in O at s+3, out at s+4.

module send_path
  import send_path_crc_pkg::*;
#(
  // Conformance-suite fault injection (never set in a product build): 1 adds a register stage
  // on the frame output (one cycle late), 2 flips the ICRC's first byte.
  parameter int unsigned BREAK = 0
) (
  input  logic         clk_i,
  input  logic         rst_ni,

  // Message descriptor stream
  input  logic         desc_valid_i,
  output logic         desc_ready_o,
  input  logic [2:0]   desc_kind_i,       // 0 SEND, 1 WRITE, 2 READ_REQUEST, 3 READ_RESPONSE, 4 ACK
  input  logic         desc_with_imm_i,
  input  logic         desc_with_inv_i,
  input  logic         desc_solicited_i,
  input  logic         desc_ack_req_i,
  input  logic [23:0]  desc_src_qpn_i,
  input  logic [23:0]  desc_dest_qpn_i,
  input  logic [23:0]  desc_psn_i,
  input  logic [12:0]  desc_pmtu_i,       // 256, 512, 1024, 2048 or 4096
  input  logic [31:0]  desc_length_i,
  input  logic [63:0]  desc_remote_va_i,
  input  logic [31:0]  desc_rkey_i,
  input  logic [31:0]  desc_imm_or_key_i,
  input  logic [7:0]   desc_syndrome_i,
  input  logic [23:0]  desc_msn_i,
  input  logic [47:0]  desc_src_mac_i,    // first byte on the wire in [47:40]
  input  logic [47:0]  desc_dst_mac_i,
  input  logic [31:0]  desc_src_ip_i,
  input  logic [31:0]  desc_dst_ip_i,

  // Payload stream: the message's bytes in order, lane i = byte 64k + i of the message
  input  logic         pl_valid_i,
  output logic         pl_ready_o,
  input  logic [511:0] pl_data_i,
  input  logic [63:0]  pl_keep_i,
  input  logic         pl_last_i,

  // Frame stream: lane i = byte 64j + i of the frame (Ethernet header .. ICRC, no FCS)
  output logic         fr_valid_o,
  input  logic         fr_ready_i,
  output logic [511:0] fr_data_o,
  output logic [63:0]  fr_keep_o,
  output logic         fr_last_o
);

  localparam logic [2:0] KIND_SEND = 3'd0;
  localparam logic [2:0] KIND_WRITE = 3'd1;
  localparam logic [2:0] KIND_READ_REQ = 3'd2;
  localparam logic [2:0] KIND_READ_RESP = 3'd3;

  // ---------------------------------------------------------------------------------------
  // S: sequencer
  // ---------------------------------------------------------------------------------------
  logic        msg_valid_q;
  logic [2:0]  m_kind_q;
  logic        m_imm_q, m_inv_q, m_se_q, m_ackreq_q;
  logic [23:0] m_dest_qpn_q, m_psn_q, m_msn_q;
  logic [15:0] m_udp_port_q;
  // UDP source port from the flow label, as Linux (include/rdma/ib_verbs.h): the label is the
  // 48-bit product of the QPNs folded to 20 bits (v ^= v >> 20; v ^= v >> 40), the port its
  // low 14 bits XOR its high 6, with the top two bits set.
  logic [47:0] s_fl_prod, s_fl_fold;
  logic [19:0] s_flow_label;
  logic [15:0] s_udp_sport;
  always_comb begin
    s_fl_prod = 48'(desc_src_qpn_i) * 48'(desc_dest_qpn_i);
    s_fl_fold = s_fl_prod ^ (s_fl_prod >> 20);
    s_fl_fold = s_fl_fold ^ (s_fl_fold >> 40);
    s_flow_label = s_fl_fold[19:0];
    s_udp_sport = {2'b11, s_flow_label[13:0] ^ {8'h00, s_flow_label[19:14]}};
  end
  logic [12:0] m_pmtu_q;
  logic [31:0] m_length_q, m_rem_q;
  logic [63:0] m_va_q;
  logic [31:0] m_rkey_q, m_imm_q32, m_src_ip_q, m_dst_ip_q;
  logic [7:0]  m_syndrome_q;
  logic [47:0] m_src_mac_q, m_dst_mac_q;
  logic        m_first_q;

  logic        hdr_valid_q;
  logic        hdr_load, hdr_take;
  logic        desc_take;

  // Packet command for the packet S holds.
  logic        s_has_payload, s_last, s_first;
  logic [12:0] s_len;
  logic [7:0]  s_opcode;
  logic        s_reth, s_aeth, s_immdt, s_ieth;

  always_comb begin
    s_has_payload = (m_kind_q == KIND_SEND) || (m_kind_q == KIND_WRITE) ||
                    (m_kind_q == KIND_READ_RESP);
    s_first = m_first_q;
    s_last = !s_has_payload || (m_rem_q <= {19'd0, m_pmtu_q});
    s_len = !s_has_payload ? 13'd0 : (s_last ? m_rem_q[12:0] : m_pmtu_q);
    s_opcode = 8'h04;
    unique case (m_kind_q)
      KIND_SEND: begin
        if (s_first && s_last) s_opcode = m_imm_q ? 8'h05 : (m_inv_q ? 8'h17 : 8'h04);
        else if (s_last) s_opcode = m_imm_q ? 8'h03 : (m_inv_q ? 8'h16 : 8'h02);
        else s_opcode = s_first ? 8'h00 : 8'h01;
      end
      KIND_WRITE: begin
        if (s_first && s_last) s_opcode = m_imm_q ? 8'h0B : 8'h0A;
        else if (s_last) s_opcode = m_imm_q ? 8'h09 : 8'h08;
        else s_opcode = s_first ? 8'h06 : 8'h07;
      end
      KIND_READ_REQ: s_opcode = 8'h0C;
      KIND_READ_RESP: begin
        if (s_first && s_last) s_opcode = 8'h10;
        else if (s_last) s_opcode = 8'h0F;
        else s_opcode = s_first ? 8'h0D : 8'h0E;
      end
      default: s_opcode = 8'h11;  // ACK
    endcase
    s_reth = (m_kind_q == KIND_WRITE && s_first) || (m_kind_q == KIND_READ_REQ);
    s_aeth = (m_kind_q == KIND_READ_RESP && (s_first || s_last)) ||
             !(m_kind_q inside {KIND_SEND, KIND_WRITE, KIND_READ_REQ, KIND_READ_RESP});
    s_immdt = s_last && m_imm_q;
    s_ieth = s_last && m_inv_q;
  end

  // Header geometry of the packet S holds.
  logic [6:0]        s_hlen;
  logic [15:0]       s_ip_total;
  logic [1:0]        s_pad;

  always_comb begin
    s_hlen = 7'd54 + (s_reth ? 7'd16 : 7'd0) + ((s_aeth || s_immdt || s_ieth) ? 7'd4 : 7'd0);
    s_pad = 2'(3'd4 - {1'b0, s_len[1:0]});
    s_ip_total = 16'({9'd0, s_hlen} - 16'd14 + {3'd0, s_len} + {14'd0, s_pad} + 16'd4);
  end

  // IPv4 header checksum: 0x4502 + total + 0 + 0x4000 + 0x4011 + 0 + addresses.
  logic [19:0] s_sum;
  logic [16:0] s_fold;
  logic [15:0] s_csum;
  logic [15:0] s_udp_len;

  always_comb begin
    s_sum = 20'h04502 + 20'h04000 + 20'h04011 + {4'd0, s_ip_total} +
            {4'd0, m_src_ip_q[31:16]} + {4'd0, m_src_ip_q[15:0]} +
            {4'd0, m_dst_ip_q[31:16]} + {4'd0, m_dst_ip_q[15:0]};
    s_fold = {1'b0, s_sum[15:0]} + {13'd0, s_sum[19:16]};
    s_csum = ~(s_fold[15:0] + {15'd0, s_fold[16]});
    s_udp_len = s_ip_total - 16'd20;
  end

  // ---------------------------------------------------------------------------------------
  // H: header register (per-packet geometry precomputed for A and O)
  // ---------------------------------------------------------------------------------------
  logic [127:0][7:0] hdr_q;
  logic [6:0]        hdr_hlen_q;
  logic [12:0]       hdr_len_q;
  logic [13:0]       hdr_end_q;    // E: CRC end = header + payload + pad
  logic [6:0]        hdr_beats_q;  // frame beats: ceil((E + 4) / 64)
  logic [6:0]        hdr_inbeats_q;

  // ---------------------------------------------------------------------------------------
  // A: assembler
  // ---------------------------------------------------------------------------------------
  logic              act_q;        // a packet is being assembled (beat j_q next)
  logic [6:0]        j_q;
  logic [127:0][7:0] cur_hdr_q;
  logic [6:0]        cur_hlen_q;
  logic [12:0]       cur_len_q;
  logic [13:0]       cur_end_q;
  logic [6:0]        cur_beats_q, cur_inbeats_q;
  logic [511:0]      carry_q;      // previous payload beat

  logic              a_valid_q, a_first_q, a_end_q, a_spill_q, a_last_q;
  logic [5:0]        a_n_q;        // E mod 64 on the beat holding the CRC end
  logic [511:0]      a_data_q;
  logic [63:0]       a_keep_q;

  logic              o_valid_q, o_last_q;
  logic [511:0]      o_data_q;
  logic [63:0]       o_keep_q;
  logic [31:0]       crc_q;        // running CRC register (raw, not inverted)
  logic [15:0]       icrc_hi_q;    // ICRC bytes 2, 3 when they spill into the next beat

  logic              o_free, a_free, have_beat, needs_in, a_load, o_load;
  logic              o_ready;      // the O register's beat leaves at this edge if valid

  // Geometry of the beat A produces next (current packet, or beat 0 of the header register).
  logic [127:0][7:0] p_hdr;
  logic [6:0]        p_hlen, p_beats, p_inbeats, p_j, p_hb;
  logic [12:0]       p_len;
  logic [13:0]       p_end;
  logic [14:0]       p_pend;       // payload end relative to lane 0 of beat p_j
  logic              p_mid;        // beat p_j is payload in all 64 lanes

  always_comb begin
    p_hdr = act_q ? cur_hdr_q : hdr_q;
    p_hlen = act_q ? cur_hlen_q : hdr_hlen_q;
    p_len = act_q ? cur_len_q : hdr_len_q;
    p_end = act_q ? cur_end_q : hdr_end_q;
    p_beats = act_q ? cur_beats_q : hdr_beats_q;
    p_inbeats = act_q ? cur_inbeats_q : hdr_inbeats_q;
    p_j = act_q ? j_q : 7'd0;
    p_hb = {6'd0, p_hlen[6]};
    p_pend = 15'({8'd0, p_hlen} + {2'd0, p_len}) - 15'({p_j, 6'd0});
    p_mid = (p_j >= 7'd2) && (p_pend >= 15'd64);
    have_beat = act_q || hdr_valid_q;
    needs_in = (p_j >= p_hb) && ((p_j - p_hb) < p_inbeats);
  end

  // Handshakes (the only logic that depends on this cycle's inputs; kept apart from the
  // geometry above so that a simulator settles only this when the inputs change).
  always_comb begin
    o_free = !o_valid_q || o_ready;
    a_free = !a_valid_q || o_free;
    a_load = a_free && have_beat && (!needs_in || pl_valid_i);
    pl_ready_o = a_free && have_beat && needs_in;
    o_load = a_valid_q && o_free;
    hdr_take = a_load && !act_q;
    hdr_load = msg_valid_q && (!hdr_valid_q || hdr_take);
    desc_take = desc_valid_i && (!msg_valid_q || (hdr_load && s_last));
    desc_ready_o = !msg_valid_q || (hdr_load && s_last);
  end

  // Beat p_j: the payload shifted behind the header (header length mod 64 is 54, 58, 6 or
  // 10: lanes below the shift come from the previous payload beat); on the first two beats
  // header lanes, at the payload end zero pad. The masks depend on registers only and are
  // trivial on the all-payload beats in between.
  logic [511:0] b_hmask, b_pmask, b_hdr;
  logic [63:0]  b_keep;
  logic [14:0]  b_fend;

  always_comb begin
    b_hdr = p_j[0] ? p_hdr[127:64] : p_hdr[63:0];
    b_hmask = '0;
    b_pmask = '1;
    if (!p_mid) begin
      if (p_j == 7'd0) b_hmask = p_hlen[6] ? '1 : ~('1 << {p_hlen[5:0], 3'd0});
      else if (p_j == 7'd1 && p_hlen[6]) b_hmask = ~('1 << {p_hlen[5:0], 3'd0});
      if ($signed(p_pend) <= 0) b_pmask = '0;
      else if (p_pend < 15'd64) b_pmask = ~('1 << {p_pend[5:0], 3'd0});
    end
    b_fend = 15'(p_end + 14'd4) - 15'({p_j, 6'd0});
    b_keep = (b_fend >= 15'd64) ? '1 : ~(64'hFFFF_FFFF_FFFF_FFFF << b_fend[5:0]);
  end

  // ---------------------------------------------------------------------------------------
  // CRC: lane-table CRC of a 64-byte block from state 0; byte-serial step for the last two
  // bytes before a right-aligned final block.
  // ---------------------------------------------------------------------------------------
  function automatic logic [31:0] crc_byte(input logic [31:0] s, input logic [7:0] b);
    return (s >> 8) ^ CRC_TAB[63][s[7:0] ^ b];
  endfunction

  // CRC register after the A beat. A middle beat is a full block with the running state
  // folded into its first four lanes. The first beat is masked: LRH stand-in (8 x 0xFF at
  // offsets 6..13, the 0xFFFFFFFF initial value folded into its first four bytes), variant
  // fields as ones, the Ethernet header as zeros (outside the ICRC). On the final beat the n
  // = E mod 64 bytes (n = 2 mod 4) go two bytes serially, then the rest right-aligned in a
  // block (leading zeros leave a zero state unchanged) with the state folded in front.
  logic [511:0] c_blk;
  logic [31:0]  c_st, c_st2, c_next, c_icrc;

  always_comb begin
    c_blk = a_data_q;
    c_st = a_first_q ? 32'd0 : crc_q;
    if (a_first_q) begin
      c_blk[79:0] = '0;
      c_blk[111:80] = '1;
      c_blk[15*8 +: 8] = 8'hFF;   // TOS
      c_blk[22*8 +: 8] = 8'hFF;   // TTL
      c_blk[24*8 +: 16] = '1;     // IP checksum
      c_blk[40*8 +: 16] = '1;     // UDP checksum
      c_blk[46*8 +: 8] = 8'hFF;   // BTH FECN/BECN/reserved
    end
    c_st2 = crc_byte(crc_byte(c_st, c_blk[7:0]), c_blk[15:8]);
    if (!a_end_q) begin
      c_blk[31:0] = c_blk[31:0] ^ c_st;
    end else begin
      c_blk = c_blk & ~('1 << {a_n_q, 3'd0});
      c_blk[15:0] = '0;
      c_blk = (c_blk << {(7'd64 - {1'b0, a_n_q}), 3'd0}) ^
              ({480'd0, c_st2} << {(7'd66 - {1'b0, a_n_q}), 3'd0});
    end
    c_next = '0;
    for (int i = 0; i < 64; i++) c_next ^= CRC_TAB[i][c_blk[8*i +: 8]];
    if (a_spill_q) c_next = crc_q;
    else if (a_end_q && a_n_q == 6'd2) c_next = c_st2;
    c_icrc = ~c_next;
    if (BREAK == 2) c_icrc[7:0] = ~c_icrc[7:0];
  end

  // ---------------------------------------------------------------------------------------
  // Registers
  // ---------------------------------------------------------------------------------------
  // Control: valid flags and beat counter (reset).
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      msg_valid_q <= 1'b0;
      hdr_valid_q <= 1'b0;
      act_q <= 1'b0;
      j_q <= '0;
      a_valid_q <= 1'b0;
      o_valid_q <= 1'b0;
    end else begin
      if (desc_take) msg_valid_q <= 1'b1;
      else if (hdr_load && s_last) msg_valid_q <= 1'b0;
      if (hdr_load) hdr_valid_q <= 1'b1;
      else if (hdr_take) hdr_valid_q <= 1'b0;
      if (a_load) begin
        act_q <= (p_j + 7'd1) < p_beats;
        j_q <= p_j + 7'd1;
      end
      if (a_load) a_valid_q <= 1'b1;
      else if (o_load) a_valid_q <= 1'b0;
      if (o_load) o_valid_q <= 1'b1;
      else if (o_ready) o_valid_q <= 1'b0;
    end
  end

  // S: the accepted message; advances one packet per header load.
  always_ff @(posedge clk_i) begin
    if (desc_take) begin
      m_kind_q <= desc_kind_i;
      m_imm_q <= desc_with_imm_i;
      m_inv_q <= desc_with_inv_i;
      m_se_q <= desc_solicited_i && (desc_kind_i == KIND_SEND || desc_kind_i == KIND_WRITE);
      m_ackreq_q <= desc_ack_req_i && (desc_kind_i inside {KIND_SEND, KIND_WRITE, KIND_READ_REQ});
      m_dest_qpn_q <= desc_dest_qpn_i;
      m_udp_port_q <= s_udp_sport;
      m_psn_q <= desc_psn_i;
      m_pmtu_q <= desc_pmtu_i;
      m_length_q <= desc_length_i;
      m_rem_q <= desc_length_i;
      m_va_q <= desc_remote_va_i;
      m_rkey_q <= desc_rkey_i;
      m_imm_q32 <= desc_imm_or_key_i;
      m_syndrome_q <= desc_syndrome_i;
      m_msn_q <= desc_msn_i;
      m_src_mac_q <= desc_src_mac_i;
      m_dst_mac_q <= desc_dst_mac_i;
      m_src_ip_q <= desc_src_ip_i;
      m_dst_ip_q <= desc_dst_ip_i;
      m_first_q <= 1'b1;
    end else if (hdr_load && !s_last) begin
      m_rem_q <= m_rem_q - {19'd0, m_pmtu_q};
      m_psn_q <= m_psn_q + 24'd1;
      m_first_q <= 1'b0;
    end
  end

  // H: headers and geometry of the next packet.
  always_ff @(posedge clk_i) begin
    if (hdr_load) begin : h_stage
      logic [1023:0] wire_order, lanes;
      // Headers in wire order (byte 0 first), then lane i = byte i.
      wire_order = {m_dst_mac_q, m_src_mac_q, 16'h0800,                       // Ethernet
                    8'h45, 8'h02, s_ip_total, 16'h0000, 16'h4000,             // IPv4: TOS ECT(0),
                    8'd64, 8'd17, s_csum, m_src_ip_q, m_dst_ip_q,             //   DF, TTL 64, UDP
                    m_udp_port_q, 16'd4791, s_udp_len, 16'h0000,              // UDP
                    s_opcode, s_last && m_se_q, 1'b0, s_pad, 4'd0, 16'hFFFF,  // BTH
                    8'h00, m_dest_qpn_q, s_last && m_ackreq_q, 7'd0, m_psn_q,
                    s_reth ? {m_va_q, m_rkey_q, m_length_q, s_immdt ? m_imm_q32 : 32'd0}
                           : s_aeth ? {m_syndrome_q, m_msn_q, 128'd0}
                                    : (s_immdt || s_ieth) ? {m_imm_q32, 128'd0} : 160'd0,
                    432'd0};
      // (headers end at byte 74; loops of at most 64 so that simulators unroll them)
      lanes = '0;
      for (int i = 0; i < 64; i++) lanes[8*i +: 8] = wire_order[1023-8*i -: 8];
      for (int i = 64; i < 74; i++) lanes[8*i +: 8] = wire_order[1023-8*i -: 8];
      hdr_q <= lanes;
      hdr_hlen_q <= s_hlen;
      hdr_len_q <= s_len;
      hdr_end_q <= {7'd0, s_hlen} + {1'b0, s_len} + {12'd0, s_pad};
      hdr_beats_q <= 7'(({7'd0, s_hlen} + {1'b0, s_len} + {12'd0, s_pad} + 14'd4 + 14'd63) >> 6);
      hdr_inbeats_q <= 7'(({1'b0, s_len} + 14'd63) >> 6);
    end
  end

  // A: the packet being assembled and its next beat.
  always_ff @(posedge clk_i) begin
    if (a_load && !act_q) begin
      cur_hdr_q <= hdr_q;
      cur_hlen_q <= hdr_hlen_q;
      cur_len_q <= hdr_len_q;
      cur_end_q <= hdr_end_q;
      cur_beats_q <= hdr_beats_q;
      cur_inbeats_q <= hdr_inbeats_q;
    end
  end

  always_ff @(posedge clk_i) begin
    if (a_load && needs_in) carry_q <= pl_data_i;
  end

  always_ff @(posedge clk_i) begin
    if (a_load) begin : a_stage
      logic [511:0] pay;
      unique case (p_hlen[5:0])
        6'd54:   pay = 512'({pl_data_i, carry_q} >> 80);
        6'd58:   pay = 512'({pl_data_i, carry_q} >> 48);
        6'd6:    pay = 512'({pl_data_i, carry_q} >> 464);
        default: pay = 512'({pl_data_i, carry_q} >> 432);  // 10
      endcase
      a_data_q <= p_mid ? pay : (b_hdr & b_hmask) | (pay & b_pmask & ~b_hmask);
      a_keep_q <= b_keep;
      a_last_q <= (p_j + 7'd1) == p_beats;
      a_first_q <= p_j == 7'd0;
      a_end_q <= p_j == p_end[12:6];
      a_spill_q <= (p_end[5:0] == 6'd62) && (p_j == p_end[12:6] + 7'd1);
      a_n_q <= p_end[5:0];
    end
  end

  // O: CRC and ICRC; the beat on the frame stream.
  always_ff @(posedge clk_i) begin
    if (o_load) begin
      crc_q <= c_next;
      if (a_spill_q) begin
        o_data_q <= {a_data_q[511:16], icrc_hi_q};
      end else if (a_end_q) begin : icrc_insert
        // ICRC bytes at lanes n..n+3 (n = E mod 64 <= 62: bytes beyond lane 63 spill)
        logic [511:0] d;
        d = a_data_q;
        for (int k = 0; k < 4; k++) begin
          if (int'(a_n_q) + k < 64) d[8*(int'(a_n_q) + k) +: 8] = c_icrc[8*k +: 8];
        end
        o_data_q <= d;
      end else begin
        o_data_q <= a_data_q;
      end
      if (a_end_q) icrc_hi_q <= c_icrc[31:16];
      o_keep_q <= a_keep_q;
      o_last_q <= a_last_q;
    end
  end

  // ---------------------------------------------------------------------------------------
  // Output (BREAK == 1: one more register stage, a deliberate one-cycle delay)
  // ---------------------------------------------------------------------------------------
  if (BREAK == 1) begin : g_late
    logic         l_valid_q, l_last_q;
    logic [511:0] l_data_q;
    logic [63:0]  l_keep_q;
    assign o_ready = !l_valid_q || fr_ready_i;
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) begin
        l_valid_q <= 1'b0;
      end else if (o_ready) begin
        l_valid_q <= o_valid_q;
        l_data_q <= o_data_q;
        l_keep_q <= o_keep_q;
        l_last_q <= o_last_q;
      end
    end
    assign fr_valid_o = l_valid_q;
    assign fr_data_o = l_data_q;
    assign fr_keep_o = l_keep_q;
    assign fr_last_o = l_last_q;
  end else begin : g_out
    assign o_ready = fr_ready_i;
    assign fr_valid_o = o_valid_q;
    assign fr_data_o = o_data_q;
    assign fr_keep_o = o_keep_q;
    assign fr_last_o = o_last_q;
  end

endmodule
