// SPDX-License-Identifier: Apache-2.0
// An independent send path, written from rtl/send_path/CONTRACT.md alone for the conformance
// suite's own tests: a hardware team's RTL with a deeper pipeline than the contract's example.
// It is not part of the simulator; it stands in for external RTL (-DRNICSIM_SEND_PATH_RTL=
// testbench/rtl/external/deep_send_path.f) and, built with BREAK != 0, for broken external RTL.
//
// Pipeline (every register advances when the next one is free; no skid buffers):
//   S  message register: the accepted descriptor, one packet handed to H per edge
//   H  the next packet's header bytes and geometry
//   A  frame beat j assembled: header bytes, payload shifted behind the header, zero pad
//   X  ICRC accumulation: the CRC state after this beat, byte-serial, bit by bit
//   Y  the ICRC (~state, least significant byte first) written behind the pad
//   O  output register on the frame stream
// Descriptor accepted at edge s: header at s+1, beat 0 in A at s+2, X s+3, Y s+4, O s+5, and
// on the pins for the handshake at s+6 (the contract's example: s+4). An ACK therefore spends
// 5 edges inside without a handshake on any stream: more than the contract's default
// 4-edge quiescence window (rnic.send_path.rtl.quiescent_edges must be at least 5).
//
// BREAK (test builds only): 1 ICRC most significant byte first; 2 one pad byte dropped (the
// frame ends one byte early, BTH PadCnt and lengths unchanged); 3 fr_valid_o dropped for an
// edge after every edge the frame stream was held by a low fr_ready_i.

