//! mlx-c's `mlx_gather_qmm`, which `crates/mlx-sys/native/mlx_compat.h` adapts to MLX 0.32.3
//! and later, through mlx-rs: every case of `tools/fixture/reference_gather_qmm.py` must equal
//! Python's `mx.gather_qmm` on the same libmlx bit for bit, and a bad argument must still come
//! back as an error rather than a result.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use mlx_rs::ops::gather_qmm;
use mlx_rs::Array;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn reference() -> HashMap<String, Array> {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(repo().join(".venv/bin/python"))
        .arg("tools/fixture/reference_gather_qmm.py")
        .arg("--out")
        .arg(tmp.path())
        .current_dir(repo())
        .output()
        .expect("run .venv/bin/python");
    assert!(out.status.success(), "reference_gather_qmm.py failed:\n{}", String::from_utf8_lossy(&out.stderr));
    Array::load_safetensors(tmp.path().join("gather_qmm.safetensors")).unwrap()
}

/// The result's shape and float32 bits against Python's.
fn assert_bits(case: &str, ours: &Array, theirs: &Array) {
    assert_eq!(ours.shape(), theirs.shape(), "{case}: shape");
    let bits = |a: &Array| a.as_slice::<f32>().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    let (a, b) = (bits(ours), bits(theirs));
    let differing = a.iter().zip(&b).filter(|(x, y)| x != y).count();
    assert_eq!(differing, 0, "{case}: {differing} of {} values differ from mx.gather_qmm", a.len());
    assert!(ours.as_slice::<f32>().iter().any(|v| *v != 0.0), "{case}: all zeros");
}

#[test]
fn gather_qmm_matches_python_bit_for_bit() {
    let r = reference();
    let t = |name: &str| r.get(name).unwrap_or_else(|| panic!("reference lacks {name}"));
    let (w4, s4, b4) = (t("w4"), t("scales4"), t("biases4"));

    let rhs = gather_qmm(t("x"), w4, s4, b4, None, t("idx"), true, 64, 4, false).unwrap();
    assert_bits("rhs", &rhs, t("rhs.out"));

    let sorted = gather_qmm(t("sorted.x"), w4, s4, b4, None, t("sorted.idx"), true, 64, 4, true).unwrap();
    assert_bits("sorted", &sorted, t("sorted.out"));

    let lhs = gather_qmm(t("lhs.x"), w4, s4, b4, t("lhs.lhs"), t("lhs.rhs"), true, 64, 4, false).unwrap();
    assert_bits("lhs", &lhs, t("lhs.out"));

    let q8 = gather_qmm(t("x"), t("w8"), t("scales8"), t("biases8"), None, t("idx"), true, 32, 8, false).unwrap();
    assert_bits("q8", &q8, t("q8.out"));

    let plain = gather_qmm(
        t("plain.x"),
        t("plain.w"),
        t("plain.scales"),
        t("plain.biases"),
        None,
        t("idx"),
        false,
        64,
        4,
        false,
    )
    .unwrap();
    assert_bits("plain", &plain, t("plain.out"));
}

#[test]
fn gather_qmm_reports_a_bad_argument_as_an_error() {
    let r = reference();
    let t = |name: &str| &r[name];
    // The 4-bit weights read as 8-bit: the packed width no longer matches the scales.
    let result = gather_qmm(t("x"), t("w4"), t("scales4"), t("biases4"), None, t("idx"), true, 64, 8, false)
        .and_then(|out| out.eval().map(|_| out));
    assert!(result.is_err(), "4-bit weights accepted as 8-bit: {result:?}");
}
