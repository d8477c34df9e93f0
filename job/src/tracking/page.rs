//! The job's page, rendered from its `status.json` (so the two cannot disagree): one HTML file
//! with inline SVG plots and no scripts, external assets or absolute links, so that it works
//! through the ResourceManager's web proxy (which serves it under `/proxy/<app>/`) and as a file
//! (`report.html`) after the job.

use serde_json::Value;
use std::fmt::Write;

const COLORS: [&str; 6] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf"];
const W: f64 = 460.0;
const H: f64 = 220.0;
/// Plot area inside the chart: left, right, top, bottom margins.
const ML: f64 = 62.0;
const MR: f64 = 12.0;
const MT: f64 = 26.0;
const MB: f64 = 34.0;
/// Snapshots listed at most (the newest).
const MAX_ROWS: usize = 10;
/// Points drawn per series at most (longer series are thinned evenly, keeping the last).
const MAX_POINTS: usize = 600;

/// Escapes text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

/// A number for people: 4 significant digits, or an exponent for very large or small ones.
fn num(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let a = x.abs();
    if (1e4..1e13).contains(&a) {
        let (d, unit) =
            [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")].into_iter().find(|(d, _)| a >= *d).unwrap_or((1.0, ""));
        format!("{}{unit}", num(x / d))
    } else if a != 0.0 && !(1e-3..1e13).contains(&a) {
        format!("{x:.3e}")
    } else if a >= 1000.0 || x == x.trunc() {
        format!("{x:.0}")
    } else {
        let digits = (3 - a.log10().floor() as i32).clamp(0, 6) as usize;
        let s = format!("{x:.digits$}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn bytes(x: f64) -> String {
    match x {
        x if x >= 1e9 => format!("{:.2} GB", x / 1e9),
        x if x >= 1e6 => format!("{:.2} MB", x / 1e6),
        x if x >= 1e3 => format!("{:.1} kB", x / 1e3),
        x => format!("{x:.0} B"),
    }
}

/// Range of the finite values, widened when empty or flat.
fn range(vals: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) =
        vals.filter(|v| v.is_finite()).fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
    if lo > hi {
        (0.0, 1.0)
    } else if lo == hi {
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.05 };
        (lo - pad, hi + pad)
    } else {
        (lo, hi)
    }
}

fn no_data(pw: f64, ph: f64) -> String {
    format!(r#"<text x="{}" y="{}" class="xl muted">no data yet</text>"#, ML + pw / 2.0, MT + ph / 2.0)
}

/// A line chart of `series` (name, points) as inline SVG. Each series is a `polyline` with
/// `class="series"` and `data-name`; short ones also get a marker per point.
pub fn line_chart(title: &str, xlabel: &str, series: &[(String, Vec<(f64, f64)>)]) -> String {
    let (x0, x1) = range(series.iter().flat_map(|s| s.1.iter().map(|p| p.0)));
    let (y0, y1) = range(series.iter().flat_map(|s| s.1.iter().map(|p| p.1)));
    let (pw, ph) = (W - ML - MR, H - MT - MB);
    let sx = |x: f64| ML + (x - x0) / (x1 - x0) * pw;
    let sy = |y: f64| MT + ph - (y - y0) / (y1 - y0) * ph;
    let mut s = format!(
        r#"<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img"><title>{t}</title><text x="{ML}" y="16" class="ct">{t}</text><rect x="{ML}" y="{MT}" width="{pw}" height="{ph}" class="frame"/>"#,
        t = esc(title)
    );
    for i in 0..=4 {
        let f = i as f64 / 4.0;
        let (xv, yv) = (x0 + f * (x1 - x0), y0 + f * (y1 - y0));
        let (x, y) = (sx(xv), sy(yv));
        let _ = write!(
            s,
            r#"<line x1="{ML}" x2="{}" y1="{y:.1}" y2="{y:.1}" class="grid"/><text x="{}" y="{:.1}" class="yt">{}</text><text x="{x:.1}" y="{}" class="xt">{}</text>"#,
            W - MR,
            ML - 4.0,
            y + 4.0,
            num(yv),
            H - MB + 14.0,
            num(xv)
        );
    }
    let _ = write!(s, r#"<text x="{}" y="{}" class="xl">{}</text>"#, ML + pw / 2.0, H - 4.0, esc(xlabel));
    if series.iter().all(|s| s.1.is_empty()) {
        s += &no_data(pw, ph);
    }
    for (i, (name, pts)) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let pts: Vec<&(f64, f64)> = pts.iter().filter(|p| p.0.is_finite() && p.1.is_finite()).collect();
        let step = pts.len().div_ceil(MAX_POINTS).max(1);
        let kept: Vec<&&(f64, f64)> =
            pts.iter().enumerate().filter(|(k, _)| k % step == 0 || *k + 1 == pts.len()).map(|(_, p)| p).collect();
        let coords: Vec<String> = kept.iter().map(|p| format!("{:.1},{:.1}", sx(p.0), sy(p.1))).collect();
        let _ = write!(
            s,
            r#"<polyline class="series" data-name="{}" fill="none" stroke="{color}" stroke-width="1.8" points="{}"/>"#,
            esc(name),
            coords.join(" ")
        );
        if kept.len() <= 40 {
            for p in &kept {
                let _ = write!(s, r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{color}"/>"#, sx(p.0), sy(p.1));
            }
        }
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" fill="{color}" class="lg">{}</text>"#,
            ML + 8.0 + 110.0 * i as f64,
            MT + 14.0,
            esc(name)
        );
    }
    s + "</svg>"
}

/// A bar chart of (label, value) as inline SVG (`rect class="bar"` with `data-label`).
pub fn bar_chart(title: &str, xlabel: &str, bars: &[(String, f64)]) -> String {
    let top = bars.iter().map(|b| b.1).fold(0.0f64, f64::max).max(1.0);
    let (pw, ph) = (W - ML - MR, H - MT - MB);
    let bw = pw / bars.len().max(1) as f64;
    let mut s = format!(
        r#"<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img"><title>{t}</title><text x="{ML}" y="16" class="ct">{t}</text><rect x="{ML}" y="{MT}" width="{pw}" height="{ph}" class="frame"/><text x="{}" y="{}" class="yt">{}</text><text x="{}" y="{}" class="xl">{}</text>"#,
        ML - 4.0,
        MT + 4.0,
        num(top),
        ML + pw / 2.0,
        H - 4.0,
        esc(xlabel),
        t = esc(title)
    );
    if bars.is_empty() {
        s += &no_data(pw, ph);
    }
    for (i, (label, v)) in bars.iter().enumerate() {
        let h = v / top * ph;
        let x = ML + i as f64 * bw;
        let _ = write!(
            s,
            r#"<rect class="bar" data-label="{l}" x="{:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="{}"><title>{l}: {}</title></rect><text x="{:.1}" y="{}" class="xt">{l}</text>"#,
            x + bw * 0.1,
            MT + ph - h,
            bw * 0.8,
            COLORS[0],
            num(*v),
            x + bw / 2.0,
            H - MB + 14.0,
            l = esc(label)
        );
    }
    s + "</svg>"
}

/// Objective series grouped into charts: a held-out value (`test_x`) shares its training value's
/// (`x`) chart; every other name gets its own, as their scales differ.
fn objective_groups(records: &[Value]) -> Vec<Vec<String>> {
    let mut names: Vec<String> = Vec::new();
    for r in records {
        for k in r.as_object().into_iter().flat_map(|o| o.keys()) {
            if !["clock", "time_s", "value"].contains(&k.as_str()) && !names.contains(k) {
                names.push(k.clone());
            }
        }
    }
    let twin_of = |n: &String| n.strip_prefix("test_").filter(|b| names.iter().any(|m| m == b)).map(str::to_string);
    let mut groups: Vec<Vec<String>> = names.iter().filter(|n| twin_of(n).is_none()).map(|n| vec![n.clone()]).collect();
    for n in &names {
        if let Some(base) = twin_of(n) {
            if let Some(g) = groups.iter_mut().find(|g| g[0] == base) {
                g.push(n.clone());
            }
        }
    }
    groups
}

fn series(records: &[Value], x: &str, names: &[String]) -> Vec<(String, Vec<(f64, f64)>)> {
    names
        .iter()
        .map(|n| {
            let pts = records.iter().filter_map(|r| Some((r[x].as_f64()?, r[n.as_str()].as_f64()?))).collect();
            (n.clone(), pts)
        })
        .collect()
}

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:18px;color:#222}h1{font-size:20px}h2{font-size:16px;margin-top:22px}\
table{border-collapse:collapse}td,th{padding:3px 9px;border-bottom:1px solid #ddd;text-align:right}th{background:#f3f3f3}\
.charts{display:flex;flex-wrap:wrap;gap:10px}.chart{border:1px solid #e3e3e3;background:#fff}.frame{fill:none;stroke:#999}\
.grid{stroke:#eee}.ct{font-weight:600;font-size:13px}.yt{font-size:10px;text-anchor:end}.xt{font-size:10px;text-anchor:middle}\
.xl{font-size:11px;text-anchor:middle}.lg{font-size:11px}.bar-outer{width:300px;height:14px;background:#eee;display:inline-block}\
.bar-inner{height:14px;background:#2ca02c;display:block}.failed{color:#b00}.muted{color:#777}";

/// The page for `status` (a `status.json` value). `live`: served by the tracker while the job
/// runs: it refreshes itself and links `status.json`; the final `report.html` does neither.
pub fn render(status: &Value, live: bool) -> String {
    let st = status["status"].as_str().unwrap_or("unknown");
    let running = !matches!(st, "succeeded" | "failed" | "killed");
    let mut h = String::from("<!DOCTYPE html><html><head><meta charset=\"utf-8\">");
    if live && running {
        h += "<meta http-equiv=\"refresh\" content=\"5\">";
    }
    let app = status["app"].as_str().unwrap_or("");
    let _ = write!(h, "<title>{} – {}</title><style>{STYLE}</style></head><body>", esc(app), esc(st));
    let _ = write!(h, "<h1>{}</h1>", esc(app));
    let clock = status["clock"].as_i64();
    let total = status["total_clocks"].as_i64();
    let frac = status["fraction"].as_f64().unwrap_or(0.0);
    let _ = write!(
        h,
        "<p>status <b id=\"job-status\" class=\"{}\">{}</b> · attempt <span id=\"job-attempt\">{}</span> · clock \
         <span id=\"job-clock\">{}</span> of <span id=\"job-total\">{}</span> · {:.1} s elapsed",
        if st == "failed" { "failed" } else { "" },
        esc(st),
        status["attempt"],
        clock.map_or("–".into(), |c| c.to_string()),
        total.map_or("?".into(), |t| t.to_string()),
        status["elapsed_s"].as_f64().unwrap_or(0.0)
    );
    if let Some(eta) = status["eta_s"].as_f64().filter(|_| running) {
        let _ = write!(h, " · ETA <span id=\"job-eta\">{eta:.0}</span> s");
    }
    let _ = write!(
        h,
        "</p><p><span class=\"bar-outer\"><span class=\"bar-inner\" style=\"width:{:.1}%\"></span></span> {:.1}%",
        frac * 100.0,
        frac * 100.0
    );
    if live {
        h += " · <a href=\"status.json\">status.json</a>";
    }
    h += "</p>";
    for (id, why) in status["failures"].as_object().into_iter().flatten() {
        let why = why.as_str().unwrap_or("");
        let _ = write!(h, "<p class=\"failed\" data-process=\"{}\">{}</p>", esc(id), esc(why));
    }

    let records = status["objective"].as_array().cloned().unwrap_or_default();
    h += "<h2>Objective</h2>";
    if let Some(last) = records.last() {
        h += "<p>latest:";
        for (k, v) in last.as_object().into_iter().flatten().filter(|(k, _)| !["time_s", "value"].contains(&k.as_str()))
        {
            let shown = v.as_f64().map_or_else(|| v.to_string(), num);
            let _ = write!(
                h,
                " {} <span class=\"objective-last\" data-name=\"{}\" data-value=\"{v}\">{shown}</span>",
                esc(k),
                esc(k)
            );
        }
        h += "</p><div class=\"charts\">";
        for g in objective_groups(&records) {
            h += &line_chart(&format!("{} by clock", g.join(", ")), "clock", &series(&records, "clock", &g));
        }
        for g in objective_groups(&records) {
            h += &line_chart(&format!("{} over time", g.join(", ")), "seconds", &series(&records, "time_s", &g));
        }
        h += "</div>";
    } else {
        h += "<p class=\"muted\">no evaluation yet</p>";
    }

    h += "<h2>Processes</h2><table><tr><th>process</th><th>clock</th><th>compute s</th><th>wait s</th><th>compute / wait</th><th>sent</th><th>received</th></tr>";
    for p in status["per_process"].as_array().into_iter().flatten() {
        let (c, w) = (p["compute_s"].as_f64().unwrap_or(0.0), p["wait_s"].as_f64().unwrap_or(0.0));
        let cw = if c + w > 0.0 { c / (c + w) * 120.0 } else { 0.0 };
        let _ = write!(
            h,
            "<tr><td>{id}</td><td class=\"proc-clock\" data-process=\"{id}\">{}</td><td>{:.2}</td><td>{:.2}</td>\
             <td><svg width=\"120\" height=\"12\"><rect width=\"{cw:.1}\" height=\"12\" fill=\"{}\"/><rect x=\"{cw:.1}\" \
             width=\"{:.1}\" height=\"12\" fill=\"{}\"/></svg></td><td>{}</td><td>{}</td></tr>",
            p["clock"].as_i64().map_or("–".into(), |c| c.to_string() + if p["done"] == true { " (done)" } else { "" }),
            c,
            w,
            COLORS[2],
            120.0 - cw,
            COLORS[1],
            bytes(p["bytes_sent"].as_f64().unwrap_or(0.0)),
            bytes(p["bytes_recv"].as_f64().unwrap_or(0.0)),
            id = p["process"]
        );
    }
    h += "</table><p class=\"muted\">green: computing, red: waiting for the parameter server (mean per worker thread)</p>";

    h += "<h2>Communication and staleness</h2><div class=\"charts\">";
    let per_clock = status["bytes_per_clock"].as_array().cloned().unwrap_or_default();
    let pts = |k: &str| per_clock.iter().filter_map(|b| Some((b["clock"].as_f64()?, b[k].as_f64()?))).collect();
    h += &line_chart(
        "bytes per clock (all processes)",
        "clock",
        &[("sent".to_string(), pts("sent")), ("received".to_string(), pts("recv"))],
    );
    let bars: Vec<(String, f64)> = status["staleness"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| Some((b["staleness"].as_i64()?.to_string(), b["reads"].as_f64()?)))
        .collect();
    h += &bar_chart("reads by staleness (data age − reader clock)", "staleness", &bars);
    h += "</div>";

    h += "<h2>Snapshots and restarts</h2>";
    let snaps = status["snapshots"].as_array().cloned().unwrap_or_default();
    if snaps.is_empty() {
        h += "<p class=\"muted\">no snapshots</p>";
    } else {
        // The newest ones: a long job with frequent checkpoints has hundreds.
        let shown = &snaps[snaps.len().saturating_sub(MAX_ROWS)..];
        if shown.len() < snaps.len() {
            let _ = write!(h, "<p>{} snapshots; the newest {} are listed</p>", snaps.len(), shown.len());
        }
        h += "<table><tr><th>clock</th><th>processes written</th><th>state</th></tr>";
        for s in shown {
            let state = esc(s["state"].as_str().unwrap_or(""));
            let _ =
                write!(h, "<tr class=\"snapshot\"><td>{}</td><td>{}</td><td>{state}</td></tr>", s["clock"], s["parts"]);
        }
        h += "</table>";
    }
    let restarts = status["restarts"].as_array().cloned().unwrap_or_default();
    if restarts.is_empty() {
        h += "<p class=\"muted\">no restarts</p>";
    } else {
        let _ = write!(h, "<p>{} clocks redone</p><table><tr><th>at s</th><th>what failed</th><th>reached clock</th><th>resumed from clock</th></tr>", status["clocks_redone"]);
        for r in &restarts {
            let _ = write!(
                h,
                "<tr class=\"restart\"><td>{:.1}</td><td style=\"text-align:left\">{}</td><td>{}</td><td>{}</td></tr>",
                r["at_s"].as_f64().unwrap_or(0.0),
                esc(r["failed"].as_str().unwrap_or("")),
                r["reached_clock"],
                r["from_clock"]
            );
        }
        h += "</table>";
    }
    h + "</body></html>\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_page_shows_the_status_numbers_safely() {
        let status = json!({
            "app": "mf <script>", "status": "running", "attempt": 1, "elapsed_s": 3.5, "clock": 7, "total_clocks": 20,
            "fraction": 0.35, "eta_s": 6.5, "failures": {"1": "boom <b>"},
            "objective": [{"clock": 1, "time_s": 1.0, "value": 0.9, "rmse": 0.9, "test_rmse": 1.0},
                          {"clock": 2, "time_s": 2.0, "value": 0.8, "rmse": 0.8, "test_rmse": 0.95}],
            "per_process": [{"process": 0, "clock": 7, "done": false, "compute_s": 1.0, "wait_s": 0.5, "bytes_sent": 2e6, "bytes_recv": 1e3}],
            "bytes_per_clock": [{"clock": 0, "sent": 10, "recv": 5}, {"clock": 1, "sent": 12, "recv": 6}],
            "staleness": [{"staleness": -1, "reads": 30}, {"staleness": -2, "reads": 4}],
            "snapshots": [{"clock": 5, "parts": 2, "state": "committed"}],
            "restarts": [{"failed": "process 1 was killed <x>", "at_s": 2.0, "reached_clock": 6, "from_clock": 5}],
            "clocks_redone": 1
        });
        let page = render(&status, true);
        assert!(page.contains(r#"<span id="job-clock">7</span>"#), "{page}");
        assert!(page.contains(r#"<td class="proc-clock" data-process="0">7</td>"#));
        assert!(page.contains(r#"data-name="rmse" data-value="0.8">0.8</span>"#), "{page}");
        assert!(page.contains(r#"<meta http-equiv="refresh""#) && page.contains(r#"href="status.json""#));
        // One chart for rmse with its held-out twin, by clock and over time.
        assert_eq!(page.matches(r#"data-name="test_rmse" fill="none""#).count(), 2);
        assert!(page.contains("rmse, test_rmse by clock"));
        assert_eq!(page.matches(r#"class="bar""#).count(), 2);
        // Text from processes and the command line is escaped; no absolute link or script.
        assert!(!page.contains("<script>") && !page.contains("<b>") && !page.contains("<x>"));
        assert!(!page.contains("href=\"/") && !page.contains("src="));
        // The final report neither refreshes nor links status.json.
        let mut done = status.clone();
        done["status"] = json!("succeeded");
        let report = render(&done, false);
        assert!(!report.contains("refresh") && !report.contains("status.json"));
        assert!(!report.contains("job-eta"));
    }

    #[test]
    fn charts_place_every_point_inside_the_plot() {
        let pts: Vec<(f64, f64)> = (0..2000).map(|i| (i as f64, (i as f64).sin())).collect();
        let svg = line_chart("t", "x", &[("a".into(), pts), ("flat".into(), vec![(3.0, 1.0)])]);
        let polylines: Vec<&str> = svg.split("points=\"").skip(1).map(|s| s.split('"').next().unwrap()).collect();
        assert_eq!(polylines.len(), 2);
        let first: Vec<(f64, f64)> = polylines[0]
            .split(' ')
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect();
        assert!(first.len() <= MAX_POINTS + 1 && first.len() >= MAX_POINTS / 2, "{}", first.len());
        for (x, y) in first {
            assert!((ML - 0.1..=W - MR + 0.1).contains(&x) && (MT - 0.1..=H - MB + 0.1).contains(&y), "{x},{y}");
        }
        assert_eq!(num(0.012345), "0.01235");
        assert_eq!(num(0.25), "0.25");
        assert_eq!(num(3117624.0), "3.118M");
        assert_eq!(num(9999.0), "9999");
        assert_eq!(num(12.0), "12");
        assert_eq!(num(1.5e-7), "1.500e-7");
        assert_eq!(objective_groups(&[json!({"clock": 1, "loglik": 1, "loglik_per_token": 2})]).len(), 2);
    }
}
