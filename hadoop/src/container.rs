//! YARN container ids as the NodeManager hands them to a container (`CONTAINER_ID`):
//! `container_[e<epoch>_]<clusterTs>_<appId>_<attempt>_<id>`.

/// The application id (`application_<cluster ts>_<nnnn>`) of a container id string such as
/// `container_1410901177871_0001_01_000005` or `container_e17_1410901177871_0001_01_000005`
/// (the `CONTAINER_ID` every YARN container gets).
pub fn application_of(container_id: &str) -> Option<String> {
    let f = fields(container_id)?;
    Some(format!("application_{}_{}", f[0], f[1]))
}

/// The application attempt (1 for the first) of a container id string.
pub fn attempt_of(container_id: &str) -> Option<u32> {
    fields(container_id)?[2].parse().ok()
}

/// Cluster timestamp, application, attempt and container numbers of a container id string.
fn fields(container_id: &str) -> Option<[&str; 4]> {
    let rest = container_id.strip_prefix("container_")?;
    let f: Vec<&str> = rest.split('_').collect();
    let f = match f.as_slice() {
        [e, rest @ ..] if e.starts_with('e') && rest.len() == 4 => rest,
        all if all.len() == 4 => all,
        _ => return None,
    };
    let ok = f.iter().all(|x| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit()));
    ok.then(|| [f[0], f[1], f[2], f[3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn application_of_container_ids() {
        let app = application_of;
        assert_eq!(app("container_1410901177871_0001_01_000005").as_deref(), Some("application_1410901177871_0001"));
        assert_eq!(
            app("container_e17_1410901177871_0012_01_000005").as_deref(),
            Some("application_1410901177871_0012")
        );
        for bad in ["", "container_", "application_1_0001", "container_1_2_3", "container_x_1_1_1", "container_1__1_1"]
        {
            assert_eq!(app(bad), None, "{bad}");
            assert_eq!(attempt_of(bad), None, "{bad}");
        }
        assert_eq!(attempt_of("container_e17_1410901177871_0012_02_000001"), Some(2));
        assert_eq!(attempt_of("container_1410901177871_0001_01_000005"), Some(1));
    }
}
