// The independent test send path as a hardware team would hand it over (paths relative to
// this list): cmake -DRNICSIM_SEND_PATH_RTL=testbench/rtl/external/deep_send_path.f
deep_send_path.vlt
deep_send_path.sv
