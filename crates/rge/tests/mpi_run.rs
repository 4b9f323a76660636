//! Distributed `rge run` under mpirun (feature `mpi`): data- and tensor-parallel runs on 2
//! ranks equal the single-process run; the faults (`--tensor-parallel` above the ranks, shapes
//! that differ across ranks, a rank that never reaches a collective, a rank that dies) end
//! every rank with an error in bounded time. Skipped, with a message, where mpirun is missing.
#![cfg(feature = "mpi")]

#[path = "common/net.rs"]
mod net;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use net::{a_float, a_str, Net, F32};
use prost::Message;
use rge_kernels::Tensor;

const RGE: &str = env!("CARGO_BIN_EXE_rge");

fn mpirun() -> Option<&'static str> {
    let ok = Command::new("mpirun")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        let msg = "skipped: mpirun not found (install openmpi-bin to run the MPI tests)";
        println!("{msg}");
        eprintln!("{msg}");
    }
    ok.then_some("mpirun")
}

/// `mpirun -np n` of `args` (a shell command line when `shell`), within a minute.
fn launch(np: usize, args: &[&str]) -> (Output, Duration) {
    let t0 = Instant::now();
    let out = Command::new("mpirun")
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "--bind-to",
            "none",
            "-np",
            &np.to_string(),
        ])
        .args(["--mca", "btl", "self,vader"])
        .args(args)
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .output()
        .expect("mpirun runs");
    (out, t0.elapsed())
}

/// Two ranks of the shell command `line`: the job fails within 40 s; its output.
fn fails_in_bounded_time(line: &str) -> String {
    let (o, took) = launch(2, &["sh", "-c", line]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(took < Duration::from_secs(40), "took {took:?}: {t}");
    t
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rge-mpi-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write_npy(p: &Path, t: &Tensor) {
    std::fs::write(p, rge_runtime::io::npy_bytes(t).unwrap()).unwrap();
}

/// x [6, 8] → MatMul [8, 16] → Add → Relu → MatMul [16, 8] → Gemm [8, 4] (+C) → y [6, 4].
fn mlp(dir: &Path) -> (PathBuf, PathBuf) {
    let mut net = Net::new();
    let x = net.input("x", F32, &[6, 8]);
    let w1 = net.weight(&[8, 16], 1);
    let b1 = net.weight(&[16], 2);
    let w2 = net.weight(&[16, 8], 3);
    let w3 = net.weight(&[8, 4], 5);
    let c3 = net.weight(&[4], 6);
    let h = net.op("MatMul", &[&x, &w1], vec![]);
    let h = net.op("Add", &[&h, &b1], vec![]);
    let h = net.op("Relu", &[&h], vec![]);
    let h = net.op("MatMul", &[&h, &w2], vec![]);
    net.op_to("Gemm", &[&h, &w3, &c3], "y", vec![a_float("beta", 2.0)]);
    net.output("y", F32, &[6, 4]);
    let model = dir.join("mlp.onnx");
    std::fs::write(&model, net.model().encode_to_vec()).unwrap();
    let input = dir.join("x.npy");
    let x = Tensor::from_vec(
        &[6, 8],
        (0..48)
            .map(|i| (i as f32 - 24.0) / 10.0)
            .collect::<Vec<f32>>(),
    )
    .unwrap();
    write_npy(&input, &x);
    (model, input)
}

fn y_of(dir: &Path) -> Vec<f32> {
    let t = rge_runtime::io::read_tensor(&dir.join("y.npy")).unwrap();
    t.as_slice::<f32>().unwrap().to_vec()
}

fn close(a: &[f32], b: &[f32]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-5 * y.abs().max(1e-3), "{x} vs {y}");
    }
}

