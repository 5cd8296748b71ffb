// Our send path as a Verilator filelist, the form -DRNICSIM_SEND_PATH_RTL=<list> takes
// (paths relative to this file; a hardware team's list names its own files the same way).
send_path.vlt
send_path_crc_pkg.sv
send_path.sv
