#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ps_yarn::fuzzing::ipc_response(data));
