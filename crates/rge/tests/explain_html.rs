//! `rge explain --html` in a real browser: a synthetic report rendered, loaded by headless
//! Chromium, its DOM and a screenshot checked. Without a Chromium binary the test skips,
//! except under CI=true, where it fails (CI installs the Debian package `chromium`).

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rge::explain::{
    render_html, Candidate, EdgeExplain, EngineSummary, ExplainReport, NodeExplain,
    PartitionExplain, TransferExplain, PALETTE,
};

const BROWSERS: [&str; 4] = [
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
];
const BROWSER_TIMEOUT: Duration = Duration::from_secs(120);

fn tmp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rge-explain-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn find_browser() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    BROWSERS.iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// Runs the browser on `page` with `args`, stdout to `stdout`; fails on a hang or a bad exit.
fn run_browser(browser: &Path, dir: &Path, args: &[String], page: &Path, stdout: &Path) {
    let profile = dir.join(format!("profile-{}", args.len()));
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .arg(format!("file://{}", page.display()))
    .stdin(Stdio::null())
    .stdout(File::create(stdout).unwrap())
    .stderr(File::create(dir.join("browser-stderr.txt")).unwrap());
    let mut child = cmd.spawn().expect("the browser starts");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > BROWSER_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{} {args:?} ran past {BROWSER_TIMEOUT:?}",
                browser.display()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // Profiles are tens of MB; the page, DOM and screenshot stay for a look.
    let _ = std::fs::remove_dir_all(&profile);
    let stderr = std::fs::read_to_string(dir.join("browser-stderr.txt")).unwrap_or_default();
    assert!(
        status.success(),
        "{} {args:?}: {status}\n{stderr}",
        browser.display()
    );
}

fn node(name: &str, op: &str, engine: &str, part: &str, flops: u64) -> NodeExplain {
    let cost = |e: &str| match e {
        "dense" => 1,
        "vector" => 2,
        _ => 3,
    };
    let mut candidates = Vec::new();
    for e in ["dense", "vector", "cpu"] {
        candidates.push(Candidate {
            engine: e.into(),
            cost: cost(e),
            supported: e == engine,
            excluded: false,
            reason: if e == engine {
                String::new()
            } else {
                format!("no {e} kernel for {op}")
            },
        });
        if e == engine {
            break;
        }
    }
    NodeExplain {
        name: name.into(),
        op_type: op.into(),
        engine: engine.into(),
        candidates,
        partition: (!part.is_empty()).then(|| part.to_string()),
        stream: Some(cost(engine) as u32 - 1),
        kernel: Some(format!("{op}Kernel")),
        memory_space: if engine == "cpu" { "DDR" } else { "HBM" }.into(),
        constant: op == "Const",
        flops,
        ..NodeExplain::default()
    }
}

fn edge(from: &str, to: &str, to_input: usize, shape: &str) -> EdgeExplain {
    EdgeExplain {
        from: from.into(),
        from_output: 0,
        to: to.into(),
        to_input,
        dtype: "DT_FLOAT".into(),
        shape: shape.into(),
    }
}

/// A small residual CNN: 13 nodes (2 constants) on dense, vector and cpu, 8 partitions.
fn report() -> ExplainReport {
    let out = "output <&\"probs\">";
    let nodes = vec![
        node("image", "Data", "cpu", "p0_input", 0),
        node("conv1_w", "Const", "cpu", "", 0),
        node("conv1", "Conv", "dense", "p1_dense", 118_013_952),
        node("bn1", "BatchNormalization", "vector", "p2_vector", 802_816),
        node("relu1", "Relu", "vector", "p2_vector", 802_816),
        node("conv2_w", "Const", "cpu", "", 0),
        node("conv2", "Conv", "dense", "p3_dense", 924_844_032),
        node("add", "Add", "vector", "p4_vector", 802_816),
        node("pool", "GlobalAveragePool", "vector", "p4_vector", 802_816),
        node("flatten", "Flatten", "cpu", "p5_cpu", 0),
        node("fc", "Gemm", "dense", "p6_dense", 131_072),
        node("softmax", "Softmax", "cpu", "p7_cpu", 1_000),
        node(out, "NetOutput", "cpu", "p7_cpu", 0),
    ];
    let edges = vec![
        edge("image", "conv1", 0, "1x3x224x224"),
        edge("conv1_w", "conv1", 1, "64x3x7x7"),
        edge("conv1", "bn1", 0, "1x64x112x112"),
        edge("bn1", "relu1", 0, "1x64x112x112"),
        edge("relu1", "conv2", 0, "1x64x112x112"),
        edge("conv2_w", "conv2", 1, "64x64x3x3"),
        edge("conv2", "add", 0, "1x64x112x112"),
        edge("relu1", "add", 1, "1x64x112x112"),
        edge("add", "pool", 0, "1x64x112x112"),
        edge("pool", "flatten", 0, "1x64x1x1"),
        edge("flatten", "fc", 0, "1x64"),
        edge("fc", "softmax", 0, "?x1000"),
        edge("softmax", out, 0, "?x1000"),
    ];
    let mut partitions: Vec<PartitionExplain> = Vec::new();
    for n in &nodes {
        let Some(p) = &n.partition else { continue };
        match partitions.iter_mut().find(|q| &q.name == p) {
            Some(q) => q.nodes.push(n.name.clone()),
            None => partitions.push(PartitionExplain {
                name: p.clone(),
                engine: n.engine.clone(),
                stream: n.stream,
                nodes: vec![n.name.clone()],
            }),
        }
    }
    let engine = |name: &str, cost: u8, space: &str| EngineSummary {
        name: name.into(),
        cost,
        memory_space: space.into(),
        ..EngineSummary::default()
    };
    let mut r = ExplainReport {
        model: "tiny_resnet.onnx".into(),
        nodes,
        edges,
        partitions,
        engines: vec![
            engine("dense", 1, "HBM"),
            engine("vector", 2, "HBM"),
            engine("cpu", 3, "DDR"),
        ],
        transfers: vec![
            TransferExplain {
                name: "memcpy_image".into(),
                from_space: "DDR".into(),
                to_space: "HBM".into(),
                tensor: "image:0".into(),
                from_node: "image".into(),
                to_node: "conv1".into(),
            },
            TransferExplain {
                name: "memcpy_pool".into(),
                from_space: "HBM".into(),
                to_space: "DDR".into(),
                tensor: "pool:0".into(),
                from_node: "pool".into(),
                to_node: "flatten".into(),
            },
        ],
        passes: Vec::new(),
    };
    r.finish_summary();
    r
}

