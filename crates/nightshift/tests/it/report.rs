//! `nightshift report`: the morning report of a night with every kind of outcome, driven through
//! the real binary and the scripted agent; the headline as a pure function of store + receipts;
//! the HTML page in real headless Chromium.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::*;

/// The fixed "now" of the night (the test clock hook), so times in the report are stable.
const NOW: &str = "2026-12-01T22:00:00Z";

/// Real doubt (an objection about the work itself): the review escalates.
const REAL_DOUBT: &str = r#"verdict '{"verdict": "escalate", "reason": "unsure", "findings": [{"severity": "medium", "file": "done/esc", "text": "is this the intended value?"}]}'"#;
const APPROVE: &str =
    r#"verdict '{"verdict": "approve", "reason": "looks right", "findings": []}'"#;

/// A night of six items, one per outcome:
/// - `ship` ships (review approves);
/// - `check` never makes its check green: parked by check;
/// - `cheat` goes green but edits a blocked path: parked by integrity;
/// - `op` asks an operator to add a DNS record: awaiting operator;
/// - `esc` is escalated by its review, then `nightshift accept` ships it (a review debt);
/// - `budget` spends past `session_tokens`: budget cut.
pub struct Night {
    pub repo: Repo,
    pub now_file: PathBuf,
}

impl Night {
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = self.repo.cmd(args);
        cmd.env("NIGHTSHIFT_FAKE_NOW_FILE", &self.now_file);
        cmd
    }

    pub fn run(&self, args: &[&str]) -> std::process::Output {
        self.cmd(args).output().expect("run nightshift")
    }

    pub fn run_id(&self) -> String {
        self.repo.status_json()["run"]["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

pub fn night() -> Night {
    let repo = Repo::new(&project());
    let now_file = repo.agent_dir.join("now");
    std::fs::write(&now_file, NOW).unwrap();
    let dir = repo.agent_dir.display().to_string();
    repo.agent("ship", &solves("ship"));
    repo.agent("esc", &solves("esc"));
    repo.agent("check", NEVER_SOLVES);
    repo.agent(
        "cheat",
        &format!(
            "{}write .github/workflows/ci.yml \"on: push\"\n",
            solves("cheat")
        ),
    );
    repo.agent(
        "budget",
        "emit claude text=\"working\" turns=1 input=1500 output=10\nsleep 30s\n",
    );
    let dev = repo.agent_dir.join("dev.sh");
    std::fs::write(
        &dev,
        format!(
            "if [ \"$NIGHTSHIFT_ITEM\" = op ]; then\n  mkdir -p done; echo ok > done/op\n  echo '[\"add the DNS record op.example.com\"]' > \"$NIGHTSHIFT_OPERATOR_FILE\"\n  exit 0\nfi\nexec {BIN} __fake-agent --script-dir {dir}\n"
        ),
    )
    .unwrap();
    let review = repo.agent_dir.join("review.sh");
    std::fs::write(
        &review,
        format!(
            "verdict() {{ printf '%s\\n' \"$1\" > \"$NIGHTSHIFT_VERDICT_FILE\"; }}\n\
             if [ \"$NIGHTSHIFT_REVIEW\" != debt ] && [ \"$NIGHTSHIFT_ITEM\" = esc ]; then\n  {REAL_DOUBT}\nelse\n  {APPROVE}\nfi\n"
        ),
    )
    .unwrap();
    let items = ["ship", "check", "cheat", "op", "esc", "budget"];
    let config = plan(&repo, &items, 2, 1)
        .replacen(
            &repo.agent_table(),
            &format!(
                "[agent]\nkind = \"command\"\nformat = \"claude-stream\"\ncommand = [\"sh\", \"{}\"]\n",
                dev.display()
            ),
            1,
        )
        .replace(
            "[limits]\n",
            "[limits]\nsession_tokens = 1000\nkill_grace = \"200ms\"\n",
        );
    repo.configure(&format!(
        "{config}\n[agent.review]\ncommand = [\"sh\", \"{}\"]\n\n[review]\nwhen = \"always\"\n\n[guards]\nblocked_paths = [\".github/**\"]\n",
        review.display()
    ));
    let n = Night { repo, now_file };
    let out = n.run(&["run"]);
    assert_eq!(out.status.code(), Some(16), "{}", text(&out));
    let out = n.run(&["accept", "esc"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    n
}

/// The report with what differs between machines and runs replaced: the repository path, the
/// run id, hex ids (commits, digests, refs' attempt numbers stay).
fn normalize(text: &str, night: &Night) -> String {
    let root = night.repo.root.display().to_string();
    let text = text
        .replace(&root, "<REPO>")
        .replace(&night.run_id(), "<RUN>");
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.len() >= 10 && run.chars().any(|c| c.is_ascii_digit()) {
            out.push_str("<HEX>");
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in text.chars() {
        if c.is_ascii_hexdigit() && c.is_ascii_lowercase() || c.is_ascii_digit() {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

fn report_json(n: &Night) -> serde_json::Value {
    let out = n.run(&["report", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    serde_json::from_slice(&out.stdout).expect("report --json is JSON")
}

fn outcome(v: &serde_json::Value, id: &str) -> String {
    v["report"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .chain(v["report"]["never_attempted"].as_array().unwrap())
        .find(|i| i["id"] == id)
        .map(|i| i["outcome"].as_str().unwrap().to_owned())
        .unwrap_or_else(|| "missing".into())
}

#[test]
fn a_night_with_every_outcome_is_reported_and_pinned() {
    let n = night();
    let v = report_json(&n);
    for (id, want) in [
        ("ship", "shipped"),
        ("check", "parked_by_check"),
        ("cheat", "parked_by_integrity"),
        ("op", "awaiting_operator"),
        ("esc", "accepted"),
        ("budget", "budget_cut"),
    ] {
        assert_eq!(outcome(&v, id), want, "{id}");
    }
    let r = &v["report"];
    assert_eq!(r["headline"]["kind"], "verified_with_gaps");
    let gaps: Vec<&str> = r["headline"]["gaps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["kind"].as_str().unwrap())
        .collect();
    assert!(gaps.contains(&"accepted_unsigned"), "{gaps:?}");
    assert!(gaps.contains(&"review_debt"), "{gaps:?}");
    // Ranked: the operator first, then integrity, then the debt, then the other parked items.
    let needs: Vec<(String, String)> = r["needs_human"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["kind"].as_str().unwrap().to_owned(),
                a["command"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        needs[0],
        ("awaiting_operator".into(), "nightshift confirm op".into())
    );
    assert_eq!(needs[1].0, "parked_by_integrity");
    assert!(
        needs[1].1.starts_with("nightshift restore cheat "),
        "{needs:?}"
    );
    assert_eq!(needs[2], ("review_debt".into(), "nightshift run".into()));
    let decisions: Vec<&str> = r["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert!(decisions.contains(&"budget_cut"), "{decisions:?}");
    assert!(decisions.contains(&"triage"), "{decisions:?}");

    let out = n.run(&["report"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let human = normalize(&String::from_utf8_lossy(&out.stdout), &n);
    insta::assert_snapshot!("report_terminal", human);
    let json = normalize(
        &String::from_utf8_lossy(&n.run(&["report", "--json"]).stdout),
        &n,
    );
    insta::assert_snapshot!("report_json", json);
}

/// Flips one byte inside the receipt's signed content (a digit of a number, so it stays JSON).
fn tamper(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = String::from_utf8_lossy(&bytes)
        .find("\"duration_ms\": ")
        .expect("a duration in the receipt")
        + "\"duration_ms\": ".len();
    bytes[at] = if bytes[at] == b'9' { b'8' } else { b'9' };
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn the_report_is_a_pure_function_of_store_and_receipts_and_a_tampered_receipt_is_not_verified() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.agent("b", &solves("b"));
    repo.configure(&plan(&repo, &["a", "b"], 1, 1));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));

    // Pure: the same store and receipts give the same report, byte for byte.
    let first = repo.run(&["report", "--json"]);
    let second = repo.run(&["report", "--json"]);
    assert_eq!(first.stdout, second.stdout);
    let v: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_ne!(v["report"]["headline"]["kind"], "not_verified", "{v}");

    // Every claim about an item agrees with the journal (status reads the same store).
    let status = repo.status_json();
    for item in v["report"]["items"].as_array().unwrap() {
        let row = status["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["id"] == item["id"])
            .unwrap();
        assert_eq!(item["state"], row["state"]);
        assert_eq!(item["work"]["commit"], row["commit"]);
    }

    let run_id = status["run"]["id"].as_str().unwrap().to_owned();
    let receipt = repo
        .root
        .join(format!(".nightshift/receipts/{run_id}/a-a1.json"));
    tamper(&receipt);
    let out = repo.run(&["report", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["report"]["headline"]["kind"], "not_verified", "{v}");
    let failures = v["report"]["headline"]["failures"].to_string();
    assert!(
        failures.contains("a: its receipt does not verify"),
        "{failures}"
    );
    let out = repo.run(&["report"]);
    let human = String::from_utf8_lossy(&out.stdout);
    assert!(human.contains("NOT VERIFIED"), "{human}");
    assert!(human.contains("DOES NOT VERIFY"), "{human}");

    // A missing receipt is not a verified one either.
    std::fs::remove_file(&receipt).unwrap();
    let v: serde_json::Value =
        serde_json::from_slice(&repo.run(&["report", "--json"]).stdout).unwrap();
    assert_eq!(v["report"]["headline"]["kind"], "not_verified", "{v}");
}

#[test]
fn nothing_failed_reads_as_success_and_never_attempted_is_kept_apart() {
    let repo = Repo::new(&project());
    repo.agent("bad", NEVER_SOLVES);
    repo.configure(&plan(&repo, &["bad"], 1, 1));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    let v: serde_json::Value =
        serde_json::from_slice(&repo.run(&["report", "--json"]).stdout).unwrap();
    assert_eq!(v["report"]["headline"]["kind"], "not_verified");
    assert_eq!(
        v["report"]["headline"]["failures"][0],
        "nothing shipped in this run"
    );
    assert_eq!(v["report"]["items"][0]["outcome"], "parked_by_check");
    assert_eq!(v["report"]["never_attempted"], serde_json::json!([]));
    // `run` printed the report at its end.
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("NOT VERIFIED"),
        "{}",
        text(&out)
    );
}

// --- the HTML page in a real browser -------------------------------------------------------

/// Chromium, or `None` (skipped loudly) when it is not installed; under `CI=true` its absence
/// fails the test.
fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Some(path) = std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        }) {
            return Some(path);
        }
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "chromium is not installed, and CI=true: .ci/run installs it"
    );
    eprintln!("SKIPPED: chromium is not installed (apt-get install chromium)");
    None
}

fn browser(chromium: &Path, profile: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .output()
        .expect("run chromium");
    assert!(out.status.success(), "{}", text(&out));
    out
}

/// A night of a shipped item and a parked one, and its report page.
fn page() -> (Repo, PathBuf) {
    let repo = Repo::new(&project());
    repo.agent("good", &solves("good"));
    repo.agent("bad", NEVER_SOLVES);
    repo.configure(
        &plan(&repo, &["good", "bad"], 2, 1)
            .replace("command = [", "format = \"claude-stream\"\ncommand = ["),
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    let html = repo.root.join(".nightshift/report.html");
    let out = repo.run(&["report", "--html", html.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    (repo, html)
}

fn hex_rgb(tint: &str) -> [u8; 3] {
    let v = u32::from_str_radix(tint.trim_start_matches('#'), 16).unwrap();
    [(v >> 16) as u8, (v >> 8) as u8, v as u8]
}

#[test]
fn the_page_renders_every_chart_in_headless_chromium() {
    let Some(chromium) = chromium() else { return };
    let (repo, html) = page();
    let profile = tempfile::tempdir().unwrap();
    let shot = repo.root.join(".nightshift/report.png");
    browser(
        &chromium,
        profile.path(),
        &[
            "--window-size=900,2400",
            &format!("--screenshot={}", shot.display()),
            &format!("file://{}", html.display()),
        ],
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let (w, h) = (info.width as usize, info.height as usize);
    let px = |x: usize, y: usize| {
        let i = (y * w + x) * channels;
        [buf[i], buf[i + 1], buf[i + 2]]
    };
    let near = |a: [u8; 3], b: [u8; 3]| a.iter().zip(b).all(|(x, y)| x.abs_diff(y) <= 3);
    // The colours the frames are drawn in are the page's own constants.
    let page = std::fs::read_to_string(&html).unwrap();
    for (name, tint) in [
        ("sessions", "#eef4fb"),
        ("spend", "#effaf1"),
        ("failing", "#fbf1ee"),
    ] {
        assert!(page.contains(&format!("fill=\"{tint}\"")), "{name} frame");
        let tint = hex_rgb(tint);
        // The chart's region: the bounding box of its frame's tint.
        let (mut x0, mut y0, mut x1, mut y1) = (w, h, 0, 0);
        for y in 0..h {
            for x in 0..w {
                if near(px(x, y), tint) {
                    x0 = x0.min(x);
                    y0 = y0.min(y);
                    x1 = x1.max(x);
                    y1 = y1.max(y);
                }
            }
        }
        assert!(x1 > x0 + 100 && y1 > y0 + 20, "{name}: no frame on screen");
        // Non-blank: the frame holds marks (bars, lines, dots, labels) in other colours.
        let mut marks = 0;
        for y in y0..=y1 {
            for x in x0..=x1 {
                let p = px(x, y);
                if !near(p, tint) && !near(p, [255, 255, 255]) {
                    marks += 1;
                }
            }
        }
        assert!(
            marks > 200,
            "{name}: the chart's region is blank ({marks} marked pixels)"
        );
    }
}

#[test]
fn every_item_link_resolves_and_every_receipt_digest_in_the_page_replays() {
    let Some(chromium) = chromium() else { return };
    let (repo, html) = page();
    let profile = tempfile::tempdir().unwrap();
    // The DOM as the browser parsed it.
    let out = browser(
        &chromium,
        profile.path(),
        &["--dump-dom", &format!("file://{}", html.display())],
    );
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    let attr = |dom: &str, name: &str| -> Vec<String> {
        dom.match_indices(&format!("{name}=\""))
            .map(|(i, m)| {
                let rest = &dom[i + m.len()..];
                rest[..rest.find('"').unwrap()].to_owned()
            })
            .collect()
    };
    let ids = attr(&dom, "id");
    let links: Vec<String> = attr(&dom, "href");
    assert!(
        links.iter().any(|l| l == "#item-bad"),
        "the parked item is linked: {links:?}"
    );
    for link in &links {
        let target = link.strip_prefix('#').expect("only in-page links");
        assert!(
            ids.iter().any(|i| i == target),
            "{link} resolves to nothing"
        );
    }
    for id in [
        "item-good",
        "item-bad",
        "chart-sessions",
        "chart-spend",
        "chart-failing",
    ] {
        assert!(ids.iter().any(|i| i == id), "{id}");
    }
    assert!(!dom.contains("<script"), "no script in the page");

    // Every digest names a receipt file by its bytes, and each replays to MATCH or (one that
    // never went green) exits 13 saying so: the page names no receipt that does not exist.
    let digests: Vec<(String, String)> = dom
        .match_indices("class=\"digest\" data-path=\"")
        .map(|(i, m)| {
            let rest = &dom[i + m.len()..];
            let path = rest[..rest.find('"').unwrap()].to_owned();
            let after = &rest[rest.find('>').unwrap() + 1..];
            (path, after[..after.find('<').unwrap()].to_owned())
        })
        .collect();
    assert!(digests.len() >= 2, "{digests:?}");
    let mut matched = 0;
    for (path, digest) in &digests {
        let bytes = std::fs::read(repo.root.join(path)).unwrap();
        assert_eq!(
            &nightshift_core::report::morning::digest(&bytes),
            digest,
            "{path}"
        );
        let out = repo.run(&["replay", path, "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["signature"], "valid", "{path}: {v}");
        match v["result"].as_str().unwrap() {
            "match" => matched += 1,
            "no_green_check" => assert_eq!(out.status.code(), Some(13)),
            other => panic!("{path}: replay says {other}: {v}"),
        }
    }
    assert!(matched >= 1, "the shipped item's receipt replays to MATCH");
}