module send_path #(
  parameter int unsigned BREAK = 0
) (
  input  logic         clk_i,
  input  logic         rst_ni,
  input  logic         desc_valid_i,
  output logic         desc_ready_o,
  input  logic [2:0]   desc_kind_i,
  input  logic         desc_with_imm_i,
  input  logic         desc_with_inv_i,
  input  logic         desc_solicited_i,
  input  logic         desc_ack_req_i,
  input  logic [23:0]  desc_src_qpn_i,
  input  logic [23:0]  desc_dest_qpn_i,
  input  logic [23:0]  desc_psn_i,
  input  logic [12:0]  desc_pmtu_i,
  input  logic [31:0]  desc_length_i,
  input  logic [63:0]  desc_remote_va_i,
  input  logic [31:0]  desc_rkey_i,
  input  logic [31:0]  desc_imm_or_key_i,
  input  logic [7:0]   desc_syndrome_i,
  input  logic [23:0]  desc_msn_i,
  input  logic [47:0]  desc_src_mac_i,
  input  logic [47:0]  desc_dst_mac_i,
  input  logic [31:0]  desc_src_ip_i,
  input  logic [31:0]  desc_dst_ip_i,
  input  logic         pl_valid_i,
  output logic         pl_ready_o,
  input  logic [511:0] pl_data_i,
  input  logic [63:0]  pl_keep_i,
  input  logic         pl_last_i,
  output logic         fr_valid_o,
  input  logic         fr_ready_i,
  output logic [511:0] fr_data_o,
  output logic [63:0]  fr_keep_o,
  output logic         fr_last_o
);

  // ---- CRC-32 (reflected, polynomial 0xEDB88320), one byte as eight bit steps ------------
  function automatic logic [31:0] crc8(input logic [31:0] c, input logic [7:0] b);
    logic [31:0] s;
    s = c ^ {24'd0, b};
    for (int k = 0; k < 8; k++) s = s[0] ? ((s >> 1) ^ 32'hEDB88320) : (s >> 1);
    return s;
  endfunction

  // State after the ICRC's 8-byte LRH stand-in (all ones) from the initial all-ones value.
  function automatic logic [31:0] crc_lrh();
    logic [31:0] s;
    s = 32'hFFFF_FFFF;
    for (int k = 0; k < 8; k++) s = crc8(s, 8'hFF);
    return s;
  endfunction
  localparam logic [31:0] CRC_START = crc_lrh();

  // ---- S: message ---------------------------------------------------------------------
  logic        m_v;
  logic [2:0]  m_kind;
  logic        m_imm, m_inv, m_se, m_ar, m_first;
  logic [23:0] m_sqp, m_dqp, m_psn, m_msn;
  logic [12:0] m_mtu;
  logic [31:0] m_len, m_left, m_rkey, m_immkey, m_sip, m_dip;
  logic [63:0] m_va;
  logic [7:0]  m_syn;
  logic [47:0] m_smac, m_dmac;

  // The packet S offers to H.
  logic        k_pay, k_last;
  logic [12:0] k_plen;
  logic [7:0]  k_op;
  logic        k_reth, k_aeth, k_immdt, k_ieth;
  logic [1:0]  k_pad;
  logic [6:0]  k_hlen;

  always_comb begin
    k_pay = m_kind == 3'd0 || m_kind == 3'd1 || m_kind == 3'd3;
    k_last = !k_pay || m_left <= 32'(m_mtu);
    k_plen = !k_pay ? 13'd0 : (k_last ? m_left[12:0] : m_mtu);
    k_reth = (m_kind == 3'd1 && m_first) || m_kind == 3'd2;
    k_aeth = m_kind == 3'd4 || (m_kind == 3'd3 && (m_first || k_last));
    k_immdt = k_last && m_imm && (m_kind == 3'd0 || m_kind == 3'd1);
    k_ieth = k_last && m_inv && m_kind == 3'd0 && !m_imm;
    k_pad = 2'(-k_plen[1:0]);
    k_hlen = 7'd54 + (k_reth ? 7'd16 : 7'd0) + (k_aeth ? 7'd4 : 7'd0) +
             ((k_immdt || k_ieth) ? 7'd4 : 7'd0);
    case (m_kind)
      3'd0: k_op = m_first ? (k_last ? (k_immdt ? 8'h05 : k_ieth ? 8'h17 : 8'h04) : 8'h00)
                           : (k_last ? (k_immdt ? 8'h03 : k_ieth ? 8'h16 : 8'h02) : 8'h01);
      3'd1: k_op = m_first ? (k_last ? (k_immdt ? 8'h0B : 8'h0A) : 8'h06)
                           : (k_last ? (k_immdt ? 8'h09 : 8'h08) : 8'h07);
      3'd2: k_op = 8'h0C;
      3'd3: k_op = m_first ? (k_last ? 8'h10 : 8'h0D) : (k_last ? 8'h0F : 8'h0E);
      default: k_op = 8'h11;
    endcase
  end

  // ---- Header bytes of S's packet, in wire order --------------------------------------
  logic [7:0]  hb [128];
  logic [15:0] ip_len, udp_len, ip_sum, sport;
  logic [47:0] fl;

  always_comb begin
    logic [31:0] acc;
    int p;
    ip_len = 16'(k_hlen) - 16'd14 + 16'(k_plen) + 16'(k_pad) + 16'd4;
    udp_len = ip_len - 16'd20;
    acc = 32'h4502 + 32'h4000 + 32'h4011 + 32'(ip_len) + 32'(m_sip[31:16]) +
          32'(m_sip[15:0]) + 32'(m_dip[31:16]) + 32'(m_dip[15:0]);
    acc = 32'(acc[15:0]) + 32'(acc[31:16]);
    acc = 32'(acc[15:0]) + 32'(acc[31:16]);
    ip_sum = ~acc[15:0];
    fl = 48'(m_sqp) * 48'(m_dqp);  // Linux's flow label of the QP pair, then its UDP port
    fl = fl ^ (fl >> 20);
    fl = fl ^ (fl >> 40);
    sport = {2'b11, fl[13:0] ^ {8'h00, fl[19:14]}};
    for (int i = 0; i < 128; i++) hb[i] = 8'h00;
    for (int i = 0; i < 6; i++) begin
      hb[i] = m_dmac[47 - 8*i -: 8];
      hb[6 + i] = m_smac[47 - 8*i -: 8];
    end
    hb[12] = 8'h08;
    hb[14] = 8'h45;
    hb[15] = 8'h02;
    hb[16] = ip_len[15:8];
    hb[17] = ip_len[7:0];
    hb[20] = 8'h40;
    hb[22] = 8'd64;
    hb[23] = 8'd17;
    hb[24] = ip_sum[15:8];
    hb[25] = ip_sum[7:0];
    for (int i = 0; i < 4; i++) begin
      hb[26 + i] = m_sip[31 - 8*i -: 8];
      hb[30 + i] = m_dip[31 - 8*i -: 8];
    end
    hb[34] = sport[15:8];
    hb[35] = sport[7:0];
    hb[36] = 8'h12;  // 4791
    hb[37] = 8'hB7;
    hb[38] = udp_len[15:8];
    hb[39] = udp_len[7:0];
    hb[42] = k_op;
    hb[43] = {k_last && m_se, 1'b0, k_pad, 4'd0};
    hb[44] = 8'hFF;
    hb[45] = 8'hFF;
    for (int i = 0; i < 3; i++) begin
      hb[47 + i] = m_dqp[23 - 8*i -: 8];
      hb[51 + i] = m_psn[23 - 8*i -: 8];
    end
    hb[50] = {k_last && m_ar, 7'd0};
    p = 54;
    if (k_reth) begin
      for (int i = 0; i < 8; i++) hb[54 + i] = m_va[63 - 8*i -: 8];
      for (int i = 0; i < 4; i++) begin
        hb[62 + i] = m_rkey[31 - 8*i -: 8];
        hb[66 + i] = m_len[31 - 8*i -: 8];
      end
      p = 70;
    end
    if (k_aeth) begin
      hb[p] = m_syn;
      for (int i = 0; i < 3; i++) hb[p + 1 + i] = m_msn[23 - 8*i -: 8];
    end else if (k_immdt || k_ieth) begin
      for (int i = 0; i < 4; i++) hb[p + i] = m_immkey[31 - 8*i -: 8];
    end
  end

  // ---- Pipeline registers ---------------------------------------------------------------
  // H
  logic        h_v;
  logic [7:0]  h_b [128];
  logic [6:0]  h_hlen;
  logic [12:0] h_plen;
  logic [13:0] h_end;     // ICRC offset: header + payload + pad
  logic [6:0]  h_beats, h_in;
  // A (and the packet it works on)
  logic        act;
  logic [6:0]  jq;
  logic [7:0]  c_b [128];
  logic [6:0]  c_hlen, c_beats, c_in;
  logic [12:0] c_plen;
  logic [13:0] c_end;
  logic [511:0] carry;
  logic        a_v, a_first, a_last;
  logic [6:0]  a_j;
  logic [13:0] a_end;
  logic [511:0] a_d;
  logic [63:0] a_k;
  // X
  logic        x_v, x_last;
  logic [6:0]  x_j;
  logic [13:0] x_end;
  logic [511:0] x_d;
  logic [63:0] x_k;
  logic [31:0] x_crc, run_crc;
  // Y, O
  logic        y_v, y_last, o_v, o_last, hide;
  logic [511:0] y_d, o_d;
  logic [63:0] y_k, o_k;

  // ---- Handshakes -----------------------------------------------------------------------
  logic o_go, y_go, x_go, x_free, a_mv, a_free, a_go, h_take, h_go, d_go, need, have;
  logic [6:0] pj, pbeats, pin, phb;

  always_comb begin
    pj = act ? jq : 7'd0;
    pbeats = act ? c_beats : h_beats;
    pin = act ? c_in : h_in;
    phb = {6'd0, (act ? c_hlen[6] : h_hlen[6])};
    have = act || h_v;
    need = pj >= phb && (pj - phb) < pin;
    o_go = !o_v || (fr_ready_i && !hide);   // O empties (or is empty) at this edge
    y_go = y_v && o_go;
    x_go = x_v && (!y_v || o_go);
    x_free = !x_v || x_go;
    a_mv = a_v && x_free;
    a_free = !a_v || a_mv;
    a_go = a_free && have && (!need || pl_valid_i);
    pl_ready_o = a_free && have && need;
    h_take = a_go && !act;
    h_go = m_v && (!h_v || h_take);
    desc_ready_o = !m_v || (h_go && k_last);
    d_go = desc_valid_i && desc_ready_o;
  end

  // Beat pj of A's packet: header lanes, payload lanes (the input beat shifted right by the
  // header's lane offset, its first lanes from the previous input beat), zero beyond.
  logic [511:0] a_next;
  logic [63:0]  a_knext;
  logic [6:0]   phlen;
  logic [12:0]  pplen;
  logic [13:0]  pend;

  always_comb begin
    logic [1023:0] both;
    logic [511:0] pay;
    logic [5:0] r;
    phlen = act ? c_hlen : h_hlen;
    pplen = act ? c_plen : h_plen;
    pend = act ? c_end : h_end;
    r = phlen[5:0];
    both = {(need ? pl_data_i : 512'd0), carry};
    pay = 512'(both >> {7'd64 - {1'b0, r}, 3'd0});
    for (int i = 0; i < 64; i++) begin
      logic [13:0] f;
      f = {1'b0, pj, 6'(i)};
      if (f < 14'(phlen)) a_next[8*i +: 8] = act ? c_b[f[6:0]] : h_b[f[6:0]];
      else if (f < 14'(phlen) + 14'(pplen)) a_next[8*i +: 8] = pay[8*i +: 8];
      else a_next[8*i +: 8] = 8'h00;
      a_knext[i] = f < pend + 14'd4;
    end
  end

  // X: the CRC over the beat's bytes in [14, end), the first beat's variant fields as ones.
  logic [31:0] x_next;
  always_comb begin
    logic [31:0] s;
    s = a_first ? CRC_START : run_crc;
    for (int i = 0; i < 64; i++) begin
      logic [13:0] f;
      logic [7:0] b;
      f = {1'b0, a_j, 6'(i)};
      b = a_d[8*i +: 8];
      if (a_first && (i == 15 || i == 22 || i == 24 || i == 25 || i == 40 || i == 41 ||
                      i == 46)) b = 8'hFF;
      if (f >= 14'd14 && f < a_end) s = crc8(s, b);
    end
    x_next = s;
  end

  // Y: ICRC bytes at frame offsets end .. end+3 (possibly split over two beats).
  logic [511:0] y_next;
  always_comb begin
    logic [31:0] ic;
    ic = ~x_crc;
    y_next = x_d;
    for (int i = 0; i < 64; i++) begin
      logic [13:0] f;
      logic [1:0] n;
      f = {1'b0, x_j, 6'(i)};
      n = 2'(f - x_end);
      if (f >= x_end && f < x_end + 14'd4) begin
        if (BREAK == 1) y_next[8*i +: 8] = ic[{~n, 3'd0} +: 8];
        else y_next[8*i +: 8] = ic[{n, 3'd0} +: 8];
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      m_v <= 1'b0;
      h_v <= 1'b0;
      act <= 1'b0;
      jq <= '0;
      a_v <= 1'b0;
      x_v <= 1'b0;
      y_v <= 1'b0;
      o_v <= 1'b0;
      hide <= 1'b0;
    end else begin
      if (d_go) m_v <= 1'b1;
      else if (h_go && k_last) m_v <= 1'b0;
      if (h_go) h_v <= 1'b1;
      else if (h_take) h_v <= 1'b0;
      if (a_go) begin
        act <= pj + 7'd1 < pbeats;
        jq <= pj + 7'd1;
      end
      a_v <= a_go || (a_v && !a_mv);
      x_v <= a_mv || (x_v && !x_go);
      y_v <= x_go || (y_v && !y_go);
      o_v <= y_go || (o_v && !o_go);
      hide <= (BREAK == 3) && o_v && !fr_ready_i && !hide;
    end
  end

  // Data registers (no reset).
  always_ff @(posedge clk_i) begin
    if (d_go) begin
      m_kind <= desc_kind_i;
      m_imm <= desc_with_imm_i;
      m_inv <= desc_with_inv_i;
      m_se <= desc_solicited_i && desc_kind_i <= 3'd1;
      m_ar <= desc_ack_req_i && desc_kind_i <= 3'd2;
      m_sqp <= desc_src_qpn_i;
      m_dqp <= desc_dest_qpn_i;
      m_psn <= desc_psn_i;
      m_mtu <= desc_pmtu_i;
      m_len <= desc_length_i;
      m_left <= desc_length_i;
      m_va <= desc_remote_va_i;
      m_rkey <= desc_rkey_i;
      m_immkey <= desc_imm_or_key_i;
      m_syn <= desc_syndrome_i;
      m_msn <= desc_msn_i;
      m_smac <= desc_src_mac_i;
      m_dmac <= desc_dst_mac_i;
      m_sip <= desc_src_ip_i;
      m_dip <= desc_dst_ip_i;
      m_first <= 1'b1;
    end else if (h_go) begin
      m_left <= m_left - 32'(m_mtu);
      m_psn <= m_psn + 24'd1;
      m_first <= 1'b0;
    end
    if (h_go) begin
      logic [13:0] e;
      e = 14'(k_hlen) + 14'(k_plen) + 14'(k_pad);
      if (BREAK == 2 && k_pad != 2'd0) e = e - 14'd1;
      h_b <= hb;
      h_hlen <= k_hlen;
      h_plen <= k_plen;
      h_end <= e;
      h_beats <= 7'((e + 14'd4 + 14'd63) >> 6);
      h_in <= 7'((14'(k_plen) + 14'd63) >> 6);
    end
    if (h_take) begin
      c_b <= h_b;
      c_hlen <= h_hlen;
      c_plen <= h_plen;
      c_end <= h_end;
      c_beats <= h_beats;
      c_in <= h_in;
    end
    if (a_go && need) carry <= pl_data_i;
    if (a_go) begin
      a_d <= a_next;
      a_k <= a_knext;
      a_j <= pj;
      a_end <= pend;
      a_first <= pj == 7'd0;
      a_last <= pj + 7'd1 == pbeats;
    end
    if (a_mv) begin
      x_d <= a_d;
      x_k <= a_k;
      x_j <= a_j;
      x_end <= a_end;
      x_last <= a_last;
      x_crc <= x_next;
      run_crc <= x_next;
    end
    if (x_go) begin
      y_d <= y_next;
      y_k <= x_k;
      y_last <= x_last;
    end
    if (y_go) begin
      o_d <= y_d;
      o_k <= y_k;
      o_last <= y_last;
    end
  end

  assign fr_valid_o = o_v && !hide;
  assign fr_data_o = o_d;
  assign fr_keep_o = o_k;
  assign fr_last_o = o_last;

endmodule
