//! Who a request comes from, for fairness between clients: the network of the peer address
//! (an IPv4 /24, an IPv6 /56) or, when the peer is a trusted proxy, of the first hop in
//! `X-Forwarded-For` (counted from the right) that is not a trusted proxy itself.

use axum::extract::ConnectInfo;
use ipnet::IpNet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// The client of a request: its peer's address (loopback when the connection has none), or
/// behind a trusted proxy the one `X-Forwarded-For` names ([`client_addr`]).
pub fn of_request<B>(request: &axum::http::Request<B>, trusted: &[IpNet]) -> IpAddr {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(Ipv4Addr::LOCALHOST.into(), |c| c.0.ip());
    let forwarded = request
        .headers()
        .get("x-forwarded-for")
        .and_then(|v| v.to_str().ok());
    client_addr(peer, forwarded, trusted)
}

/// The client's address as far as it can be trusted.
pub fn client_addr(peer: IpAddr, forwarded_for: Option<&str>, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    let Some(header) = forwarded_for else {
        return peer;
    };
    let mut nearest = peer;
    for hop in header.rsplit(',') {
        let Ok(ip) = hop.trim().parse::<IpAddr>() else {
            // A hop we cannot read: the trusted hop before it is as far as we can see.
            return nearest;
        };
        if !is_trusted(&ip) {
            return ip;
        }
        nearest = ip;
    }
    nearest
}

/// A key shared by every address of the client's network.
pub fn client_key(addr: IpAddr) -> u64 {
    let network = match addr.to_canonical() {
        IpAddr::V4(v4) => u128::from(u32::from(v4) >> 8),
        IpAddr::V6(v6) => (u128::from(v6) >> 72) | (1 << 100),
    };
    let mut h = DefaultHasher::new();
    network.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn networks_share_a_key() {
        assert_eq!(client_key(ip("192.0.2.1")), client_key(ip("192.0.2.254")));
        assert_ne!(client_key(ip("192.0.2.1")), client_key(ip("192.0.3.1")));
        assert_eq!(
            client_key(ip("2001:db8:0:ab::1")),
            client_key(ip("2001:db8:0:ff:1::2"))
        );
        assert_ne!(
            client_key(ip("2001:db8:0:100::1")),
            client_key(ip("2001:db8:0:ff::1"))
        );
        assert_eq!(
            client_key(ip("::ffff:192.0.2.1")),
            client_key(ip("192.0.2.9"))
        );
    }

    #[test]
    fn forwarded_for_counts_only_behind_trusted_proxies() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let xff = Some("198.51.100.7, 203.0.113.5, 10.1.1.1");
        assert_eq!(client_addr(ip("192.0.2.1"), xff, &trusted), ip("192.0.2.1"));
        assert_eq!(
            client_addr(ip("10.0.0.2"), xff, &trusted),
            ip("203.0.113.5")
        );
        assert_eq!(client_addr(ip("10.0.0.2"), None, &trusted), ip("10.0.0.2"));
        assert_eq!(
            client_addr(ip("10.0.0.2"), Some("junk, 10.2.2.2"), &trusted),
            ip("10.2.2.2")
        );
        assert_eq!(
            client_addr(ip("10.0.0.2"), Some("10.3.3.3"), &trusted),
            ip("10.3.3.3")
        );
    }
}
