//! Who the client is: its address behind trusted reverse proxies (`X-Forwarded-For`), and the key under which
//! login throttling counts an address (an IPv6 client by its /64, which one subscriber usually holds whole).

use std::{
    net::{IpAddr, Ipv6Addr},
    str::FromStr,
};

use axum::http::HeaderMap;
use ipnet::IpNet;

/// The networks of the reverse proxies in front of the server (`--trusted-proxies`). Only a peer inside one of
/// them is believed about the client's address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl FromStr for TrustedProxies {
    type Err = String;

    /// A comma-separated list of CIDR ranges or single addresses: `10.0.0.0/8,fd00::/8,127.0.0.1`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let nets = s
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| match p.parse::<IpAddr>() {
                Ok(addr) => Ok(IpNet::from(canonical(addr))),
                Err(_) => {
                    p.parse::<IpNet>().map(|n| n.trunc()).map_err(|_| format!("{p:?} is not a CIDR range or address"))
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(TrustedProxies(nets))
    }
}

impl TrustedProxies {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn trusts(&self, addr: IpAddr) -> bool {
        self.0.iter().any(|n| n.contains(&addr))
    }

    /// The client's address for a request from `peer`. When the peer is a trusted proxy, the `X-Forwarded-For`
    /// chain is read from its end (the entry the nearest proxy wrote) towards its start, skipping trusted
    /// proxies: the first address that is not one is the client. An entry that is not an address stops the walk
    /// (whoever wrote it is not believed) and the last address believed is the client. Anyone else's
    /// `X-Forwarded-For` is ignored, so a client cannot choose the address it is counted under.
    pub fn client_addr(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let mut client = canonical(peer);
        if !self.trusts(client) {
            return client;
        }
        let hops: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect();
        for hop in hops.iter().rev() {
            let Some(addr) = parse_hop(hop) else { break };
            client = addr;
            if !self.trusts(addr) {
                break;
            }
        }
        client
    }
}

/// An `X-Forwarded-For` entry: an address, possibly with a port (`1.2.3.4:5678`, `[2001:db8::1]:443`).
fn parse_hop(hop: &str) -> Option<IpAddr> {
    if let Ok(addr) = hop.parse::<IpAddr>() {
        return Some(canonical(addr));
    }
    let host = match hop.strip_prefix('[') {
        Some(rest) => rest.split_once(']')?.0,
        None => hop.rsplit_once(':')?.0,
    };
    host.parse::<IpAddr>().ok().map(canonical)
}

/// An IPv4 address written as IPv6 (`::ffff:1.2.3.4`) is that IPv4 address.
fn canonical(addr: IpAddr) -> IpAddr {
    addr.to_canonical()
}

/// The key login throttling counts an address under: an IPv4 address as it is, an IPv6 address by its /64.
pub fn throttle_key(addr: IpAddr) -> IpAddr {
    match canonical(addr) {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(bits))
        }
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(xff: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in xff {
            h.append("x-forwarded-for", v.parse().unwrap());
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn forwarded_addresses_are_believed_only_from_trusted_proxies() {
        let trusted: TrustedProxies = "10.0.0.0/8, fd00::/8,192.0.2.1".parse().unwrap();
        let xff = headers(&["198.51.100.9, 203.0.113.7", "10.1.1.1"]);
        // From a trusted proxy: skip trusted hops from the right, take the first other one.
        assert_eq!(trusted.client_addr(ip("10.0.0.1"), &xff), ip("203.0.113.7"));
        assert_eq!(trusted.client_addr(ip("::ffff:10.0.0.1"), &xff), ip("203.0.113.7"));
        // From anyone else: the peer, whatever the header says.
        assert_eq!(trusted.client_addr(ip("198.51.100.1"), &xff), ip("198.51.100.1"));
        assert_eq!(TrustedProxies::default().client_addr(ip("10.0.0.1"), &xff), ip("10.0.0.1"));
        // No header: the proxy itself. Only trusted hops: the leftmost.
        assert_eq!(trusted.client_addr(ip("10.0.0.1"), &HeaderMap::new()), ip("10.0.0.1"));
        assert_eq!(trusted.client_addr(ip("10.0.0.1"), &headers(&["10.9.9.9, 192.0.2.1"])), ip("10.9.9.9"));
        // Ports and brackets; garbage stops the walk at the last address believed.
        assert_eq!(trusted.client_addr(ip("10.0.0.1"), &headers(&["[2001:db8::5]:443"])), ip("2001:db8::5"));
        assert_eq!(trusted.client_addr(ip("10.0.0.1"), &headers(&["203.0.113.7:1234"])), ip("203.0.113.7"));
        assert_eq!(trusted.client_addr(ip("10.0.0.1"), &headers(&["1.2.3.4, junk, 10.2.2.2"])), ip("10.2.2.2"));
        assert!("10.0.0.0/33".parse::<TrustedProxies>().is_err());
        assert!("proxy.example".parse::<TrustedProxies>().is_err());
        assert!("".parse::<TrustedProxies>().unwrap().is_empty());
    }

    #[test]
    fn ipv6_clients_are_counted_by_their_64() {
        assert_eq!(throttle_key(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_eq!(throttle_key(ip("2001:db8:1:2:ffff::9")), ip("2001:db8:1:2::"));
        assert_ne!(throttle_key(ip("2001:db8:1:3::1")), ip("2001:db8:1:2::"));
        assert_eq!(throttle_key(ip("203.0.113.7")), ip("203.0.113.7"));
        assert_eq!(throttle_key(ip("::ffff:203.0.113.7")), ip("203.0.113.7"));
    }
}