#[test]
fn data_and_tensor_parallel_on_two_ranks_equal_one_process() {
    if mpirun().is_none() {
        return;
    }
    let dir = tmp("par");
    let (model, input) = mlp(&dir);
    let (m, x) = (model.to_str().unwrap(), format!("x={}", input.display()));
    let single = dir.join("single");
    let o = Command::new(RGE)
        .args([
            "run",
            m,
            "--input",
            &x,
            "--output-dir",
            single.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let want = y_of(&single);
    for (flag, extra) in [("--data-parallel", None), ("--tensor-parallel", Some("2"))] {
        let out = dir.join(flag.trim_start_matches('-'));
        let mut args = vec![
            RGE,
            "run",
            m,
            "--input",
            &x,
            "--output-dir",
            out.to_str().unwrap(),
            flag,
        ];
        args.extend(extra);
        let (o, _) = launch(2, &args);
        let t = text(&o);
        assert!(o.status.success(), "{t}");
        assert!(t.contains("rank 0 of 2 (mpi)"), "{t}");
        close(&y_of(&out), &want);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn faults_end_every_rank_with_an_error_in_bounded_time() {
    if mpirun().is_none() {
        return;
    }
    let dir = tmp("faults");
    let (model, input) = mlp(&dir);
    let (m, x) = (model.to_str().unwrap(), format!("x={}", input.display()));
    // --tensor-parallel greater than the ranks: both ranks say so.
    let (o, _) = launch(2, &[RGE, "run", m, "--input", &x, "--tensor-parallel", "4"]);
    let t = text(&o);
    assert!(!o.status.success());
    for r in 0..2 {
        assert!(
            t.contains(&format!(
                "rank {r} of 2 (mpi): --tensor-parallel 4 is greater than the number of ranks (2)"
            )),
            "{t}"
        );
    }
    // A model whose all-reduce input has an open dim, fed 3 values on rank 0 and 4 on rank 1.
    let mut net = Net::new();
    let v = net.input("v", F32, &[-1]);
    net.op_to(
        "HcomAllReduce",
        &[&v],
        "s",
        vec![
            a_str("reduction", "sum"),
            a_str("group", rge_comm::WORLD_GROUP),
        ],
    );
    net.output("s", F32, &[-1]);
    let ar = dir.join("ar.onnx");
    std::fs::write(&ar, net.model().encode_to_vec()).unwrap();
    for r in 0..2 {
        write_npy(
            &dir.join(format!("v{r}.npy")),
            &Tensor::from_vec(&[3 + r], vec![1f32; 3 + r]).unwrap(),
        );
    }
    let line = format!(
        "exec {RGE} run {} --input v={}/v$OMPI_COMM_WORLD_RANK.npy",
        ar.display(),
        dir.display()
    );
    let t = fails_in_bounded_time(&line);
    assert_eq!(
        t.matches("rank 1 gave 16 bytes where rank 0 gave 12")
            .count(),
        2,
        "both ranks: {t}"
    );
    // Rank 1 runs a model without the collective and finishes: rank 0's all-reduce can never
    // complete, and its watchdog ends it after --comm-timeout.
    write_npy(
        &dir.join("v.npy"),
        &Tensor::from_vec(&[3], vec![1f32; 3]).unwrap(),
    );
    let line = format!(
        "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then exec {RGE} run {m} --input {x}; else exec {RGE} run {} --input v={}/v.npy --comm-timeout 2; fi",
        ar.display(),
        dir.display()
    );
    let t = fails_in_bounded_time(&line);
    assert!(
        t.contains("HcomAllReduce in group `hccl_world_group` did not complete within 2.0 s"),
        "{t}"
    );
    // A rank that dies (killed) before joining, while the other waits: mpirun ends the job.
    let line = format!(
        "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then kill -9 $$; fi; exec {RGE} run {} --input v={}/v.npy --comm-timeout 20",
        ar.display(),
        dir.display()
    );
    let t = fails_in_bounded_time(&line);
    // mpirun names the rank and its signal, or (racing its own abort) says one process failed.
    assert!(
        (t.contains("rank 1") && t.contains("signal 9"))
            || t.contains("1 process returned\na non-zero exit code"),
        "{t}"
    );
    // Rank 1 joins the world (a model without collectives: it then waits in MPI's finalize)
    // and is killed while rank 0 waits in its all-reduce: mpirun stops rank 0, which says
    // where it was.
    let line = format!(
        "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then {RGE} run {m} --input {x} & p=$!; sleep 5; kill -9 $p; wait; exit 1; fi; exec {RGE} run {} --input v={}/v.npy --comm-timeout 30",
        ar.display(),
        dir.display()
    );
    let t = fails_in_bounded_time(&line);
    // (On a loaded machine rank 0 may still be compiling: then it says "between collectives".)
    assert!(
        t.contains("rge: comm (rank 0 of 2, mpi backend): stopped by signal 15"),
        "{t}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