/// Width and height from the IHDR chunk, after checking the PNG signature.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert!(bytes.len() > 24, "{} bytes", bytes.len());
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&bytes[16..20]), be(&bytes[20..24]))
}

/// The screenshot's pixels as RGB.
fn png_pixels(path: &Path) -> Vec<[u8; 3]> {
    let mut decoder = png::Decoder::new(BufReader::new(File::open(path).unwrap()));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("unexpected colour type {other:?}"),
    };
    buf[..info.buffer_size()]
        .chunks_exact(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect()
}

fn hex_rgb(hex: &str) -> [u8; 3] {
    let h = hex.trim_start_matches('#');
    let c = |i: usize| u8::from_str_radix(&h[i..i + 2], 16).unwrap();
    [c(0), c(2), c(4)]
}

#[test]
fn headless_chromium_shows_the_graph() {
    let Some(browser) = find_browser() else {
        let msg = format!("no browser found on PATH (tried {BROWSERS:?})");
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{msg}; CI installs it with `apt-get install -y chromium`");
        }
        eprintln!("skipping headless_chromium_shows_the_graph: {msg}");
        return;
    };
    let dir = tmp_dir();
    let r = report();
    let page = dir.join("explain.html");
    std::fs::write(&page, render_html(&r)).unwrap();

    // The DOM as the browser parsed it.
    let dom_file = dir.join("dom.html");
    run_browser(&browser, &dir, &["--dump-dom".into()], &page, &dom_file);
    let dom = std::fs::read_to_string(&dom_file).unwrap();
    assert!(dom.contains("<svg"), "no svg in the DOM:\n{dom}");
    let drawn = r.nodes.iter().filter(|n| !n.constant).count();
    assert_eq!(drawn, 11);
    assert_eq!(dom.matches("<g class=\"node\"").count(), drawn, "{dom}");
    assert!(
        !dom.contains("data-name=\"conv1_w\""),
        "constants are not drawn"
    );
    assert_eq!(
        dom.matches("<g class=\"edge\"").count(),
        11,
        "constant edges are not drawn"
    );
    assert!(dom.contains("constants: conv1_w"));
    assert!(dom.contains("<ul class=\"legend\">"));
    assert_eq!(dom.matches("<li class=\"legend-item\"").count(), 3);
    assert!(
        dom.contains("data-name=\"output &lt;&amp;&quot;probs&quot;&gt;\""),
        "escaped name"
    );
    assert!(dom.contains(">p1_dense</text>"), "partition labels");
    assert!(dom.contains("memcpy_pool"), "transfers");

    // A screenshot: the right size, and the engine colours on screen.
    let shot = dir.join("explain.png");
    let args = [
        format!("--screenshot={}", shot.display()),
        "--window-size=1200,900".into(),
    ];
    run_browser(&browser, &dir, &args, &page, &dir.join("shot-stdout.txt"));
    let bytes = std::fs::read(&shot).expect("the screenshot is written");
    assert_eq!(png_size(&bytes), (1200, 900));
    let pixels = png_pixels(&shot);
    assert_eq!(pixels.len(), 1200 * 900);
    assert!(pixels.iter().any(|p| *p != pixels[0]), "a single colour");
    for (i, e) in r.engine_summary().iter().enumerate() {
        let want = hex_rgb(PALETTE[i]);
        let near = |p: &[u8; 3]| (0..3).all(|c| p[c].abs_diff(want[c]) <= 6);
        let count = pixels.iter().filter(|p| near(p)).count();
        assert!(
            count >= 100,
            "engine {} colour {}: {count} pixels",
            e.name,
            PALETTE[i]
        );
    }
    println!("screenshot: {}", shot.display());
}
