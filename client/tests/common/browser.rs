//! A real headless browser (Debian's `chromium-headless-shell`, installed by scripts/test.sh;
//! `PS_BROWSER` names it) loading the job's page, and what the tests read from its DOM.

use super::output_within;
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

/// The headless browser: `$PS_BROWSER`, else one on the PATH.
pub fn browser() -> String {
    if let Ok(b) = std::env::var("PS_BROWSER") {
        return b;
    }
    for b in ["chromium-headless-shell", "chromium"] {
        let found = Command::new("sh").arg("-c").arg(format!("command -v {b}")).output();
        if found.is_ok_and(|o| o.status.success()) {
            return b.to_string();
        }
    }
    panic!("no headless browser: run through scripts/test.sh (it installs chromium-headless-shell) or set PS_BROWSER")
}

/// The DOM of `url` after the browser parsed and laid it out (`--dump-dom`).
pub fn dom(url: &str) -> String {
    let out = output_within(
        Command::new(browser()).args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", url]),
        Duration::from_secs(90),
    );
    assert!(out.status.success(), "the browser failed on {url}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The text of the element with attribute `attr` (e.g. `id="job-clock"`).
pub fn text_of<'a>(dom: &'a str, attr: &str) -> Option<&'a str> {
    let rest = &dom[dom.find(attr)? + attr.len()..];
    let rest = &rest[rest.find('>')? + 1..];
    rest.split('<').next()
}

/// The points of the plotted series `name`, in the first chart that has it.
pub fn points(dom: &str, name: &str) -> usize {
    let at = dom.find(&format!(r#"data-name="{name}" fill="none""#)).unwrap_or_else(|| panic!("no series {name}"));
    let rest = &dom[at..];
    let pts = &rest[rest.find("points=\"").unwrap() + 8..];
    pts[..pts.find('"').unwrap()].split_whitespace().count()
}

/// `status.json` under the page at `url` (which ends with `/`).
pub fn status(url: &str) -> Value {
    let body = reqwest::blocking::get(format!("{url}status.json")).unwrap().text().unwrap();
    serde_json::from_str(&body).unwrap()
}

/// The number at the start of the element with attribute `attr`.
pub fn clock_of(dom: &str, attr: &str) -> i64 {
    let t = text_of(dom, attr).unwrap_or_else(|| panic!("no {attr} in the page"));
    t.split_whitespace().next().unwrap().parse().unwrap_or_else(|_| panic!("{attr}: '{t}'"))
}

/// The exact value behind the newest shown evaluation of `name`.
pub fn last_value(dom: &str, name: &str) -> f64 {
    let v = dom.split(&format!(r#"data-name="{name}" data-value=""#)).nth(1).unwrap_or_else(|| panic!("no {name}"));
    v.split('"').next().unwrap().parse().unwrap()
}

/// `status.json` once it lists at least `k` evaluations; fails the test after `limit`.
pub fn wait_evaluations(url: &str, k: usize, limit: Duration) -> Value {
    let deadline = std::time::Instant::now() + limit;
    loop {
        let s = status(url);
        if s["objective"].as_array().is_some_and(|a| a.len() >= k) {
            return s;
        }
        assert!(std::time::Instant::now() < deadline, "not {k} evaluations within {limit:?}: {s}");
        std::thread::sleep(Duration::from_millis(200));
    }
}
