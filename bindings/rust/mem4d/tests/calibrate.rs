// SPDX-License-Identifier: MIT
//! Device files and calibration from Megatron-LM logs through the safe crate.

mod common;

use mem4d::{sys, Calibration, Device, Status};

const LOG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../tests/data/megatron-logs/llama31-8b-cp2-16gpu.log");

#[test]
fn device_file_round_trip_and_refusal() {
    let mut d = Device::new().unwrap();
    d.parse("preset = gb200-186\n# one NIC per two GPUs\nnics_per_node = 2\n").unwrap();
    assert_eq!(d.name(), "gb200-186");
    assert_eq!(d.get("nvlink_domain").unwrap(), 72);
    let mut e = Device::new().unwrap();
    e.parse(&d.to_text().unwrap()).unwrap();
    assert_eq!(e.get("nics_per_node").unwrap(), 2);
    let err = Device::new().unwrap().parse("gpus_per_node = 4\nnvlink = 72\n").unwrap_err();
    assert_eq!(err.status, Status::E_UNKNOWN_KEY);
    assert!(err.to_string().contains("line 2: unknown device key \"nvlink\""), "{err}");
}

#[test]
fn calibrate_one_log() {
    let text = std::fs::read(LOG).unwrap();
    let mut cal = Calibration::new().unwrap();
    cal.add_megatron_log(&text, &[], 0).unwrap();
    assert_eq!(cal.len(), 1);
    let mut d = Device::preset("h100-80").unwrap();
    cal.fit(&mut d).unwrap();
    let meas = cal.figure(0, sys::MEM4D_CALIBRATION_MEASURED_STEP_S).unwrap().unwrap();
    let after = cal.figure(0, sys::MEM4D_CALIBRATION_PREDICTED_STEP_AFTER_S).unwrap().unwrap();
    assert!((meas - 12.30145).abs() < 1e-9);
    assert!((after / meas - 1.0).abs() < 0.005);
    assert_eq!(cal.figure(0, sys::MEM4D_CALIBRATION_MEASURED_MAX_ALLOCATED).unwrap(), None);
    let err = Calibration::new()
        .unwrap()
        .add_megatron_log(b"x\n iteration 1/ 2 | elapsed time per iteration (ms): soon |\n", &[], 8)
        .unwrap_err();
    assert_eq!(err.status, Status::E_PARSE);
    assert!(err.to_string().contains("line 2: elapsed time per iteration (ms) is not a number"), "{err}");
}

#[test]
fn only_regular_files_are_read() {
    // A FIFO would block forever and /dev/zero never ends (issue 24).
    for (path, kind) in [("/dev/zero", "a character device"), ("/", "a directory")] {
        let err = Calibration::new().unwrap().add_megatron_log_file(path, &[], 0).unwrap_err();
        assert_eq!(err.status, Status::E_IO);
        assert!(err.to_string().contains(&format!("is {kind}, not a regular file")), "{err}");
        let err = Device::from_file(path).unwrap_err();
        assert_eq!(err.status, Status::E_IO);
        assert!(err.to_string().contains("give the path of a device file"), "{err}");
    }
    let mut cal = Calibration::new().unwrap();
    cal.add_megatron_log_file(LOG, &[], 0).unwrap();
    assert_eq!(cal.len(), 1);
}

#[test]
fn calibrate_torchtitan_log_and_measurement() {
    let model = mem4d::Model::preset("llama3.1-8b").unwrap();
    let layout = mem4d::Layout::with(&[("world", 8), ("seq", 8192), ("gbs", 32), ("zero_stage", 3)]).unwrap();
    let titan: String = [1, 10, 20]
        .iter()
        .map(|s| {
            format!("step: {s:2}  loss: 9.00000  memory: 60.50GiB(63.68%)  tps: 8,192  tflops: 400.00  mfu: 40.44%\n")
        })
        .collect();
    let mut cal = Calibration::new().unwrap();
    cal.add_log(sys::MEM4D_LOG_TORCHTITAN, titan.as_bytes(), &model, &layout).unwrap();
    cal.add_measurement(&model, &layout, sys::MEM4D_CALIBRATION_MEASURED_STEP_S, 4.0).unwrap();
    let mut d = Device::preset("h100-80").unwrap();
    cal.fit(&mut d).unwrap();
    let meas = cal.figure(0, sys::MEM4D_CALIBRATION_MEASURED_STEP_S).unwrap().unwrap();
    assert!((meas - 4.0).abs() < 1e-9);
    assert_eq!(d.get("calibrated_runs").unwrap(), 2);
    let constants = cal.constants().unwrap();
    assert!(constants.contains(&(sys::MEM4D_DEVICE_MATMUL_EFFICIENCY_PPM, true)));
    assert!(constants.contains(&(sys::MEM4D_DEVICE_MICROBATCH_OVERHEAD_NS, false)));
}
