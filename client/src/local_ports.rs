//! Listening ports for the processes of a local job.
//!
//! The launcher picks the ports and writes them into the hostfile before the processes start,
//! so between the pick and each process's `bind` a port is free for anyone to take. A port from
//! the kernel's ephemeral range (`net.ipv4.ip_local_port_range`, where `bind(0)` picks) can be
//! handed in that window to any outgoing connection on the machine, which CI saw as "Address
//! already in use" while other jobs ran beside it. The kernel never assigns a port below that
//! range on its own, so the ports come from there, at a random offset, so that launchers starting
//! together rarely probe the same ports.

use rand::Rng;
use std::net::TcpListener;

/// Ports below this are left alone (well-known and commonly configured services).
const LOWEST: u16 = 10_000;

/// The kernel's ephemeral range on Linux, if readable.
fn ephemeral_range() -> Option<(u16, u16)> {
    let s = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = s.split_whitespace().map(|x| x.parse::<u16>().ok());
    Some((it.next()??, it.next()??))
}

/// Picks `n` distinct free loopback ports, holding each bound until all are found.
pub fn free_ports(n: usize) -> std::io::Result<Vec<u16>> {
    let span = match ephemeral_range() {
        Some((first, _)) if first > LOWEST + 1_000 => LOWEST..first,
        // No room below the range (or not Linux): the kernel's choice, as before.
        _ => return bind_any(n),
    };
    let len = u32::from(span.end - span.start);
    let start = rand::thread_rng().gen_range(0..len);
    let mut held = Vec::with_capacity(n);
    for i in 0..len {
        if held.len() == n {
            break;
        }
        let port = span.start + ((start + i) % len) as u16;
        if let Ok(l) = TcpListener::bind(("127.0.0.1", port)) {
            held.push(l);
        }
    }
    if held.len() < n {
        return bind_any(n);
    }
    held.iter().map(|l| l.local_addr().map(|a| a.port())).collect()
}

/// `n` ports the kernel picks (from the ephemeral range), bound all at once so they differ.
fn bind_any(n: usize) -> std::io::Result<Vec<u16>> {
    let ls: Vec<_> = (0..n).map(|_| TcpListener::bind("127.0.0.1:0")).collect::<Result<_, _>>()?;
    ls.iter().map(|l| l.local_addr().map(|a| a.port())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_distinct_free_and_outside_the_ephemeral_range() {
        let ports = free_ports(16).unwrap();
        let mut sorted = ports.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 16, "{ports:?}");
        if let Some((first, last)) = ephemeral_range().filter(|r| r.0 > LOWEST + 1_000) {
            assert!(ports.iter().all(|&p| (LOWEST..first).contains(&p) && !(first..=last).contains(&p)), "{ports:?}");
        }
        // Released: a process can bind each of them.
        for p in ports {
            TcpListener::bind(("127.0.0.1", p)).unwrap_or_else(|e| panic!("port {p}: {e}"));
        }
    }
}
